package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/regression"
	"github.com/snapq/snapq/store"
)

func newSuite(t *testing.T, st *store.Store) (*regression.Service, *regression.Suite) {
	t.Helper()
	g := &regression.Service{Repo: st, Queue: nopQueue{}}
	s, err := g.CreateSuite(context.Background(), "", []byte(`{"name": "site",
		"targets": [{"url": "https://example.com/", "name": "home"}],
		"schedule": {"cron": "*/5 * * * *"},
		"webhook": {"url": "https://hooks.example.com/x", "secret": "0123456789abcdef"}}`))
	if err != nil {
		t.Fatal(err)
	}
	return g, s
}

// finishCapture completes the run's only job with one screenshot and records
// a comparison of the given status for it.
func finishCapture(t *testing.T, st *store.Store, r *regression.Run, status regression.CompareStatus) (finished bool, art *jobs.Artifact) {
	t.Helper()
	ctx := context.Background()
	js, _, err := st.ListJobs(ctx, r.BatchID, "", 10, "")
	if err != nil || len(js) != 1 {
		t.Fatalf("run jobs: %v, %v", js, err)
	}
	j, _, err := st.StartJob(ctx, js[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	art = &jobs.Artifact{ID: newTestID(t), JobID: j.ID, Kind: jobs.KindScreenshot, Name: j.Name + ".png", Seq: 1,
		ObjectKey: "k/" + j.ID, ContentType: "image/png", Bytes: 10, Width: 1280, Height: 720, SHA256: "x"}
	if ok, err := st.CompleteJob(ctx, j.ID, j.Attempts, &jobs.Result{}, []*jobs.Artifact{art}); !ok || err != nil {
		t.Fatalf("complete job: %v, %v", ok, err)
	}
	_, key, err := st.CaptureOf(ctx, j.ID)
	if err != nil || key != (regression.CaptureKey{Target: "home", Viewport: "1280x720", JobID: j.ID}) {
		t.Fatalf("CaptureOf: %+v, %v", key, err)
	}
	c := &regression.Comparison{ID: newTestID(t), Target: key.Target, Viewport: key.Viewport, Segment: 1, Status: status,
		CurrentArtifact: art}
	finished, err = st.RecordComparisons(ctx, r.ID, j.ID, []*regression.Comparison{c}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return finished, art
}

func newTestID(t *testing.T) string {
	t.Helper()
	return uuid.Must(uuid.NewV7()).String()
}

// Two schedulers firing the same activation start one run; its end creates
// the run.completed delivery (and no batch.completed one); approvals add
// baseline versions and an old one can be restored.
func TestSuiteRunsAndBaselines(t *testing.T) {
	t.Parallel()
	st := setup(t)
	ctx := context.Background()
	g, s := newSuite(t, st)

	now := time.Date(2026, 11, 30, 8, 7, 31, 0, time.UTC)
	runner := &regression.SuiteRunner{Regression: g, Now: func() time.Time { return now }}
	payload := regression.SuiteRunPayload{SuiteID: s.ID}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = runner.Run(ctx, payload)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	runs, _, err := st.ListRuns(ctx, s.ID, 10, "")
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs after 4 deliveries of one activation: %d, %v", len(runs), err)
	}
	r1 := runs[0]
	if r1.Trigger != regression.TriggerSchedule || r1.ScheduledFor == nil || !r1.ScheduledFor.Equal(now.Truncate(5*time.Minute)) ||
		r1.Status != regression.RunRunning || r1.Counts.Pending != 1 {
		t.Fatalf("scheduled run %+v", r1)
	}
	batches, _, _ := st.ListBatches(ctx, jobs.AnyOwner, "", 10, "")
	if len(batches) != 1 {
		t.Fatalf("%d batches, want 1 (the losing schedulers' batches rolled back)", len(batches))
	}

	finished, art1 := finishCapture(t, st, r1, regression.CompareNew)
	if !finished {
		t.Fatal("the last comparison did not finish the run")
	}
	got, err := st.GetRun(ctx, r1.ID)
	if err != nil || got.Status != regression.RunNeedsReview || got.FinishedAt == nil || got.Counts.New != 1 || got.Counts.Pending != 0 {
		t.Fatalf("finished run %+v, %v", got, err)
	}
	ds, err := st.ListWebhookDeliveries(ctx, r1.BatchID)
	if err != nil || len(ds) != 1 || ds[0].Event != regression.EventRunCompleted {
		t.Fatalf("deliveries %+v, %v; want one run.completed", ds, err)
	}

	approved, err := st.Approve(ctx, r1.ID, regression.Approval{All: true}, "anonymous")
	if err != nil || approved.Status != regression.RunApproved {
		t.Fatalf("approve: %+v, %v", approved, err)
	}
	if full, err := st.GetRun(ctx, r1.ID); err != nil || full.Comparisons[0].ApprovedAt == nil {
		t.Fatalf("approved run: %+v, %v", full, err)
	}

	// A manual run, approved too: version 2 is active.
	r2, err := g.StartRun(ctx, s, regression.TriggerManual, nil, regression.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	finishCapture(t, st, r2, regression.CompareFailed)
	if _, err := st.Approve(ctx, r2.ID, regression.Approval{Targets: []string{"home"}}, "key:abc"); err != nil {
		t.Fatal(err)
	}
	active, err := st.ActiveBaselines(ctx, s.ID, []string{regression.MainLine}, regression.CaptureKey{Target: "home", Viewport: "1280x720"})
	if err != nil || len(active) != 1 || active[0].Version != 2 || active[0].ApprovedBy != "key:abc" {
		t.Fatalf("active baselines %+v, %v", active, err)
	}
	hist, err := st.ListBaselines(ctx, s.ID, regression.MainLine, true)
	if err != nil || len(hist) != 2 || hist[1].Version != 1 || hist[1].Active || hist[1].Artifact.ID != art1.ID {
		t.Fatalf("history %+v, %v", hist, err)
	}
	restored, err := st.RestoreBaseline(ctx, hist[1].ID, "anonymous")
	if err != nil || restored.Version != 3 || !restored.Active || restored.Artifact.ID != art1.ID || restored.RestoredFrom != hist[1].ID {
		t.Fatalf("restore: %+v, %v", restored, err)
	}

	// Disabled: the schedule's task starts nothing.
	s.Enabled = false
	if err := st.UpdateSuite(ctx, s); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Minute)
	if err := runner.Run(ctx, payload); err != nil {
		t.Fatal(err)
	}
	if runs, _, _ := st.ListRuns(ctx, s.ID, 10, ""); len(runs) != 2 {
		t.Fatalf("%d runs after a disabled suite's activation, want 2", len(runs))
	}
	sched, err := st.ScheduledSuites(ctx)
	if err != nil || len(sched) != 0 {
		t.Fatalf("scheduled suites after disabling: %d, %v", len(sched), err)
	}
}
