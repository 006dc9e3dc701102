package store_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/snapq/snapq/jobs"
)

// A batch's options are stored once, not once per job: 1,000 targets sharing ~200 KB of
// batch options (50 headers of 4 KB, random so Postgres cannot compress them away) store
// a few bytes per job, and every way of loading a job (the worker's StartJob, GetJob, a
// listing, an idempotent replay) still gets the merged options, the target's override
// winning over the batch's option.
func TestBatchOptionsStoredOnce(t *testing.T) {
	t.Parallel()
	st := setup(t)
	ctx := context.Background()
	headers := map[string]string{}
	for i := range jobs.MaxEmulateHeaders {
		b := make([]byte, jobs.MaxHeaderValueLength/2)
		_, _ = rand.Read(b)
		headers[fmt.Sprintf("X-Big-%02d", i)] = hex.EncodeToString(b)
	}
	const n = jobs.MaxTargets
	targets := make([]map[string]any, n)
	for i := range targets {
		targets[i] = map[string]any{"url": fmt.Sprintf("http://127.0.0.1:9999/p%d", i)}
	}
	targets[7]["options"] = map[string]any{"viewport": map[string]any{"width": 500}}
	body, err := json.Marshal(map[string]any{"targets": targets,
		"options": map[string]any{"viewport": map[string]any{"width": 800, "height": 600}, "emulate": map[string]any{"headers": headers}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("request body: %d bytes", len(body))
	svc := &jobs.Service{Repo: st, Queue: nopQueue{}}
	sub := jobs.Submission{Body: body, IdempotencyKey: "shared-options"}
	b, js, _, err := svc.Submit(ctx, sub)
	if err != nil {
		t.Fatal(err)
	}

	var jobBytes, batchBytes, overrides int64
	if err := st.QueryRowForTest(ctx, `SELECT coalesce(sum(pg_column_size(options)), 0), count(options) FROM jobs WHERE batch_id = $1`,
		b.ID).Scan(&jobBytes, &overrides); err != nil {
		t.Fatal(err)
	}
	if err := st.QueryRowForTest(ctx, `SELECT pg_column_size(job_options) FROM batches WHERE id = $1`, b.ID).Scan(&batchBytes); err != nil {
		t.Fatal(err)
	}
	t.Logf("stored options: %d bytes in the batch row, %d bytes in %d job rows (%d with an override)", batchBytes, jobBytes, n, overrides)
	if batchBytes < 150_000 {
		t.Errorf("the batch's shared options take %d bytes, want the ~200 KB of headers once", batchBytes)
	}
	// O(1), not O(N): one override of a few bytes, nothing for the 999 others (stored whole,
	// the jobs held ~200 MB).
	if overrides != 1 || jobBytes > 1024 {
		t.Errorf("job rows hold %d bytes of options in %d overrides, want one small override", jobBytes, overrides)
	}

	check := func(how string, j *jobs.Job) {
		t.Helper()
		wantWidth := 800
		if j.Seq == 7 {
			wantWidth = 500
		}
		if o := j.Options; o.Viewport.Width != wantWidth || o.Viewport.Height != 600 || len(o.Emulate.Headers) != jobs.MaxEmulateHeaders ||
			o.Emulate.Headers["X-Big-03"] != headers["X-Big-03"] {
			t.Errorf("%s: job %d options: viewport %+v, %d headers; want %dx600 and the batch's %d headers",
				how, j.Seq, o.Viewport, len(o.Emulate.Headers), wantWidth, jobs.MaxEmulateHeaders)
		}
	}
	for _, seq := range []int{0, 7} {
		j, err := st.GetJob(ctx, js[seq].ID)
		if err != nil {
			t.Fatal(err)
		}
		check("GetJob", j)
		started, ok, err := st.StartJob(ctx, js[seq].ID)
		if err != nil || !ok {
			t.Fatalf("StartJob = %v, %v", ok, err)
		}
		check("StartJob", started)
	}

	start := time.Now()
	page, _, err := st.ListJobs(ctx, b.ID, "", n, "")
	if err != nil || len(page) != n {
		t.Fatalf("ListJobs = %d jobs, %v", len(page), err)
	}
	t.Logf("ListJobs of %d jobs: %v", n, time.Since(start))
	for _, j := range page {
		check("ListJobs", j)
	}

	start = time.Now()
	_, again, replayed, err := svc.Submit(ctx, sub)
	if err != nil || !replayed || len(again) != n {
		t.Fatalf("replay = %d jobs, replayed %v, %v", len(again), replayed, err)
	}
	t.Logf("idempotent replay of %d jobs: %v", n, time.Since(start))
	check("replay", again[7])
}

// Rows stored before migration 0006 (each job with its full options, the batch without
// shared ones) load as they did.
func TestJobsStoredWholeStillLoad(t *testing.T) {
	t.Parallel()
	st := setup(t)
	ctx := context.Background()
	o := jobs.DefaultOptions()
	o.Viewport.Width = 640
	full, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	batchID, jobID := newTestID(t), newTestID(t)
	if err := st.ExecForTest(ctx, `INSERT INTO batches (id, total) VALUES ($1, 1)`, batchID); err != nil {
		t.Fatal(err)
	}
	if err := st.ExecForTest(ctx, `INSERT INTO jobs (id, batch_id, seq, url, name, options) VALUES ($1, $2, 0, 'http://127.0.0.1:9999/', 'old', $3)`,
		jobID, batchID, full); err != nil {
		t.Fatal(err)
	}
	j, err := st.GetJob(ctx, jobID)
	if err != nil || j.Options.Viewport.Width != 640 {
		t.Fatalf("GetJob = %+v, %v; want the stored 640 px viewport", j, err)
	}
	page, _, err := st.ListJobs(ctx, batchID, "", 10, "")
	if err != nil || len(page) != 1 || page[0].Options.Viewport.Width != 640 {
		t.Fatalf("ListJobs = %v, %v", page, err)
	}
	j, started, err := st.StartJob(ctx, jobID)
	if err != nil || !started || j.Options.Viewport.Width != 640 {
		t.Fatalf("StartJob = %+v, %v, %v", j, started, err)
	}
}
