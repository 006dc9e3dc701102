package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/snapq/snapq/internal/fixtures"
)

// osProc is one process as /proc shows it.
type osProc struct {
	pid, ppid int
	state     byte     // R, S, T (stopped), Z (zombie), …
	args      []string // argv
}

// arg returns the value of --name=value in p's argv, or "".
func (p osProc) arg(name string) string {
	for _, a := range p.args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
	}
	return ""
}

// chromium reports whether p is a Chromium process (browser or child).
func (p osProc) chromium() bool {
	return len(p.args) > 0 && strings.Contains(filepath.Base(p.args[0]), "chrom")
}

// browser reports whether p is Chromium's main (browser) process: no --type,
// and the profile the worker launched it with.
func (p osProc) browser() bool {
	return p.chromium() && p.arg("type") == "" && p.arg("user-data-dir") != ""
}

// renderer reports whether p renders web pages (not Chromium's own WebUI).
func (p osProc) renderer() bool {
	return p.chromium() && p.arg("type") == "renderer" && !slices.Contains(p.args, "--top-chrome-webui")
}

func (p osProc) String() string {
	return fmt.Sprintf("pid %d ppid %d state %c %s", p.pid, p.ppid, p.state, strings.Join(p.args, " "))
}

// readProc reads /proc/pid; ok is false when the process is gone.
func readProc(pid int) (osProc, bool) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return osProc{}, false
	}
	// pid (comm) state ppid …; comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+4 >= len(stat) {
		return osProc{}, false
	}
	fields := strings.Fields(string(stat[i+2:]))
	if len(fields) < 2 {
		return osProc{}, false
	}
	ppid, _ := strconv.Atoi(fields[1])
	p := osProc{pid: pid, ppid: ppid, state: fields[0][0]}
	if cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil {
		p.args = strings.Split(strings.TrimRight(string(cmd), "\x00"), "\x00")
		if strings.Contains(p.args[0], " ") {
			// Chromium's zygote children rewrite their title as one space-separated
			// string (what follows it is stale).
			p.args = strings.Fields(p.args[0])
		}
	}
	return p, true
}

// allProcs lists every process visible in /proc.
func allProcs() []osProc {
	ents, _ := os.ReadDir("/proc")
	var out []osProc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := readProc(pid); ok {
			out = append(out, p)
		}
	}
	return out
}

// descendants lists the processes below root (root excluded).
func descendants(root int) []osProc {
	procs := allProcs()
	children := map[int][]osProc{}
	for _, p := range procs {
		children[p.ppid] = append(children[p.ppid], p)
	}
	var out []osProc
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			out = append(out, c)
			queue = append(queue, c.pid)
		}
	}
	return out
}

// chromiumOf lists the worker's Chromium processes that match keep.
func chromiumOf(workerPid int, keep func(osProc) bool) []osProc {
	var out []osProc
	desc := descendants(workerPid)
	for _, p := range desc {
		if !p.chromium() || p.state == 'Z' || !keep(p) {
			continue
		}
		if p.browser() && slices.ContainsFunc(desc, func(q osProc) bool { return q.pid == p.ppid && q.chromium() }) {
			continue // a child forked by the browser, not yet exec'd into its --type
		}
		out = append(out, p)
	}
	return out
}

// chaosWatch follows one worker's Chromium through a chaos test: the profiles
// (user-data-dirs) and browser pids it has seen, so that processes left over
// after the worker stopped (reparented away from it) are still found.
//
// A sampler records every browser the workers start, also those a test never
// waits for (a replacement started and retired between two looks).
type chaosWatch struct {
	t        *testing.T
	s        *stack
	mu       sync.Mutex
	workers  []int           // worker pids seen
	profiles map[string]bool // user-data-dirs seen
	browsers []int           // main Chromium pids in the order they were first seen
	stop     chan struct{}
	stopped  chan struct{}
}

func newChaosWatch(t *testing.T, s *stack) *chaosWatch {
	w := &chaosWatch{t: t, s: s, profiles: map[string]bool{}, stop: make(chan struct{}), stopped: make(chan struct{})}
	w.workerPid()
	go w.sample()
	// Whatever the test's outcome, nothing of its Chromium outlives it.
	t.Cleanup(func() {
		w.stopSampling()
		for _, p := range w.leftovers() {
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
			_ = syscall.Kill(p.pid, syscall.SIGCONT)
		}
	})
	return w
}

func (w *chaosWatch) sample() {
	defer close(w.stopped)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		w.mu.Lock()
		workers := slices.Clone(w.workers)
		w.mu.Unlock()
		for _, pid := range workers {
			for _, b := range chromiumOf(pid, osProc.browser) {
				w.remember(b)
			}
		}
		select {
		case <-w.stop:
			return
		case <-tick.C:
		}
	}
}

func (w *chaosWatch) stopSampling() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.stopped
}

// workerPid is the running worker's pid; the test fails if there is none.
func (w *chaosWatch) workerPid() int {
	w.t.Helper()
	pid := w.s.procs.Pid("worker")
	if pid == 0 {
		w.t.Fatal("no worker process")
	}
	w.mu.Lock()
	if !slices.Contains(w.workers, pid) {
		w.workers = append(w.workers, pid)
	}
	w.mu.Unlock()
	return pid
}

// seen returns the browser pids seen so far.
func (w *chaosWatch) seen() []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.browsers)
}

// browser waits for the worker's main Chromium process and remembers it.
func (w *chaosWatch) browser(timeout time.Duration) osProc {
	w.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if bs := chromiumOf(w.workerPid(), osProc.browser); len(bs) > 0 {
			// Only one browser runs at a time, but a dying one may linger for a moment:
			// the newest is the current one.
			b := slices.MaxFunc(bs, func(a, b osProc) int { return a.pid - b.pid })
			w.remember(b)
			return b
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("no Chromium browser process under worker %d after %s", w.workerPid(), timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (w *chaosWatch) remember(b osProc) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if dir := b.arg("user-data-dir"); dir != "" {
		w.profiles[dir] = true
	}
	if !slices.Contains(w.browsers, b.pid) {
		w.browsers = append(w.browsers, b.pid)
	}
}

// newBrowser waits until the worker runs a browser other than old.
func (w *chaosWatch) newBrowser(old int, timeout time.Duration) osProc {
	w.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		for _, b := range chromiumOf(w.workerPid(), osProc.browser) {
			if b.pid != old && b.state != 'T' {
				w.remember(b)
				return b
			}
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("the worker started no new browser within %s of the fault on browser %d", timeout, old)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// leftovers lists live processes of any Chromium the worker ran: descendants
// of the worker, and anything anywhere still using one of its profiles.
func (w *chaosWatch) leftovers() []osProc {
	var out []osProc
	if pid := w.s.procs.Pid("worker"); pid != 0 {
		out = chromiumOf(pid, func(osProc) bool { return true })
	}
	for _, p := range allProcs() {
		if p.state == 'Z' || slices.ContainsFunc(out, func(o osProc) bool { return o.pid == p.pid }) {
			continue
		}
		for dir := range w.profileSet() {
			if slices.ContainsFunc(p.args, func(a string) bool { return strings.Contains(a, dir) }) {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

func (w *chaosWatch) profileSet() map[string]bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.profiles)
}

// stopAndCheckClean stops the stack gracefully and fails the test if any of
// the worker's Chromium processes or profiles outlive it.
func (w *chaosWatch) stopAndCheckClean() {
	w.t.Helper()
	w.s.stop("worker", syscall.SIGTERM)
	w.s.stop("api", syscall.SIGTERM)
	w.stopSampling()
	if len(w.profileSet()) == 0 {
		w.t.Fatal("no Chromium profile was seen; the leftover check proves nothing")
	}
	// Chromium's children may take a moment to notice their parent is gone.
	deadline := time.Now().Add(5 * time.Second)
	var left []osProc
	for {
		if left = w.leftovers(); len(left) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, p := range left {
		w.t.Errorf("Chromium process left after the worker stopped: %s", p)
	}
	for dir := range w.profileSet() {
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			w.t.Errorf("Chromium profile %s left after the worker stopped (stat: %v)", dir, err)
		}
	}
	w.t.Logf("browsers seen: %v; none left after the stack stopped", w.seen())
}

// workerAlive fails the test unless the worker process is still running.
func (w *chaosWatch) workerAlive(pid int) {
	w.t.Helper()
	if got := w.s.procs.Pid("worker"); got != pid {
		w.t.Fatalf("worker pid %d, want the original %d still running", got, pid)
	}
	p, ok := readProc(pid)
	if !ok || p.state == 'Z' {
		w.t.Fatalf("worker %d is gone (state %c); a Chromium fault must not take it down", pid, p.state)
	}
}

// chaosSite serves the fixtures plus /late?ms=N: a page that renders at once
// but whose load event waits N ms for a slow iframe, so a fault aimed at a
// running capture lands while the renderer is live.
func chaosSite(t *testing.T) string {
	t.Helper()
	fx := fixtures.Handler()
	mux := http.NewServeMux()
	mux.Handle("/", fx)
	mux.HandleFunc("/late", func(w http.ResponseWriter, r *http.Request) {
		ms := r.URL.Query().Get("ms")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><html><head><title>Late %s</title></head><body>
<h1>Rendered; load waits %s ms</h1><div style="height:300px;background:#34a853"></div>
<iframe src="/slow?ms=%s" width="300" height="100"></iframe></body></html>`, r.URL.RawQuery, ms, ms)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// submitLate submits n /late pages whose load takes ms; it returns the batch id.
func submitLate(t *testing.T, s *stack, site string, n, ms int, options map[string]any) string {
	t.Helper()
	targets := make([]map[string]any, n)
	for i := range targets {
		targets[i] = map[string]any{"url": fmt.Sprintf("%s/late?ms=%d&i=%d", site, ms, i), "name": "p" + pad3(i)}
	}
	body := map[string]any{"targets": targets}
	if options != nil {
		body["options"] = options
	}
	var b batchResp
	if code := s.do("POST", "/v1/batches", body, &b); code != http.StatusAccepted {
		t.Fatalf("submit: status %d", code)
	}
	return b.ID
}

// checkAllSucceeded waits for the batch and checks every job succeeded with
// exactly one set of artifacts. It returns how many jobs took more than one
// attempt, and the largest attempt count.
func checkAllSucceeded(t *testing.T, s *stack, batchID string, n int, timeout time.Duration) (retried, maxAttempts int) {
	t.Helper()
	done := s.waitBatch(batchID, timeout)
	if done.Counts["succeeded"] != n {
		t.Errorf("batch counts %v, want all %d succeeded", done.Counts, n)
	}
	var list struct {
		Jobs []jobResp `json:"jobs"`
	}
	s.do("GET", "/v1/batches/"+batchID+"/jobs?limit=100", nil, &list)
	if len(list.Jobs) != n {
		t.Fatalf("batch lists %d jobs, want %d", len(list.Jobs), n)
	}
	for _, lj := range list.Jobs {
		var j jobResp
		if code := s.do("GET", "/v1/jobs/"+lj.ID, nil, &j); code != http.StatusOK {
			t.Fatalf("GET job %s: %d", lj.ID, code)
		}
		if j.Status != "succeeded" {
			t.Errorf("job %s (%s): status %s, error %+v after %d attempts", j.Name, j.URL, j.Status, j.Error, j.Attempts)
			continue
		}
		if j.Attempts > 1 {
			retried++
		}
		maxAttempts = max(maxAttempts, j.Attempts)
		names := map[string]bool{}
		images := 0
		for _, a := range j.Artifacts {
			if names[a.Name] {
				t.Errorf("job %s: artifact %q recorded twice; a retried job must keep one set", j.Name, a.Name)
			}
			names[a.Name] = true
			if strings.HasPrefix(a.ContentType, "image/") {
				images++
			}
		}
		if j.Result == nil || j.Result.Segments.Captured < 1 || images != j.Result.Segments.Captured {
			t.Errorf("job %s: %d images for result %+v; want one per captured segment", j.Name, images, j.Result)
		}
	}
	return retried, maxAttempts
}

// checkStillWorks submits a small batch and checks it succeeds on first try.
func checkStillWorks(t *testing.T, s *stack, site string) {
	t.Helper()
	id := submitLate(t, s, site, 3, 100, nil)
	retried, _ := checkAllSucceeded(t, s, id, 3, 60*time.Second)
	if retried != 0 {
		t.Errorf("after the fault, %d of 3 fresh jobs needed a retry; the worker should have recovered", retried)
	}
}
