package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hibiken/asynq"
)

// SIGTERM drains: the 4 jobs rendering when it arrives (4 tabs, 4 tasks) finish and
// commit, each on its first attempt, the worker exits within its shutdown timeout, the
// queued rest is untouched and runs after a restart. The timeout is generous (40 s for
// four 3 s pages) because 4 tabs on a loaded 2-core machine took over 20 s.
func TestWorkerGracefulShutdown(t *testing.T) {
	t.Parallel()
	s := startStack(t, "SNAPQ_SHUTDOWN_TIMEOUT=40s", "SNAPQ_WORKER_CONCURRENCY=4", "SNAPQ_WORKER_JOBS=4")
	site := fixtureSite(t)
	var targets []map[string]any
	for i := range 6 {
		targets = append(targets, map[string]any{"url": site + "/slow?ms=3000&i=" + itoa(i)})
	}
	var b batchResp
	if code := s.do("POST", "/v1/batches", map[string]any{"targets": targets}, &b); code != http.StatusAccepted {
		t.Fatalf("submit: %d", code)
	}
	// Wait for 4 jobs rendering (the slow page holds each for 3 s).
	var running struct {
		Jobs []jobResp `json:"jobs"`
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		s.do("GET", "/v1/batches/"+b.ID+"/jobs?status=running", nil, &running)
		if len(running.Jobs) == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never 4 jobs running at once: %d", len(running.Jobs))
		}
	}
	start := time.Now()
	s.stop("worker", syscall.SIGTERM)
	if took := time.Since(start); took > 44*time.Second {
		t.Fatalf("worker took %s to exit after SIGTERM; the shutdown timeout is 40 s (testenv kills at 45 s)", took)
	} else {
		t.Logf("worker exited %s after SIGTERM", took.Round(time.Millisecond))
	}
	for _, r := range running.Jobs {
		var j jobResp
		s.do("GET", "/v1/jobs/"+r.ID, nil, &j)
		if j.Status != "succeeded" || j.Attempts != 1 {
			t.Errorf("job %s was rendering at SIGTERM; after the drain it is %s after %d attempts, want succeeded after 1",
				j.URL, j.Status, j.Attempts)
		}
	}
	var mid batchResp
	s.do("GET", "/v1/batches/"+b.ID, nil, &mid)
	if mid.Counts["running"] != 0 || mid.Counts["succeeded"] != 4 {
		t.Fatalf("after a graceful stop: %v; want the 4 running jobs succeeded and none left running", mid.Counts)
	}
	s.start("worker")
	done := s.waitBatch(b.ID, 2*time.Minute)
	if done.Counts["succeeded"] != len(targets) {
		t.Fatalf("final counts %v, want all %d succeeded", done.Counts, len(targets))
	}
	var jobs struct {
		Jobs []jobResp `json:"jobs"`
	}
	s.do("GET", "/v1/batches/"+b.ID+"/jobs", nil, &jobs)
	for _, j := range jobs.Jobs {
		if j.Attempts != 1 {
			t.Errorf("job %s took %d attempts; a graceful stop must not cost a retry", j.URL, j.Attempts)
		}
	}
}

// A second SIGTERM hands the jobs in flight back to the queue at once: the
// worker exits in seconds although its shutdown timeout is a minute and its
// pages never answer, no job is failed or left running, the tasks are
// pending again with no retry counted, and a second worker then runs every
// job once more.
func TestWorkerSecondSignal(t *testing.T) {
	t.Parallel()
	// /hold answers only once released: until then every capture is in flight.
	release := make(chan struct{})
	var arrived atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/hold", func(w http.ResponseWriter, r *http.Request) {
		arrived.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!doctype html><title>held %s</title><h1>released</h1>", r.URL.RawQuery)
	})
	site := httptest.NewServer(mux)
	t.Cleanup(site.Close)
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })

	s := startStack(t, "SNAPQ_SHUTDOWN_TIMEOUT=60s", "SNAPQ_WORKER_CONCURRENCY=4", "SNAPQ_WORKER_JOBS=4")
	const n = 4
	var targets []map[string]any
	for i := range n {
		targets = append(targets, map[string]any{"url": site.URL + "/hold?i=" + itoa(i)})
	}
	var b batchResp
	if code := s.do("POST", "/v1/batches", map[string]any{"targets": targets, "options": map[string]any{"timeout_ms": 60000}}, &b); code != http.StatusAccepted {
		t.Fatalf("submit: %d", code)
	}
	deadline := time.Now().Add(90 * time.Second)
	for arrived.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d captures reached the page within 90 s", arrived.Load(), n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	pid := s.procs.Pid("worker")
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if p, ok := readProc(pid); !ok || p.state == 'Z' {
		t.Fatal("the worker exited on the first SIGTERM; it must drain its jobs first")
	}
	second := time.Now()
	s.stop("worker", syscall.SIGTERM)
	took := time.Since(second)
	// The bound covers recording the interrupted attempts and closing Chromium
	// on a loaded machine; without the hand-back the worker waits a minute.
	if took > 20*time.Second {
		t.Errorf("the worker took %s to exit after a second SIGTERM; want it to hand its jobs back at once", took.Round(100*time.Millisecond))
	}
	var mid batchResp
	s.do("GET", "/v1/batches/"+b.ID, nil, &mid)
	if mid.Counts["queued"] != n {
		t.Errorf("after the worker stopped: %v; want all %d jobs queued again (none failed, none left running)", mid.Counts, n)
	}
	if s.logCount("worker", "second signal: handing running jobs back to the queue") != 1 {
		t.Errorf("the worker did not log the second signal")
	}
	// The tasks are back in the queue, pending with no retry counted: not
	// active under a lease that must expire first, not waiting for a retry.
	conn, err := asynq.ParseRedisURI(s.env("SNAPQ_REDIS_URL"))
	if err != nil {
		t.Fatal(err)
	}
	insp := asynq.NewInspector(conn)
	defer insp.Close()
	var list struct {
		Jobs []jobResp `json:"jobs"`
	}
	s.do("GET", "/v1/batches/"+b.ID+"/jobs", nil, &list)
	for _, j := range list.Jobs {
		info, err := insp.GetTaskInfo("capture", j.ID)
		if err != nil {
			t.Errorf("task of job %s: %v", j.ID, err)
			continue
		}
		if info.State != asynq.TaskStatePending || info.Retried != 0 {
			t.Errorf("task of job %s is %s with %d retries after the second SIGTERM; want pending with none", j.ID, info.State, info.Retried)
		}
	}

	// Another worker runs them, each once more.
	once.Do(func() { close(release) })
	if err := s.procs.StartAs("worker2", "worker"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("--- worker2 log (last 4 KiB) ---\n%s", s.procs.Log("worker2", 4096))
		}
	})
	started := time.Now()
	retried, maxAttempts := checkAllSucceeded(t, s, b.ID, n, 2*time.Minute)
	if retried != n || maxAttempts != 2 {
		t.Errorf("%d of %d jobs took a second attempt (at most %d); want every job run once more, exactly", retried, n, maxAttempts)
	}
	t.Logf("worker exited %s after the second SIGTERM; the second worker finished all %d jobs in %s",
		took.Round(100*time.Millisecond), n, time.Since(started).Round(100*time.Millisecond))
}
