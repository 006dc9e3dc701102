package store_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/regression"
)

// JobCounts and RunCounts count rows by status as the jobs move through
// their lifecycle.
func TestStatusCounts(t *testing.T) {
	t.Parallel()
	st := setup(t)
	ctx := context.Background()

	empty, err := st.JobCounts(ctx)
	if err != nil || len(empty) != 0 {
		t.Fatalf("JobCounts of an empty schema = %v, %v; want no statuses", empty, err)
	}
	_, js := newBatch(t, st, 4)
	// Job 0 succeeds, job 1 fails for good, job 2 is running, job 3 waits.
	for i := range 3 {
		if _, started, err := st.StartJob(ctx, js[i].ID); err != nil || !started {
			t.Fatalf("StartJob %d: %v, %v", i, started, err)
		}
	}
	if ok, err := st.CompleteJob(ctx, js[0].ID, 1, &jobs.Result{}, nil); !ok || err != nil {
		t.Fatalf("CompleteJob: %v, %v", ok, err)
	}
	if err := st.FailJob(ctx, js[1].ID, 1, jobs.JobError{Code: "dns_failure", Message: "no such host"}, nil, true); err != nil {
		t.Fatal(err)
	}
	got, err := st.JobCounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{string(jobs.StatusSucceeded): 1, string(jobs.StatusFailed): 1, string(jobs.StatusRunning): 1, string(jobs.StatusQueued): 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("JobCounts (-want +got):\n%s", diff)
	}

	runs, err := st.RunCounts(ctx)
	if err != nil || len(runs) != 0 {
		t.Fatalf("RunCounts without runs = %v, %v", runs, err)
	}
	g, s := newSuite(t, st)
	for range 2 {
		if _, err := g.StartRun(ctx, s, regression.TriggerManual, nil, regression.RunOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	runs, err = st.RunCounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int64{string(regression.RunRunning): 2}, runs); diff != "" {
		t.Errorf("RunCounts (-want +got):\n%s", diff)
	}
	// A run's capture jobs are jobs too.
	if got, _ := st.JobCounts(ctx); got[string(jobs.StatusQueued)] != 3 {
		t.Errorf("queued jobs after two one-page runs = %d, want 3", got[string(jobs.StatusQueued)])
	}
}
