package deploy

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/snapq/snapq/capture"
	"github.com/snapq/snapq/jobs"
)

// k8sDir holds the manifests; kustomization.yaml lists them.
const k8sDir = "k8s"

// Names the manifests use for each other.
const (
	apiName       = "snapq-api"
	workerName    = "snapq-worker"
	configMapName = "snapq-config"
	secretName    = "snapq-secrets"
)

// Resources a worker needs per tab (SNAPQ_WORKER_CONCURRENCY), plus once for
// the worker process and Chromium's browser process.
var (
	cpuPerTab     = resource.MustParse("500m")
	memoryPerTab  = resource.MustParse("512Mi")
	cpuPerWorker  = resource.MustParse("250m")
	memPerWorker  = resource.MustParse("256Mi")
	minShmSize    = resource.MustParse("1Gi") // deploy/worker.Dockerfile asks for 1 GiB
	apiHTTPDrain  = 15 * time.Second          // cmd/api listenAndServe's drain of requests in progress
	composeFile   = filepath.Join("..", "docker-compose.yml")
	variableFiles = []string{ // where SNAPQ_* variables are read
		filepath.Join("..", "cmd", "api", "config.go"),
		filepath.Join("..", "cmd", "worker", "config.go"),
		filepath.Join("..", "cmd", "internal", "env", "config.go"),
	}
	// credentials must be in the Secret, never in the ConfigMap.
	credentials = []string{"SNAPQ_DATABASE_URL", "SNAPQ_REDIS_URL", "SNAPQ_S3_ACCESS_KEY", "SNAPQ_S3_SECRET_KEY"}
)

// kustomization is the part of kustomize's Kustomization these manifests
// use; decoding it strictly fails on any other field.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Namespace  string   `json:"namespace"`
	Labels     []label  `json:"labels"`
	Resources  []string `json:"resources"`
	Images     []image  `json:"images"`
}

type label struct {
	Pairs map[string]string `json:"pairs"`
}

type image struct {
	Name    string `json:"name"`
	NewName string `json:"newName"`
	NewTag  string `json:"newTag"`
}

// scaledObject is the part of KEDA's keda.sh/v1alpha1 ScaledObject these
// manifests use, field names as KEDA's CRD spells them.
type scaledObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              scaledObjectSpec `json:"spec"`
}

type scaledObjectSpec struct {
	ScaleTargetRef  scaleTarget     `json:"scaleTargetRef"`
	MinReplicaCount *int32          `json:"minReplicaCount"`
	MaxReplicaCount *int32          `json:"maxReplicaCount"`
	PollingInterval *int32          `json:"pollingInterval"`
	CooldownPeriod  *int32          `json:"cooldownPeriod"`
	Advanced        *advancedConfig `json:"advanced"`
	Fallback        *fallback       `json:"fallback"`
	Triggers        []trigger       `json:"triggers"`
}

type scaleTarget struct {
	Name string `json:"name"`
}

type advancedConfig struct {
	HorizontalPodAutoscalerConfig *struct {
		Behavior *autoscalingv2.HorizontalPodAutoscalerBehavior `json:"behavior"`
	} `json:"horizontalPodAutoscalerConfig"`
}

type fallback struct {
	FailureThreshold int32 `json:"failureThreshold"`
	Replicas         int32 `json:"replicas"`
}

type trigger struct {
	Type     string            `json:"type"`
	Metadata map[string]string `json:"metadata"`
}

// manifests is every object kustomization.yaml lists, decoded.
type manifests struct {
	kust       kustomization
	namespaces []*corev1.Namespace
	configMaps []*corev1.ConfigMap
	secrets    []*corev1.Secret
	deploys    []*appsv1.Deployment
	services   []*corev1.Service
	pdbs       []*policyv1.PodDisruptionBudget
	scalers    []*scaledObject
}

// decodeStrict decodes one YAML document into a new T, failing on unknown or
// duplicated fields.
func decodeStrict[T any](data []byte) (*T, error) {
	v := new(T)
	if err := yaml.UnmarshalStrict(data, v); err != nil {
		return nil, err
	}
	return v, nil
}

// decodeInto decodes data strictly and appends it to list.
func decodeInto[T any](list *[]*T, data []byte) error {
	v, err := decodeStrict[T](data)
	if err == nil {
		*list = append(*list, v)
	}
	return err
}

// decode decodes one manifest by its apiVersion and kind; any other kind is
// an error, so a new manifest needs a type here.
func (m *manifests) decode(data []byte) error {
	if docs := bytes.Split(data, []byte("\n---")); len(docs) > 1 {
		return fmt.Errorf("%d YAML documents: keep one object per file", len(docs))
	}
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(data, &tm); err != nil {
		return err
	}
	switch tm.APIVersion + " " + tm.Kind {
	case "v1 Namespace":
		return decodeInto(&m.namespaces, data)
	case "v1 ConfigMap":
		return decodeInto(&m.configMaps, data)
	case "v1 Secret":
		return decodeInto(&m.secrets, data)
	case "v1 Service":
		return decodeInto(&m.services, data)
	case "apps/v1 Deployment":
		return decodeInto(&m.deploys, data)
	case "policy/v1 PodDisruptionBudget":
		return decodeInto(&m.pdbs, data)
	case "keda.sh/v1alpha1 ScaledObject":
		return decodeInto(&m.scalers, data)
	}
	return fmt.Errorf("unexpected apiVersion %q kind %q", tm.APIVersion, tm.Kind)
}

// load reads kustomization.yaml and every resource it lists.
func load(t *testing.T) *manifests {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(k8sDir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	kust, err := decodeStrict[kustomization](data)
	if err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	m := &manifests{kust: *kust}
	for _, name := range kust.Resources {
		data, err := os.ReadFile(filepath.Join(k8sDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := m.decode(data); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	return m
}

// named finds the object called name in list.
func named[T any](t *testing.T, list []*T, name string, meta func(*T) metav1.ObjectMeta) *T {
	t.Helper()
	for _, v := range list {
		if meta(v).Name == name {
			return v
		}
	}
	var zero T
	t.Fatalf("no %T named %q in the manifests", zero, name)
	return nil
}

func (m *manifests) deployment(t *testing.T, name string) *appsv1.Deployment {
	t.Helper()
	return named(t, m.deploys, name, func(d *appsv1.Deployment) metav1.ObjectMeta { return d.ObjectMeta })
}

func (m *manifests) configMap(t *testing.T) *corev1.ConfigMap {
	t.Helper()
	return named(t, m.configMaps, configMapName, func(c *corev1.ConfigMap) metav1.ObjectMeta { return c.ObjectMeta })
}

func (m *manifests) secret(t *testing.T) *corev1.Secret {
	t.Helper()
	return named(t, m.secrets, secretName, func(s *corev1.Secret) metav1.ObjectMeta { return s.ObjectMeta })
}

func (m *manifests) scaler(t *testing.T) *scaledObject {
	t.Helper()
	return named(t, m.scalers, workerName, func(s *scaledObject) metav1.ObjectMeta { return s.ObjectMeta })
}

// container is the one container of d's pods.
func container(t *testing.T, d *appsv1.Deployment) corev1.Container {
	t.Helper()
	cs := d.Spec.Template.Spec.Containers
	if len(cs) != 1 {
		t.Fatalf("%s: %d containers, want 1", d.Name, len(cs))
	}
	return cs[0]
}

// show prints an optional number, or "unset".
func show[N int | int32 | int64](p *N) string {
	if p == nil {
		return "unset"
	}
	return strconv.FormatInt(int64(*p), 10)
}

// configDuration parses a duration from the ConfigMap.
func configDuration(t *testing.T, cm *corev1.ConfigMap, name string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(cm.Data[name])
	if err != nil {
		t.Fatalf("%s in %s: %v", name, cm.Name, err)
	}
	return d
}

// configInt parses a whole number from the ConfigMap.
func configInt(t *testing.T, cm *corev1.ConfigMap, name string) int {
	t.Helper()
	n, err := strconv.Atoi(cm.Data[name])
	if err != nil {
		t.Fatalf("%s in %s: %v", name, cm.Name, err)
	}
	return n
}

// longestTask is the longest a task can hold a worker slot: asynq cancels a
// capture task at its job's timeout + jobs.TaskSlack (queue/asynq.go), and the
// longest timeout a job may ask for is jobs.MaxJobTimeout.
func longestTask(t *testing.T) time.Duration {
	t.Helper()
	// The capture itself ends within timeout + CaptureGrace: inside the slack.
	if capture.CaptureGrace(jobs.MaxJobTimeout) > jobs.TaskSlack {
		t.Fatalf("capture grace %v of a %v job exceeds the task slack %v", capture.CaptureGrace(jobs.MaxJobTimeout), jobs.MaxJobTimeout, jobs.TaskSlack)
	}
	return jobs.MaxJobTimeout + jobs.TaskSlack
}

func TestKustomizationListsEveryManifest(t *testing.T) {
	t.Parallel()
	m := load(t)
	files, err := filepath.Glob(filepath.Join(k8sDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, f := range files {
		if base := filepath.Base(f); base != "kustomization.yaml" {
			want = append(want, base)
		}
	}
	got := slices.Sorted(slices.Values(m.kust.Resources))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("kustomization.yaml resources differ from the files in %s (-want +got):\n%s", k8sDir, diff)
	}
	if m.kust.APIVersion != "kustomize.config.k8s.io/v1beta1" || m.kust.Kind != "Kustomization" {
		t.Errorf("kustomization.yaml is %s %s", m.kust.APIVersion, m.kust.Kind)
	}
	ns := named(t, m.namespaces, m.kust.Namespace, func(n *corev1.Namespace) metav1.ObjectMeta { return n.ObjectMeta })
	if got := ns.Labels["pod-security.kubernetes.io/enforce"]; got != "restricted" {
		t.Errorf("namespace %s enforces Pod Security %q, want restricted", ns.Name, got)
	}
}

func TestDecodingIsStrict(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		yaml string
	}{
		{name: "unknown field", yaml: "apiVersion: apps/v1\nkind: Deployment\nspec:\n  replica: 2\n"},
		{name: "duplicate field", yaml: "apiVersion: v1\nkind: ConfigMap\ndata: {}\ndata: {}\n"},
		{name: "unknown ScaledObject field", yaml: "apiVersion: keda.sh/v1alpha1\nkind: ScaledObject\nspec:\n  cooldown: 300\n"},
		{name: "unknown kind", yaml: "apiVersion: batch/v1\nkind: CronJob\n"},
		{name: "two documents", yaml: "apiVersion: v1\nkind: ConfigMap\n---\napiVersion: v1\nkind: Secret\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if err := new(manifests).decode([]byte(tt.yaml)); err == nil {
				t.Errorf("decoded without error:\n%s", tt.yaml)
			}
		})
	}
	if _, err := decodeStrict[kustomization]([]byte("resources: []\npatches: []\n")); err == nil {
		t.Error("kustomization with an unchecked field (patches) decoded without error")
	}
}

// variablesRead lists the SNAPQ_* variables the binaries read.
func variablesRead(t *testing.T) []string {
	t.Helper()
	re := regexp.MustCompile(`"(SNAPQ_[A-Z0-9_]+)"`)
	var names []string
	for _, f := range variableFiles {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllSubmatch(src, -1) {
			names = append(names, string(m[1]))
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	if !slices.Contains(names, "SNAPQ_SHUTDOWN_TIMEOUT") {
		t.Fatalf("found %d variables in %v, not SNAPQ_SHUTDOWN_TIMEOUT: has the configuration moved?", len(names), variableFiles)
	}
	return names
}

func TestEveryVariableConfigured(t *testing.T) {
	t.Parallel()
	m := load(t)
	cm, sec := m.configMap(t), m.secret(t)
	var configured []string
	for name := range cm.Data {
		configured = append(configured, name)
	}
	for name := range sec.StringData {
		if _, dup := cm.Data[name]; dup {
			t.Errorf("%s is in both %s and %s", name, cm.Name, sec.Name)
		}
		configured = append(configured, name)
	}
	if len(sec.Data) > 0 {
		t.Errorf("%s uses data; keep its values in stringData", sec.Name)
	}
	slices.Sort(configured)
	if diff := cmp.Diff(variablesRead(t), configured); diff != "" {
		t.Errorf("ConfigMap + Secret differ from the SNAPQ_* variables the binaries read (-want +got):\n%s", diff)
	}
	for _, name := range credentials {
		if _, ok := sec.StringData[name]; !ok {
			t.Errorf("credential %s is not in %s", name, sec.Name)
		}
	}
	if got := cm.Data["SNAPQ_AUTH"]; got != "on" {
		t.Errorf("SNAPQ_AUTH=%q, want on: the api listens on the pod network", got)
	}
	for _, name := range []string{apiName, workerName} {
		c := container(t, m.deployment(t, name))
		var from []string
		for _, e := range c.EnvFrom {
			switch {
			case e.ConfigMapRef != nil:
				from = append(from, "configmap/"+e.ConfigMapRef.Name)
			case e.SecretRef != nil:
				from = append(from, "secret/"+e.SecretRef.Name)
			}
		}
		if diff := cmp.Diff([]string{"configmap/" + configMapName, "secret/" + secretName}, from); diff != "" {
			t.Errorf("%s envFrom (-want +got):\n%s", name, diff)
		}
		for _, e := range c.Env {
			if strings.HasPrefix(e.Name, "SNAPQ_") {
				t.Errorf("%s sets %s itself; keep every SNAPQ_* variable in the ConfigMap or Secret", name, e.Name)
			}
		}
	}
}

func TestWorkerDrainOutlastsLongestTask(t *testing.T) {
	t.Parallel()
	m := load(t)
	budget := longestTask(t)
	shutdown := configDuration(t, m.configMap(t), "SNAPQ_SHUTDOWN_TIMEOUT")
	worker := m.deployment(t, workerName)
	if worker.Spec.Template.Spec.TerminationGracePeriodSeconds == nil {
		t.Fatal("worker has no terminationGracePeriodSeconds (the default 30 s is shorter than a job)")
	}
	grace := time.Duration(*worker.Spec.Template.Spec.TerminationGracePeriodSeconds) * time.Second
	if !(grace > shutdown && shutdown > budget) {
		t.Errorf("want terminationGracePeriodSeconds (%v) > SNAPQ_SHUTDOWN_TIMEOUT (%v) > longest task (%v)", grace, shutdown, budget)
	}
	if min := jobs.MaxJobTimeout + capture.MaxCaptureGrace; shutdown < min {
		t.Errorf("SNAPQ_SHUTDOWN_TIMEOUT %v < longest capture %v", shutdown, min)
	}
}

func TestWorkerPod(t *testing.T) {
	t.Parallel()
	m := load(t)
	cm := m.configMap(t)
	worker := m.deployment(t, workerName)
	pod := worker.Spec.Template.Spec
	c := container(t, worker)

	if worker.Spec.Replicas != nil {
		t.Errorf("worker sets replicas: %d; KEDA owns the count (kubectl apply would reset it)", *worker.Spec.Replicas)
	}
	if !strings.Contains(c.Image, "snapq-worker") {
		t.Errorf("worker image %q is not the Chromium image snapq-worker", c.Image)
	}

	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, vm := range c.VolumeMounts {
		mounts[vm.MountPath] = vm
		if _, ok := volumes[vm.Name]; !ok {
			t.Errorf("mount %s names no volume %q", vm.MountPath, vm.Name)
		}
	}
	shmMount, ok := mounts["/dev/shm"]
	if !ok {
		t.Fatal("/dev/shm is not mounted")
	}
	shm := volumes[shmMount.Name].EmptyDir
	if shm == nil || shm.Medium != corev1.StorageMediumMemory {
		t.Fatalf("/dev/shm volume %q is not a memory emptyDir", shmMount.Name)
	}
	if shm.SizeLimit == nil || shm.SizeLimit.Cmp(minShmSize) < 0 {
		t.Errorf("/dev/shm sizeLimit %v, want at least %v", shm.SizeLimit, minShmSize.String())
	}
	if shmMount.ReadOnly {
		t.Error("/dev/shm is mounted read-only")
	}
	if c.SecurityContext != nil && c.SecurityContext.ReadOnlyRootFilesystem != nil && *c.SecurityContext.ReadOnlyRootFilesystem {
		// Chromium's profiles and rod's leakless helper live in os.TempDir().
		if tmp, ok := mounts["/tmp"]; !ok || tmp.ReadOnly {
			t.Error("read-only root filesystem without a writable /tmp")
		}
	}

	tabs := configInt(t, cm, "SNAPQ_WORKER_CONCURRENCY")
	if tabs < 1 || tabs > 64 {
		t.Fatalf("SNAPQ_WORKER_CONCURRENCY=%d: want 1 to 64", tabs)
	}
	if jobsInFlight := configInt(t, cm, "SNAPQ_WORKER_JOBS"); jobsInFlight < tabs {
		t.Errorf("SNAPQ_WORKER_JOBS=%d < SNAPQ_WORKER_CONCURRENCY=%d", jobsInFlight, tabs)
	}
	wantCPU, wantMem := cpuPerWorker.DeepCopy(), memPerWorker.DeepCopy()
	for range tabs {
		wantCPU.Add(cpuPerTab)
		wantMem.Add(memoryPerTab)
	}
	req, lim := c.Resources.Requests, c.Resources.Limits
	if got := req[corev1.ResourceCPU]; got.Cmp(wantCPU) < 0 {
		t.Errorf("cpu request %s < %s for %d tabs", got.String(), wantCPU.String(), tabs)
	}
	if got := req[corev1.ResourceMemory]; got.Cmp(wantMem) < 0 {
		t.Errorf("memory request %s < %s for %d tabs", got.String(), wantMem.String(), tabs)
	}
	// A memory emptyDir is charged to the container's memory.
	memLimit, ok := lim[corev1.ResourceMemory]
	needed := req[corev1.ResourceMemory]
	needed.Add(*shm.SizeLimit)
	if !ok || memLimit.Cmp(needed) < 0 {
		t.Errorf("memory limit %s < request + /dev/shm %s", memLimit.String(), needed.String())
	}
}

func TestNoRoot(t *testing.T) {
	t.Parallel()
	m := load(t)
	for _, d := range m.deploys {
		t.Run(d.Name, func(t *testing.T) {
			pod := d.Spec.Template.Spec
			psc := pod.SecurityContext
			if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
				t.Error("pod securityContext.runAsNonRoot is not true")
			}
			if psc == nil || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
				t.Error("pod securityContext.runAsUser is unset or 0")
			}
			// The worker's Chromium needs its own profile to build its sandbox (seccomp_test.go).
			wantSeccomp := corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
			if d.Name == workerName {
				wantSeccomp = workerSeccomp
			}
			if psc == nil || psc.SeccompProfile == nil || !reflect.DeepEqual(*psc.SeccompProfile, wantSeccomp) {
				t.Errorf("pod seccompProfile is not %s %v", wantSeccomp.Type, wantSeccomp.LocalhostProfile)
			}
			if pod.HostNetwork || pod.HostPID || pod.HostIPC {
				t.Error("pod shares a host namespace")
			}
			if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
				t.Error("pod mounts a service account token it does not use")
			}
			for _, c := range slices.Concat(pod.InitContainers, pod.Containers) {
				sc := c.SecurityContext
				switch {
				case sc == nil:
					t.Errorf("container %s has no securityContext", c.Name)
					continue
				case sc.RunAsUser != nil && *sc.RunAsUser == 0:
					t.Errorf("container %s runs as user 0", c.Name)
				case sc.RunAsNonRoot != nil && !*sc.RunAsNonRoot:
					t.Errorf("container %s overrides runAsNonRoot", c.Name)
				case sc.Privileged != nil && *sc.Privileged:
					t.Errorf("container %s is privileged", c.Name)
				case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
					t.Errorf("container %s allows privilege escalation", c.Name)
				case sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) > 0:
					t.Errorf("container %s does not drop all capabilities", c.Name)
				}
			}
		})
	}
}

func TestSelectorsMatchPods(t *testing.T) {
	t.Parallel()
	m := load(t)
	matches := func(selector, labels map[string]string) bool {
		for k, v := range selector {
			if labels[k] != v {
				return false
			}
		}
		return len(selector) > 0
	}
	for _, d := range m.deploys {
		if d.Spec.Selector == nil || !matches(d.Spec.Selector.MatchLabels, d.Spec.Template.Labels) {
			t.Errorf("deployment %s: selector does not match its pod labels", d.Name)
		}
	}
	api := m.deployment(t, apiName)
	svc := named(t, m.services, apiName, func(s *corev1.Service) metav1.ObjectMeta { return s.ObjectMeta })
	if !matches(svc.Spec.Selector, api.Spec.Template.Labels) {
		t.Errorf("service %s does not select the api pods", svc.Name)
	}
	ports := map[string]bool{}
	for _, p := range container(t, api).Ports {
		ports[p.Name] = true
	}
	for _, p := range svc.Spec.Ports {
		if p.TargetPort.Type != intstr.String || !ports[p.TargetPort.StrVal] {
			t.Errorf("service port %s targets %s, not a named api port", p.Name, p.TargetPort.String())
		}
	}
	pdb := named(t, m.pdbs, apiName, func(p *policyv1.PodDisruptionBudget) metav1.ObjectMeta { return p.ObjectMeta })
	if pdb.Spec.Selector == nil || !matches(pdb.Spec.Selector.MatchLabels, api.Spec.Template.Labels) {
		t.Errorf("pdb %s does not select the api pods", pdb.Name)
	}
	replicas := int32(1)
	if api.Spec.Replicas != nil {
		replicas = *api.Spec.Replicas
	}
	if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.Type != intstr.Int ||
		pdb.Spec.MinAvailable.IntVal < 1 || pdb.Spec.MinAvailable.IntVal >= replicas {
		t.Errorf("pdb minAvailable %v: want 1 to %d (below the %d replicas, or node drains block)", pdb.Spec.MinAvailable, replicas-1, replicas)
	}
	for _, name := range []string{apiName, workerName} {
		c := container(t, m.deployment(t, name))
		found := slices.ContainsFunc(m.kust.Images, func(i image) bool { return i.Name == c.Image && i.NewName != "" })
		if !found {
			t.Errorf("image %s of %s is not set in kustomization.yaml images", c.Image, name)
		}
	}
}

func TestAPIProbes(t *testing.T) {
	t.Parallel()
	m := load(t)
	api := m.deployment(t, apiName)
	c := container(t, api)
	ports := map[string]bool{}
	for _, p := range c.Ports {
		ports[p.Name] = true
	}
	tests := []struct {
		name  string
		probe *corev1.Probe
		path  string
	}{
		{name: "liveness", probe: c.LivenessProbe, path: "/healthz"},
		{name: "readiness", probe: c.ReadinessProbe, path: "/readyz"},
		{name: "startup", probe: c.StartupProbe, path: "/healthz"},
	}
	for _, tt := range tests {
		p := tt.probe
		if p == nil || p.HTTPGet == nil {
			t.Errorf("%s probe: missing or not httpGet", tt.name)
			continue
		}
		if p.HTTPGet.Path != tt.path {
			t.Errorf("%s probe: path %s, want %s", tt.name, p.HTTPGet.Path, tt.path)
		}
		if p.HTTPGet.Port.Type != intstr.String || !ports[p.HTTPGet.Port.StrVal] {
			t.Errorf("%s probe: port %s is not a named container port", tt.name, p.HTTPGet.Port.String())
		}
	}
	if api.Spec.Replicas == nil || *api.Spec.Replicas < 2 {
		t.Error("api replicas < 2: the api and its suite scheduler would stop during a rollout or drain")
	}
	var preStop time.Duration
	if l := c.Lifecycle; l != nil && l.PreStop != nil && l.PreStop.Sleep != nil {
		preStop = time.Duration(l.PreStop.Sleep.Seconds) * time.Second
	}
	gp := api.Spec.Template.Spec.TerminationGracePeriodSeconds
	if gp == nil || time.Duration(*gp)*time.Second <= preStop+apiHTTPDrain {
		t.Errorf("api terminationGracePeriodSeconds %s: want more than preStop %v + drain %v", show(gp), preStop, apiHTTPDrain)
	}
}

func TestScaledObject(t *testing.T) {
	t.Parallel()
	m := load(t)
	so := m.scaler(t)
	budget := longestTask(t)
	spec := so.Spec
	if spec.ScaleTargetRef.Name != workerName {
		t.Errorf("scaleTargetRef %q, want %s", spec.ScaleTargetRef.Name, workerName)
	}
	m.deployment(t, spec.ScaleTargetRef.Name)
	if spec.MinReplicaCount == nil || *spec.MinReplicaCount != 0 {
		t.Errorf("minReplicaCount %s, want 0 (scale to zero)", show(spec.MinReplicaCount))
	}
	if spec.MaxReplicaCount == nil || *spec.MaxReplicaCount < 1 {
		t.Errorf("maxReplicaCount %s, want at least 1", show(spec.MaxReplicaCount))
	}
	if spec.CooldownPeriod == nil || time.Duration(*spec.CooldownPeriod)*time.Second < budget {
		t.Errorf("cooldownPeriod %s s, want at least the longest task %v", show(spec.CooldownPeriod), budget)
	}
	var window *int32
	if a := spec.Advanced; a != nil && a.HorizontalPodAutoscalerConfig != nil &&
		a.HorizontalPodAutoscalerConfig.Behavior != nil && a.HorizontalPodAutoscalerConfig.Behavior.ScaleDown != nil {
		window = a.HorizontalPodAutoscalerConfig.Behavior.ScaleDown.StabilizationWindowSeconds
	}
	if window == nil || time.Duration(*window)*time.Second < budget {
		t.Errorf("scale-down stabilizationWindowSeconds %s, want at least the longest task %v", show(window), budget)
	}
	if spec.Fallback == nil || spec.Fallback.Replicas < 1 {
		t.Error("no fallback replicas: a failing query would read as an empty queue")
	}
	if len(spec.Triggers) != 1 || spec.Triggers[0].Type != "prometheus" {
		t.Fatalf("triggers %+v, want one prometheus trigger", spec.Triggers)
	}
	md := spec.Triggers[0].Metadata
	query := md["query"]
	// The gauge the api exports (web/metrics.go), and every state a worker
	// must act on: scheduled and retry tasks only become pending through a
	// running worker's forwarder.
	src, err := os.ReadFile(filepath.Join("..", "web", "metrics.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(query, "snapq_queue_tasks") || !bytes.Contains(src, []byte(`"snapq_queue_tasks"`)) {
		t.Errorf("query %q does not read snapq_queue_tasks, or web/metrics.go no longer exports it", query)
	}
	for _, state := range []string{"pending", "active", "scheduled", "retry"} {
		if !strings.Contains(query, state) {
			t.Errorf("query %q leaves out %s tasks", query, state)
		}
	}
	if !strings.Contains(query, "max by") {
		t.Errorf("query %q sums the same Redis counts once per api replica", query)
	}
	if want := m.configMap(t).Data["SNAPQ_WORKER_JOBS"]; md["threshold"] != want {
		t.Errorf("threshold %q, want SNAPQ_WORKER_JOBS (%s tasks per worker)", md["threshold"], want)
	}
	if md["ignoreNullValues"] != "false" {
		t.Error("ignoreNullValues is not false: missing gauges would scale the workers to zero")
	}
	if md["serverAddress"] == "" {
		t.Error("no serverAddress")
	}
}

// compose is the part of docker-compose.yml checked here.
type compose struct {
	Services map[string]struct {
		Scale           *int              `json:"scale"`
		StopGracePeriod string            `json:"stop_grace_period"`
		ShmSize         string            `json:"shm_size"`
		Environment     map[string]string `json:"environment"`
		SecurityOpt     []string          `json:"security_opt"`
		Build           struct {
			Dockerfile string `json:"dockerfile"`
		} `json:"build"`
	} `json:"services"`
}

func TestComposeScalesWorkers(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(composeFile)
	if err != nil {
		t.Fatal(err)
	}
	var c compose
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	w, ok := c.Services["worker"]
	if !ok {
		t.Fatal("no worker service")
	}
	if w.Scale == nil || *w.Scale != 2 {
		t.Errorf("worker scale %s, want 2", show(w.Scale))
	}
	if w.Build.Dockerfile != "deploy/worker.Dockerfile" {
		t.Errorf("worker built from %q", w.Build.Dockerfile)
	}
	if w.ShmSize == "" {
		t.Error("worker has no shm_size")
	}
	grace, err := time.ParseDuration(w.StopGracePeriod)
	if err != nil {
		t.Fatalf("worker stop_grace_period: %v", err)
	}
	shutdown := 30 * time.Second // the worker's default
	if v := w.Environment["SNAPQ_SHUTDOWN_TIMEOUT"]; v != "" {
		if shutdown, err = time.ParseDuration(v); err != nil {
			t.Fatal(err)
		}
	}
	if grace <= shutdown {
		t.Errorf("worker stop_grace_period %v <= SNAPQ_SHUTDOWN_TIMEOUT %v", grace, shutdown)
	}
	if api := c.Services["api"]; api.Environment["SNAPQ_REDIS_URL"] != w.Environment["SNAPQ_REDIS_URL"] {
		t.Error("api and workers use different Redis queues")
	}
}
