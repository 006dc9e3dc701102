package store_test

import (
	"context"
	"testing"

	"github.com/snapq/snapq/diff"
	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/regression"
)

// In aligned mode approving a changed segment approves the capture's
// segments whose content only moved and removes the baseline segments past
// its end, so the baseline stays one page; unmoved passed segments keep
// their baseline. The comparison's mode, shift and hunks round-trip.
func TestApproveAlignedPage(t *testing.T) {
	t.Parallel()
	st := setup(t)
	ctx := context.Background()
	g, s := newSuite(t, st)
	r, err := g.StartRun(ctx, s, regression.TriggerManual, nil, regression.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	js, _, err := st.ListJobs(ctx, r.BatchID, "", 10, "")
	if err != nil || len(js) != 1 {
		t.Fatalf("run jobs: %v, %v", js, err)
	}
	j, _, err := st.StartJob(ctx, js[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	var arts []*jobs.Artifact
	for i := range 3 {
		arts = append(arts, &jobs.Artifact{ID: newTestID(t), JobID: j.ID, Kind: jobs.KindScreenshot,
			Name: j.Name + "-00" + string(rune('1'+i)) + ".png", Seq: i + 1, ObjectKey: "k/" + j.ID + string(rune('1'+i)),
			ContentType: "image/png", Bytes: 10, Width: 1280, Height: 720, SHA256: "x"})
	}
	if ok, err := st.CompleteJob(ctx, j.ID, j.Attempts, &jobs.Result{}, arts); !ok || err != nil {
		t.Fatalf("complete job: %v, %v", ok, err)
	}
	ins := []regression.Hunk{{Kind: diff.HunkInserted, A0: 500, A1: 500, B0: 500, B1: 537}}
	cmp := func(seg int, status regression.CompareStatus, cur *jobs.Artifact, shift int, hs []regression.Hunk) *regression.Comparison {
		return &regression.Comparison{ID: newTestID(t), Target: "home", Viewport: "1280x720", Segment: seg, Status: status,
			CurrentArtifact: cur, DiffMode: regression.DiffAligned, ShiftedPx: shift, Hunks: hs}
	}
	cs := []*regression.Comparison{
		cmp(1, regression.CompareFailed, arts[0], 0, ins),
		cmp(2, regression.ComparePassed, arts[1], 37, nil),
		cmp(3, regression.ComparePassed, arts[2], 0, nil), // did not move: keeps its baseline
		cmp(4, regression.ComparePassed, nil, -683, nil),  // moved off the page's end
	}
	if _, err := st.RecordComparisons(ctx, r.ID, j.ID, cs, nil); err != nil {
		t.Fatal(err)
	}
	got, err := st.GetRun(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if c := got.Comparisons[0]; c.DiffMode != regression.DiffAligned || len(c.Hunks) != 1 || c.Hunks[0] != ins[0] {
		t.Fatalf("stored comparison %+v", c)
	}
	if c := got.Comparisons[1]; c.ShiftedPx != 37 || c.Hunks == nil || len(c.Hunks) != 0 {
		t.Fatalf("stored shifted comparison %+v", c)
	}
	if _, err := st.Approve(ctx, r.ID, regression.Approval{Comparisons: []string{cs[0].ID}}, "anonymous"); err != nil {
		t.Fatal(err)
	}
	hist, err := st.ListBaselines(ctx, s.ID, regression.MainLine, true)
	if err != nil {
		t.Fatal(err)
	}
	segs := map[int]*regression.Baseline{}
	for _, b := range hist {
		segs[b.Segment] = b
	}
	if len(hist) != 3 || segs[1] == nil || segs[2] == nil || segs[4] == nil || segs[3] != nil {
		t.Fatalf("baselines %+v, want segments 1, 2 and 4", segs)
	}
	if segs[1].Artifact.ID != arts[0].ID || segs[2].Artifact.ID != arts[1].ID || segs[4].Artifact != nil {
		t.Fatalf("baseline images: 1 %+v, 2 %+v, 4 %+v", segs[1].Artifact, segs[2].Artifact, segs[4].Artifact)
	}
}
