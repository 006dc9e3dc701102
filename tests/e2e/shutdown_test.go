package e2e

import (
	"net/http"
	"syscall"
	"testing"
	"time"
)

// SIGTERM drains: jobs already rendering finish and are recorded once, the
// worker exits within its shutdown timeout, and the queued rest runs after a
// restart.
func TestWorkerGracefulShutdown(t *testing.T) {
	s := startStack(t, "SNAPQ_SHUTDOWN_TIMEOUT=20s")
	site := fixtureSite(t)
	var targets []map[string]any
	for i := range 6 {
		targets = append(targets, map[string]any{"url": site + "/slow?ms=3000&i=" + itoa(i)})
	}
	var b batchResp
	if code := s.do("POST", "/v1/batches", map[string]any{"targets": targets}, &b); code != http.StatusAccepted {
		t.Fatalf("submit: %d", code)
	}
	s.waitRunning(b.ID)
	start := time.Now()
	s.stop("worker", syscall.SIGTERM)
	if took := time.Since(start); took > 25*time.Second {
		t.Fatalf("worker took %s to exit after SIGTERM; the shutdown timeout is 20 s", took)
	}
	var mid batchResp
	s.do("GET", "/v1/batches/"+b.ID, nil, &mid)
	if mid.Counts["running"] != 0 || mid.Counts["succeeded"] == 0 {
		t.Fatalf("after a graceful stop: %v; want the running jobs finished and none left running", mid.Counts)
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
	t.Logf("succeeded before the stop: %d of %d", mid.Counts["succeeded"], len(targets))
}
