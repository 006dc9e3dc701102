package store_test

import (
	"context"
	"testing"

	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/regression"
)

// A comparison's review-at-scale fields round-trip; Reject marks only what
// waits for review and keeps it failed; an approval clears the rejection;
// BaselineVersions lists every version newest first (approval memory).
func TestRejectAndReviewFields(t *testing.T) {
	t.Parallel()
	st := setup(t)
	ctx := context.Background()
	g, s := newSuite(t, st)
	r1, err := g.StartRun(ctx, s, regression.TriggerManual, nil, regression.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	finishCapture(t, st, r1, regression.CompareNew)
	if _, err := st.Approve(ctx, r1.ID, regression.Approval{All: true}, "anonymous"); err != nil {
		t.Fatal(err)
	}

	r2, err := g.StartRun(ctx, s, regression.TriggerManual, nil, regression.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	js, _, err := st.ListJobs(ctx, r2.BatchID, "", 10, "")
	if err != nil || len(js) != 1 {
		t.Fatalf("jobs %v, %v", js, err)
	}
	j, _, err := st.StartJob(ctx, js[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	art := &jobs.Artifact{ID: newTestID(t), JobID: j.ID, Kind: jobs.KindScreenshot, Name: j.Name + ".png", Seq: 1,
		ObjectKey: "k/" + j.ID, ContentType: "image/png", Bytes: 10, Width: 1280, Height: 720, SHA256: "y"}
	if ok, err := st.CompleteJob(ctx, j.ID, j.Attempts, &jobs.Result{}, []*jobs.Artifact{art}); !ok || err != nil {
		t.Fatalf("complete job: %v, %v", ok, err)
	}
	prev := &regression.PreviousMatch{BaselineID: newTestID(t), Version: 7}
	cs := []*regression.Comparison{
		{ID: newTestID(t), Target: "home", Viewport: "1280x720", Segment: 1, Status: regression.CompareFailed,
			CurrentArtifact: art, GroupKey: "g1-aa"},
		{ID: newTestID(t), Target: "home", Viewport: "1280x720", Segment: 2, Status: regression.ComparePassed,
			CurrentArtifact: art, GroupKey: "g1-aa", MatchesPrevious: prev, AutoApproved: true},
	}
	if _, err := st.RecordComparisons(ctx, r2.ID, j.ID, cs, nil); err != nil {
		t.Fatal(err)
	}
	run, err := st.GetRun(ctx, r2.ID)
	if err != nil || len(run.Comparisons) != 2 {
		t.Fatalf("run %+v, %v", run, err)
	}
	c1, c2 := run.Comparisons[0], run.Comparisons[1]
	if c1.GroupKey != "g1-aa" || c1.MatchesPrevious != nil || c1.AutoApproved ||
		c2.MatchesPrevious == nil || *c2.MatchesPrevious != *prev || !c2.AutoApproved {
		t.Fatalf("round trip: %+v %+v", c1, c2)
	}

	n, err := st.Reject(ctx, r2.ID, []string{c1.ID, c2.ID}, "key:r")
	if err != nil || n != 1 { // the passed one is not rejected
		t.Fatalf("reject: %d, %v; want 1", n, err)
	}
	if n, err := st.Reject(ctx, r2.ID, []string{c1.ID}, "key:r"); err != nil || n != 0 {
		t.Fatalf("reject again: %d, %v; want 0", n, err)
	}
	run, _ = st.GetRun(ctx, r2.ID)
	if c := run.Comparisons[0]; c.Status != regression.CompareFailed || c.RejectedAt == nil || c.RejectedBy != "key:r" ||
		run.Status != regression.RunFailed {
		t.Fatalf("rejected: %+v, run %s", c, run.Status)
	}
	if _, err := st.Approve(ctx, r2.ID, regression.Approval{Comparisons: []string{c1.ID}}, "anonymous"); err != nil {
		t.Fatal(err)
	}
	run, err = st.GetRun(ctx, r2.ID) // Approve answers without the comparisons
	if err != nil || run.Comparisons[0].ApprovedAt == nil || run.Comparisons[0].RejectedAt != nil || run.Status != regression.RunApproved {
		t.Fatalf("approve after reject: %+v, %v", run, err)
	}

	vs, err := st.BaselineVersions(ctx, s.ID, []string{regression.MainLine}, regression.CaptureKey{Target: "home", Viewport: "1280x720"})
	if err != nil || len(vs) != 2 || vs[0].Version != 2 || vs[1].Version != 1 || vs[0].Artifact.SHA256 != "y" || vs[1].Artifact.SHA256 != "x" {
		t.Fatalf("versions %+v, %v", vs, err)
	}
}
