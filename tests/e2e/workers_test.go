package e2e

// Issue 13 item 5: many workers on one Redis run each job once.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/snapq/snapq/internal/testenv"
)

// startWorkerAs starts another worker process of the stack under name (its own log),
// the same binary through a link in the binary directory.
func (s *stack) startWorkerAs(name string) {
	s.t.Helper()
	link := filepath.Join(binDir, name)
	if _, err := os.Lstat(link); err != nil {
		if err := os.Symlink(filepath.Join(binDir, "worker"), link); err != nil {
			s.t.Fatal(err)
		}
	}
	s.start(name)
}

// Three workers share one Redis and a 45-page batch (300 with
// SNAPQ_PROOF_SCALE=full, `make proofs`); one is killed with SIGKILL
// mid-batch. Every job succeeds, and succeeds once: at most one "job succeeded" line in
// all the workers' logs together (none only for a job the killed worker committed just
// before it died), one set of artifact rows, and exactly the bucket objects those rows
// name (no duplicate rows, no orphan objects, sizes and SHA-256s as recorded). The killed
// worker's jobs finish on the other two once asynq's lease on them expires (30 s, then
// its recoverer's next pass, up to a minute later).
func TestManyWorkersEachJobOnce(t *testing.T) {
	t.Parallel()
	start := time.Now()
	s := startStack(t, append(perAttemptKeys, "SNAPQ_WORKER_CONCURRENCY=2", "SNAPQ_WORKER_JOBS=3", "SNAPQ_MAX_RETRY=5")...)
	s.startWorkerAs("worker-b")
	s.startWorkerAs("worker-c")
	site := fixtureSite(t)
	n := proofScale(t, 45, 300)
	targets := make([]map[string]any, n)
	for i := range targets {
		targets[i] = map[string]any{"url": site + "/short?i=" + itoa(i)}
	}
	id := s.submit(map[string]any{"targets": targets, "options": map[string]any{
		"viewport": map[string]any{"width": 320, "height": 240}, "screenshot": map[string]any{"mode": "viewport"}}})

	// SIGKILL worker-b once a third of the batch is done and it holds jobs. (The bounds
	// are for a loaded, shared 2-core machine: 300 pages take 1-3 minutes there.)
	deadline := time.Now().Add(5 * time.Minute)
	for {
		var b batchResp
		s.do("GET", "/v1/batches/"+id, nil, &b)
		if b.Counts["succeeded"] >= n/3 && b.Counts["running"] > 0 && s.logCount("worker-b", "job succeeded") > 0 {
			t.Logf("SIGKILL worker-b at %v (%s in)", b.Counts, time.Since(start).Round(time.Second))
			break
		}
		if b.Status == "completed" || time.Now().After(deadline) {
			t.Fatalf("never a third done with worker-b busy: %v", b.Counts)
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.stop("worker-b", syscall.SIGKILL)

	done := s.waitBatch(id, 8*time.Minute)
	if done.Counts["succeeded"] != n {
		t.Fatalf("final counts %v, want all %d succeeded", done.Counts, n)
	}
	mc, err := testenv.LocalS3().Client(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	jobs := s.checkStored(mc, s.env("SNAPQ_S3_BUCKET"))
	_, arts := s.rows()
	perJob, keys := map[string]int{}, map[string]int{}
	for _, a := range arts {
		perJob[a.JobID]++
		keys[a.Key]++
	}
	for k, c := range keys {
		if c != 1 {
			t.Errorf("object %s is named by %d artifact rows", k, c)
		}
	}
	wins := map[string]int{}
	for _, w := range []string{"worker", "worker-b", "worker-c"} {
		for _, line := range strings.Split(s.procs.Log(w, 64<<20), "\n") {
			var rec struct {
				Msg   string `json:"msg"`
				JobID string `json:"job_id"`
			}
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "job succeeded" {
				wins[rec.JobID]++
			}
		}
	}
	silent := 0
	for id, j := range jobs {
		if j.Status != "succeeded" || perJob[id] != 1 {
			t.Errorf("job %s: %s with %d artifact rows, want succeeded with 1", j.URL, j.Status, perJob[id])
		}
		switch wins[id] {
		case 1:
		case 0:
			silent++ // committed by worker-b, killed before it logged
		default:
			t.Errorf("job %s: %d \"job succeeded\" log lines across the workers, want 1", j.URL, wins[id])
		}
	}
	// Only a job worker-b committed in the instant before SIGKILL can lack its line: at
	// most its SNAPQ_WORKER_JOBS.
	if silent > 3 {
		t.Errorf("%d jobs succeeded without any worker logging it; at most worker-b's 3 in flight can", silent)
	}
	hist, retried := attemptsSummary(jobs)
	t.Logf("%d jobs in %s; attempts histogram %v (%d retried: worker-b's)", n, time.Since(start).Round(time.Second), hist, retried)
}
