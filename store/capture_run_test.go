package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/regression"
	"github.com/snapq/snapq/store"
)

// The worker's settle of a run's capture tells which capture it is (the
// compare task carries it), and CaptureRun then reads the run and the job in
// one call: the same run and key CaptureOf finds.
func TestSettleTellsRunCapture(t *testing.T) {
	t.Parallel()
	st, dbURL := setupURL(t)
	ctx := context.Background()
	g, s := newSuite(t, st)
	runner := &regression.SuiteRunner{Regression: g, Now: time.Now}
	if err := runner.Run(ctx, regression.SuiteRunPayload{SuiteID: s.ID}); err != nil {
		t.Fatal(err)
	}
	runs, _, err := st.ListRuns(ctx, s.ID, 10, "")
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs: %v, %v", runs, err)
	}
	js, _, err := st.ListJobs(ctx, runs[0].BatchID, "", 10, "")
	if err != nil || len(js) != 1 {
		t.Fatalf("run jobs: %v, %v", js, err)
	}
	j, _, err := st.StartJob(ctx, js[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	settled, err := st.CompleteAttempt(ctx, j.ID, j.Attempts, &jobs.Result{}, nil)
	if err != nil || !settled.Current {
		t.Fatalf("CompleteAttempt: %+v, %v", settled, err)
	}
	want := jobs.RunCaptureRef{RunID: runs[0].ID, Target: "home", Viewport: "1280x720", JobID: j.ID}
	if !settled.Known || !settled.RunCapture || settled.Capture != want {
		t.Fatalf("settled run capture %v %+v, want %+v", settled.RunCapture, settled.Capture, want)
	}
	wantRun, _, err := st.CaptureOf(ctx, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	run, job, err := st.CaptureRun(ctx, want.RunID, j.ID)
	if err != nil || job.ID != j.ID || job.Status != jobs.StatusSucceeded {
		t.Fatalf("CaptureRun job: %+v, %v", job, err)
	}
	if diff := cmp.Diff(wantRun, run); diff != "" {
		t.Errorf("CaptureRun run (-CaptureOf +CaptureRun):\n%s", diff)
	}
	// Round trips of a comparison's lookup: CaptureOf and GetJob without the
	// key; CaptureRun with it (statements prepared first, as on a warm pool).
	rt := &store.RoundTrips{}
	counted, err := store.Open(ctx, dbURL, store.WithRoundTrips(rt))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(counted.Close)
	lookup := func() {
		if _, _, err := counted.CaptureOf(ctx, j.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := counted.GetJob(ctx, j.ID); err != nil {
			t.Fatal(err)
		}
	}
	keyed := func() {
		if _, _, err := counted.CaptureRun(ctx, want.RunID, j.ID); err != nil {
			t.Fatal(err)
		}
	}
	lookup()
	keyed()
	rt.Reset()
	lookup()
	before := rt.Get("").Total()
	rt.Reset()
	keyed()
	after := rt.Get("").Total()
	t.Logf("Postgres round trips to load a comparison's capture: %d by lookup (CaptureOf, GetJob), %d with the key (CaptureRun)", before, after)
	if after != 1 || before != 2 {
		t.Errorf("round trips: %d by lookup, %d with the key; want 2 and 1", before, after)
	}
	if _, _, err := st.CaptureRun(ctx, want.RunID, newTestID(t)); err != jobs.ErrNotFound {
		t.Errorf("CaptureRun of a missing job: %v, want jobs.ErrNotFound", err)
	}
}

// A job of a plain batch is no run's capture.
func TestSettleOfPlainJobIsNoRunCapture(t *testing.T) {
	t.Parallel()
	st := setup(t)
	ctx := context.Background()
	_, js := newBatch(t, st, 1)
	j, _, err := st.StartJob(ctx, js[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	settled, err := st.CompleteAttempt(ctx, j.ID, j.Attempts, &jobs.Result{}, nil)
	if err != nil || !settled.Current || !settled.Known || settled.RunCapture || settled.Capture != (jobs.RunCaptureRef{}) {
		t.Fatalf("CompleteAttempt of a plain job: %+v, %v", settled, err)
	}
}
