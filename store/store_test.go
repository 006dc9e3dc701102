package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/snapq/snapq/internal/testenv"
	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/store"
)

func setup(t *testing.T) *store.Store {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, testenv.DatabaseURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return st
}

func newBatch(t *testing.T, st *store.Store, n int) (*jobs.Batch, []*jobs.Job) {
	t.Helper()
	svc := &jobs.Service{Repo: st, Queue: nopQueue{}}
	body := `{"labels": {"team": "web"}, "urls": [`
	for i := range n {
		if i > 0 {
			body += ","
		}
		body += `"https://example.com/p` + string(rune('a'+i)) + `"`
	}
	b, js, _, err := svc.Submit(context.Background(), jobs.Submission{Body: []byte(body + `]}`)})
	if err != nil {
		t.Fatal(err)
	}
	return b, js
}

type nopQueue struct{}

func (nopQueue) Enqueue(context.Context, jobs.CapturePayload) error        { return nil }
func (nopQueue) TaskState(context.Context, string) (string, string, error) { return "", "", nil }
func (nopQueue) Delete(context.Context, string) error                      { return nil }

func TestMigrateIsIdempotent(t *testing.T) {
	t.Parallel()
	st := setup(t)
	applied, err := st.Migrate(context.Background())
	if err != nil || len(applied) != 0 {
		t.Fatalf("second Migrate = %v, %v; want nothing applied", applied, err)
	}
}

func TestBatchLifecycle(t *testing.T) {
	t.Parallel()
	st := setup(t)
	ctx := context.Background()
	b, js := newBatch(t, st, 3)

	got, err := st.GetBatch(ctx, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status() != jobs.BatchQueued || got.Counts.Queued != 3 || got.Total != 3 || got.Labels["team"] != "web" {
		t.Fatalf("new batch = status %s counts %+v labels %v", got.Status(), got.Counts, got.Labels)
	}

	// Job 0 succeeds with two artifacts.
	j0, started, err := st.StartJob(ctx, js[0].ID)
	if err != nil || !started || j0.Attempts != 1 || j0.Status != jobs.StatusRunning {
		t.Fatalf("StartJob = %+v, %v, %v", j0, started, err)
	}
	arts := []*jobs.Artifact{
		{ID: "0190a0a0-0000-7000-8000-000000000001", Kind: jobs.KindScreenshot, Name: "p-001.png", Seq: 1, ObjectKey: "k1",
			ContentType: "image/png", Bytes: 10, Width: 1280, Height: 720, SHA256: "aa"},
		{ID: "0190a0a0-0000-7000-8000-000000000002", Kind: jobs.KindScreenshot, Name: "p-002.png", Seq: 2, ObjectKey: "k2",
			ContentType: "image/png", Bytes: 5, Width: 1280, Height: 100, SHA256: "bb"},
	}
	res := &jobs.Result{HTTPStatus: 200, Segments: jobs.SegmentCounts{Total: 2, Captured: 2}, TimingsMS: map[string]int64{"total": 5}}
	// A stale attempt number must not complete the job.
	if ok, err := st.CompleteJob(ctx, js[0].ID, 99, res, arts); err != nil || ok {
		t.Fatalf("CompleteJob with stale attempt = %v, %v; want false", ok, err)
	}
	if ok, err := st.CompleteJob(ctx, js[0].ID, 1, res, arts); err != nil || !ok {
		t.Fatalf("CompleteJob = %v, %v", ok, err)
	}
	listed, err := st.ListArtifacts(ctx, js[0].ID)
	if err != nil || len(listed) != 2 || listed[0].Name != "p-001.png" || listed[1].Height != 100 {
		t.Fatalf("artifacts = %+v, %v", listed, err)
	}
	// A duplicate delivery of a finished job does not start it again.
	if _, started, err := st.StartJob(ctx, js[0].ID); err != nil || started {
		t.Fatalf("StartJob on succeeded job started=%v err=%v", started, err)
	}

	// Job 1 fails once (retry), then finally.
	st.StartJob(ctx, js[1].ID)
	if err := st.FailJob(ctx, js[1].ID, 1, jobs.JobError{Code: "connection_failed", Message: "refused"}, nil, false); err != nil {
		t.Fatal(err)
	}
	j1, _ := st.GetJob(ctx, js[1].ID)
	if j1.Status != jobs.StatusQueued || j1.ErrorCode != "connection_failed" {
		t.Fatalf("after retryable failure: status %s code %s", j1.Status, j1.ErrorCode)
	}
	st.StartJob(ctx, js[1].ID)
	if err := st.FailJob(ctx, js[1].ID, 2, jobs.JobError{Code: "connection_failed", Message: "refused"}, nil, true); err != nil {
		t.Fatal(err)
	}
	got, _ = st.GetBatch(ctx, b.ID)
	if got.Status() != jobs.BatchRunning || got.FinishedAt != nil {
		t.Fatalf("batch with one queued job: status %s finished %v", got.Status(), got.FinishedAt)
	}

	// Cancel takes the last queued job and completes the batch.
	ids, err := st.CancelBatch(ctx, b.ID)
	if err != nil || len(ids) != 1 || ids[0] != js[2].ID {
		t.Fatalf("CancelBatch = %v, %v", ids, err)
	}
	got, _ = st.GetBatch(ctx, b.ID)
	want := jobs.Counts{Succeeded: 1, Failed: 1, Canceled: 1}
	if got.Counts != want || got.Status() != jobs.BatchCompleted || got.FinishedAt == nil {
		t.Fatalf("final batch: counts %+v status %s finished %v", got.Counts, got.Status(), got.FinishedAt)
	}
}

func TestListJobsPages(t *testing.T) {
	t.Parallel()
	st := setup(t)
	ctx := context.Background()
	b, js := newBatch(t, st, 5)
	var seen []string
	cursor := ""
	for range 10 {
		page, next, err := st.ListJobs(ctx, b.ID, "", 2, cursor)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range page {
			seen = append(seen, j.ID)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if len(seen) != 5 {
		t.Fatalf("paged %d jobs, want 5", len(seen))
	}
	for i, j := range js {
		if seen[i] != j.ID {
			t.Errorf("page order: %d is %s, want %s", i, seen[i], j.ID)
		}
	}
	filtered, _, err := st.ListJobs(ctx, b.ID, jobs.StatusSucceeded, 10, "")
	if err != nil || len(filtered) != 0 {
		t.Fatalf("succeeded filter = %d jobs, %v", len(filtered), err)
	}
}

func TestNotFound(t *testing.T) {
	t.Parallel()
	st := setup(t)
	ctx := context.Background()
	missing := "0190a0a0-0000-7000-8000-0000000000ff"
	if _, err := st.GetBatch(ctx, missing); !errors.Is(err, jobs.ErrNotFound) {
		t.Errorf("GetBatch missing: %v", err)
	}
	if _, err := st.GetJob(ctx, missing); !errors.Is(err, jobs.ErrNotFound) {
		t.Errorf("GetJob missing: %v", err)
	}
	if _, err := st.GetArtifact(ctx, missing); !errors.Is(err, jobs.ErrNotFound) {
		t.Errorf("GetArtifact missing: %v", err)
	}
	if _, err := st.CancelBatch(ctx, missing); !errors.Is(err, jobs.ErrNotFound) {
		t.Errorf("CancelBatch missing: %v", err)
	}
}

func TestUnfinishedAndReconcile(t *testing.T) {
	t.Parallel()
	st := setup(t)
	ctx := context.Background()
	_, js := newBatch(t, st, 2)
	q := &recordingQueue{}
	rec := &jobs.Reconciler{Repo: st, Queue: q, Grace: time.Nanosecond}
	time.Sleep(5 * time.Millisecond)
	// Held jobs are the dispatcher's: the reconciler leaves them alone.
	if n, err := rec.Once(ctx); err != nil || n != 0 || len(q.enqueued) != 0 {
		t.Fatalf("reconcile held = %d, %v, enqueued %v; want nothing", n, err, q.enqueued)
	}
	if ds, err := st.DispatchHeld(ctx, 10); err != nil || len(ds) != 2 {
		t.Fatalf("DispatchHeld = %v, %v", ds, err)
	}
	time.Sleep(5 * time.Millisecond)
	n, err := rec.Once(ctx)
	if err != nil || n != 2 || len(q.enqueued) != 2 {
		t.Fatalf("reconcile = %d, %v, enqueued %v; want both jobs re-enqueued", n, err, q.enqueued)
	}
	// A job whose task was archived while still queued is failed, not lost.
	q.state = "archived"
	n, err = rec.Once(ctx)
	if err != nil || n != 2 {
		t.Fatalf("reconcile archived = %d, %v", n, err)
	}
	j, _ := st.GetJob(ctx, js[0].ID)
	if j.Status != jobs.StatusFailed || j.ErrorCode != jobs.CodeWorkerLost {
		t.Fatalf("archived job: status %s code %s", j.Status, j.ErrorCode)
	}
}

type recordingQueue struct {
	state    string
	enqueued []string
}

func (q *recordingQueue) Enqueue(_ context.Context, p jobs.CapturePayload) error {
	id := p.JobID
	q.enqueued = append(q.enqueued, id)
	return nil
}
func (q *recordingQueue) TaskState(context.Context, string) (string, string, error) {
	return q.state, "boom", nil
}
func (q *recordingQueue) Delete(context.Context, string) error { return nil }

func TestIdempotencyAndOwnership(t *testing.T) {
	t.Parallel()
	st := setup(t)
	ctx := context.Background()
	secret, key, err := jobs.NewAPIKey("test")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreateKey(ctx, key); err != nil {
		t.Fatal(err)
	}
	got, err := st.KeyBySHA256(ctx, jobs.HashKey(secret))
	if err != nil || got.ID != key.ID {
		t.Fatalf("KeyBySHA256 = %+v, %v", got, err)
	}
	svc := &jobs.Service{Repo: st, Queue: nopQueue{}, MaxInFlight: 3}
	body := []byte(`{"urls": ["https://a.example/", "https://b.example/"]}`)
	sub := jobs.Submission{Body: body, Owner: key.ID, IdempotencyKey: "order-42"}
	b1, _, replayed, err := svc.Submit(ctx, sub)
	if err != nil || replayed {
		t.Fatalf("first submit: replayed %v, %v", replayed, err)
	}
	b2, js2, replayed, err := svc.Submit(ctx, sub)
	if err != nil || !replayed || b2.ID != b1.ID || len(js2) != 2 {
		t.Fatalf("same key and body: batch %v (first %s), %d jobs, replayed %v, %v", b2, b1.ID, len(js2), replayed, err)
	}
	sub.Body = []byte(`{"urls": ["https://c.example/"]}`)
	if _, _, _, err := svc.Submit(ctx, sub); !errors.Is(err, jobs.ErrIdempotencyConflict) {
		t.Fatalf("same key, other body: %v, want ErrIdempotencyConflict", err)
	}
	// 2 jobs in flight + 2 new > 3.
	if _, _, _, err := svc.Submit(ctx, jobs.Submission{Body: body, Owner: key.ID}); !errors.Is(err, jobs.ErrTooManyInFlight) {
		t.Fatalf("over the in-flight cap: %v", err)
	}
	// Lists are per owner.
	mine, _, err := st.ListBatches(ctx, key.ID, "", 10, "")
	if err != nil || len(mine) != 1 || mine[0].OwnerKeyID != key.ID {
		t.Fatalf("owner's batches = %d, %v", len(mine), err)
	}
	others, _, _ := st.ListBatches(ctx, "0190a0a0-0000-7000-8000-0000000000ff", "", 10, "")
	all, _, _ := st.ListBatches(ctx, jobs.AnyOwner, "", 10, "")
	if len(others) != 0 || len(all) != 1 {
		t.Fatalf("other owner sees %d, any owner sees %d", len(others), len(all))
	}
	if err := st.RevokeKey(ctx, key.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := st.KeyBySHA256(ctx, jobs.HashKey(secret)); !errors.Is(err, jobs.ErrNotFound) {
		t.Fatalf("revoked key still found: %v", err)
	}
}
