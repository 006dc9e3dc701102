package e2e

import (
	"net/http"
	"syscall"
	"testing"
	"time"
)

// SIGTERM drains: the 4 jobs rendering when it arrives (4 tabs, 4 tasks) finish and
// commit, each on its first attempt, the worker exits within its shutdown timeout, the
// queued rest is untouched and runs after a restart. The timeout is generous (40 s for
// four 3 s pages) because 4 tabs on a loaded 2-core machine took over 20 s.
func TestWorkerGracefulShutdown(t *testing.T) {
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
