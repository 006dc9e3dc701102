package store_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/snapq/snapq/regression"
)

// The history a learned mask reads: the runs before the compared one that
// compared the target at the viewport, their changes with whether a human
// approved them; and a comparison's masked regions round-trip.
func TestVolatilityHistory(t *testing.T) {
	t.Parallel()
	st := setup(t)
	ctx := context.Background()
	g, s := newSuite(t, st)
	box := regression.Rect{X: 10, Y: 10, Width: 60, Height: 20}
	masked := []regression.MaskedRegion{{Selector: "#clock", Box: box, Kinds: []string{regression.ChangeText}, ChangedRuns: 1, Runs: 2, Share: 0.5}}
	var runs []*regression.Run
	for i := range 3 {
		r, err := g.StartRun(ctx, s, regression.TriggerManual, nil, regression.RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, r)
		if i == 2 {
			break // the run being compared
		}
		js, _, err := st.ListJobs(ctx, r.BatchID, "", 10, "")
		if err != nil || len(js) != 1 {
			t.Fatalf("run jobs: %v, %v", js, err)
		}
		ch := regression.Change{Kind: regression.ChangeText, Selector: "#clock", Box: box,
			Before: &regression.ElementState{Box: box, Text: "9:41"}, After: &regression.ElementState{Box: box, Text: "9:42"},
			Ancestry: []regression.Node{{Tag: "span", ID: "clock", Selector: "#clock"}}}
		c := &regression.Comparison{ID: newTestID(t), Target: "home", Viewport: "1280x720", Segment: 1,
			Status: regression.CompareFailed, Changes: []regression.Change{ch}}
		if i == 1 {
			c.Status, c.MaskedRegions = regression.ComparePassed, masked
			c.Changes[0].SuppressedBy = regression.SuppressedByVolatility
		}
		if _, err := st.RecordComparisons(ctx, r.ID, js[0].ID, []*regression.Comparison{c}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Approve(ctx, runs[0].ID, regression.Approval{All: true}, "anonymous"); err != nil {
		t.Fatal(err)
	}
	h, err := st.VolatilityHistory(ctx, s.ID, runs[2].ID, "home", "1280x720", 10, 100)
	if err != nil {
		t.Fatal(err)
	}
	type brief struct {
		Run          string
		Approved     bool
		Kind, Sel    string
		SuppressedBy string
		After        regression.Rect
	}
	var got []brief
	for _, tc := range h.Changes {
		got = append(got, brief{tc.RunID, tc.Approved, tc.Change.Kind, tc.Change.Selector, tc.Change.SuppressedBy, tc.Change.After.Box})
	}
	want := []brief{
		{runs[0].ID, true, regression.ChangeText, "#clock", "", box},
		{runs[1].ID, false, regression.ChangeText, "#clock", regression.SuppressedByVolatility, box},
	}
	if h.Runs != 2 || len(got) != 2 {
		t.Fatalf("history: %d runs, %+v; want 2 runs, 2 changes", h.Runs, got)
	}
	if got[0].Run != runs[0].ID {
		got[0], got[1] = got[1], got[0]
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	if other, err := st.VolatilityHistory(ctx, s.ID, runs[2].ID, "home", "800x600", 10, 100); err != nil || other.Runs != 0 || len(other.Changes) != 0 {
		t.Errorf("another viewport: %+v, %v; want nothing", other, err)
	}
	cs, _, err := st.ListComparisons(ctx, runs[1].ID, regression.ComparisonFilter{}, 10, "")
	if err != nil || len(cs) != 1 {
		t.Fatalf("comparisons of run 2: %v, %v", cs, err)
	}
	if diff := cmp.Diff(masked, cs[0].MaskedRegions); diff != "" {
		t.Errorf("masked regions (-want +got):\n%s", diff)
	}
}
