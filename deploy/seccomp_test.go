package deploy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// seccompFile is the profile the worker's container runs under, so that Chromium can build
// its sandbox: compose references it by path, Kubernetes by its path on the node under
// /var/lib/kubelet/seccomp.
var (
	seccompFile   = filepath.Join("seccomp", "chromium.json")
	workerSeccomp = corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr("snapq/chromium.json")}
)

func ptr[T any](v T) *T { return &v }

// Chromium's sandbox is built from these: new user, pid and network namespaces (clone,
// clone3, unshare), chroot into an empty directory, and its own seccomp-bpf filters.
var sandboxSyscalls = []string{"clone", "clone3", "unshare", "chroot", "seccomp", "prctl"}

// Refused even so: nothing a worker needs, and each a way out of a container or into
// another process (mounts, ptrace, joining namespaces, kernel modules, bpf, keyrings,
// io_uring and userfaultfd as exploit primitives).
var deniedSyscalls = []string{"mount", "umount2", "pivot_root", "open_tree", "move_mount", "fsopen", "setns",
	"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp", "perf_event_open",
	"init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load", "reboot",
	"bpf", "keyctl", "add_key", "request_key", "userfaultfd", "io_uring_setup", "io_uring_enter",
	"open_by_handle_at", "name_to_handle_at", "swapon", "acct", "clock_settime", "settimeofday"}

// seccompProfile is the OCI/Docker seccomp profile format, the fields this one uses;
// decoding it strictly fails on any other.
type seccompProfile struct {
	DefaultAction   string   `json:"defaultAction"`
	DefaultErrnoRet *int     `json:"defaultErrnoRet"`
	Architectures   []string `json:"architectures"`
	Syscalls        []struct {
		Names  []string `json:"names"`
		Action string   `json:"action"`
	} `json:"syscalls"`
}

func loadSeccomp(t *testing.T) (*seccompProfile, map[string]bool) {
	t.Helper()
	data, err := os.ReadFile(seccompFile)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	var p seccompProfile
	if err := dec.Decode(&p); err != nil {
		t.Fatalf("%s: %v", seccompFile, err)
	}
	allowed := map[string]bool{}
	for _, r := range p.Syscalls {
		if r.Action != "SCMP_ACT_ALLOW" {
			t.Errorf("%s: a rule with action %s; the profile only allows, by name", seccompFile, r.Action)
		}
		for _, n := range r.Names {
			allowed[n] = true
		}
	}
	return &p, allowed
}

// The profile denies by default, lets Chromium build its sandbox, and refuses the calls no
// worker needs.
func TestSeccompProfile(t *testing.T) {
	t.Parallel()
	p, allowed := loadSeccomp(t)
	if p.DefaultAction != "SCMP_ACT_ERRNO" || p.DefaultErrnoRet == nil || *p.DefaultErrnoRet != 1 {
		t.Errorf("default action %s (errno %v), want SCMP_ACT_ERRNO with EPERM (1)", p.DefaultAction, p.DefaultErrnoRet)
	}
	if want := []string{"SCMP_ARCH_X86_64", "SCMP_ARCH_AARCH64"}; !slices.Equal(p.Architectures, want) {
		t.Errorf("architectures %v, want %v (32-bit syscalls refused)", p.Architectures, want)
	}
	for _, n := range sandboxSyscalls {
		if !allowed[n] {
			t.Errorf("%s is not allowed: Chromium cannot build its sandbox", n)
		}
	}
	for _, n := range deniedSyscalls {
		if allowed[n] {
			t.Errorf("%s is allowed", n)
		}
	}
	// A sanity floor: what the worker itself, tini and Chromium need to run at all.
	for _, n := range []string{"read", "write", "openat", "mmap", "futex", "epoll_pwait", "execve", "socket", "connect", "rt_sigreturn", "exit_group"} {
		if !allowed[n] {
			t.Errorf("%s is not allowed", n)
		}
	}
}

// The shipped setups run Chromium with its sandbox: no SNAPQ_CHROME_NO_SANDBOX=true, and the
// worker under the profile above.
func TestSandboxInShippedSetups(t *testing.T) {
	t.Parallel()
	m := load(t)
	if v := m.configMap(t).Data["SNAPQ_CHROME_NO_SANDBOX"]; v != "false" {
		t.Errorf("ConfigMap SNAPQ_CHROME_NO_SANDBOX=%q, want \"false\"", v)
	}
	worker := m.deployment(t, workerName)
	for _, c := range worker.Spec.Template.Spec.Containers {
		if sc := c.SecurityContext; sc != nil && sc.SeccompProfile != nil {
			t.Errorf("container %s overrides the pod's seccomp profile with %s", c.Name, sc.SeccompProfile.Type)
		}
	}

	data, err := os.ReadFile(composeFile)
	if err != nil {
		t.Fatal(err)
	}
	var c compose
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	for name, svc := range c.Services {
		if v, ok := svc.Environment["SNAPQ_CHROME_NO_SANDBOX"]; ok && v != "false" {
			t.Errorf("compose service %s: SNAPQ_CHROME_NO_SANDBOX=%q", name, v)
		}
	}
	w := c.Services["worker"]
	want := "seccomp=./" + filepath.ToSlash(filepath.Join("deploy", seccompFile))
	if !slices.Contains(w.SecurityOpt, want) {
		t.Errorf("compose worker security_opt %v lacks %s", w.SecurityOpt, want)
	}
	if !slices.Contains(w.SecurityOpt, "no-new-privileges:true") {
		t.Errorf("compose worker security_opt %v lacks no-new-privileges:true", w.SecurityOpt)
	}
	if strings.Contains(string(data), `NO_SANDBOX: "true"`) {
		t.Error(`docker-compose.yml still says NO_SANDBOX: "true"`)
	}
}
