package regression

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fakeChanges is a RuleStore of stored changes only.
type fakeChanges struct {
	RuleStore
	runs int
	tcs  []TargetChange
}

func (f *fakeChanges) RecentChanges(context.Context, string, int, int) ([]TargetChange, error) {
	return f.tcs, nil
}
func (f *fakeChanges) RecentRunCount(context.Context, string, int) (int, error) { return f.runs, nil }

// volatileHistory is 10 runs of a page: its clock's text changed in 8, its
// hero image in 2, a banner was removed in 9 (a layout change, not
// volatility) and a rule suppressed the footer's every change.
func volatileHistory() *fakeChanges {
	f := &fakeChanges{runs: 10}
	add := func(run int, kind, sel, suppressedBy string) {
		f.tcs = append(f.tcs, TargetChange{Target: "home", Viewport: "800x600", RunID: fmt.Sprintf("run-%d", run),
			Change: Change{Kind: kind, Selector: sel, SuppressedBy: suppressedBy,
				Ancestry: []Node{{Tag: "body", Selector: "body"}, {Tag: "span", ID: sel[1:], Selector: sel}}}})
	}
	for run := range 10 {
		if run < 8 {
			add(run, ChangeText, "#clock", "")
			add(run, ChangeText, "#clock", "") // twice in one segment pair: one run
		}
		if run < 2 {
			add(run, ChangeImage, "#hero", "")
		}
		if run < 9 {
			add(run, ChangeRemoved, "#banner", "")
		}
		add(run, ChangeText, "#footer", "r1")
	}
	return f
}

// Suggest mode: the region that changed in 8 of 10 runs is volatile and
// suggested as an ignore_element rule whose preview counts exactly the
// changes it would have suppressed; a rarely changing region is listed,
// not suggested; a removal and suppressed changes are not volatility.
func TestLearnVolatility(t *testing.T) {
	t.Parallel()
	s := &Suite{ID: "s", Spec: SuiteSpec{Targets: []SuiteTarget{{Name: "home"}}}}
	v, err := LearnVolatility(context.Background(), volatileHistory(), s, VolatilityQuery{})
	if err != nil {
		t.Fatal(err)
	}
	wantRegions := []Region{
		{Target: "home", Viewport: "800x600", Selector: "#clock", ChangedRuns: 8, Share: 0.8, Volatile: true, Kinds: []string{ChangeText}},
		{Target: "home", Viewport: "800x600", Selector: "#hero", ChangedRuns: 2, Share: 0.2, Kinds: []string{ChangeImage}},
	}
	if diff := cmp.Diff(wantRegions, v.Regions); diff != "" {
		t.Errorf("regions (-want +got):\n%s", diff)
	}
	wantSugg := []Suggestion{{Rule: SuggestedRule{Kind: RuleIgnoreElement, Selector: "#clock", Target: "home"},
		Preview: Preview{Runs: 10, Changes: 16 + 2 + 9, WouldSuppress: 16}}}
	if diff := cmp.Diff(wantSugg, v.Suggestions); diff != "" {
		t.Errorf("suggestions (-want +got):\n%s", diff)
	}
	// Fewer runs than min_runs (4 of 5): listed, nothing volatile yet.
	young := volatileHistory()
	young.runs = 4
	few, err := LearnVolatility(context.Background(), young, s, VolatilityQuery{})
	if err != nil || len(few.Suggestions) != 0 || len(few.Regions) != 2 || few.Regions[0].Volatile {
		t.Errorf("4 runs: %+v, %v; want regions, none volatile, no suggestion", few, err)
	}
	// A human approved a change of #clock in one run: a real change, so
	// the region is listed with it and neither volatile nor suggested.
	approved := volatileHistory()
	approved.tcs[0].Approved = true
	av, err := LearnVolatility(context.Background(), approved, s, VolatilityQuery{})
	if err != nil || len(av.Suggestions) != 0 || av.Regions[0].Selector != "#clock" || av.Regions[0].Volatile || av.Regions[0].ApprovedRuns != 1 {
		t.Errorf("an approved change: %+v, %v; want #clock listed with approved_runs 1, not volatile, no suggestion", av, err)
	}
	if _, err := LearnVolatility(context.Background(), volatileHistory(), s, VolatilityQuery{Threshold: 1.5}); err == nil {
		t.Error("threshold 1.5 accepted")
	}
}

// TestPageSizedRegionsNeverVolatile: a region as tall as the page's content
// (a change blamed on "body > main") or covering most of the viewport is not
// offered or masked; a carousel-sized widget is.
func TestPageSizedRegionsNeverVolatile(t *testing.T) {
	for _, tc := range []struct {
		box  *Rect
		want bool
	}{
		{&Rect{X: 0, Y: 80, Width: 1280, Height: 2400}, true}, // taller than the viewport
		{&Rect{X: 0, Y: 0, Width: 1280, Height: 640}, true},   // 89 % of it
		{&Rect{X: 0, Y: 100, Width: 1280, Height: 400}, false},
		{&Rect{X: 10, Y: 10, Width: 120, Height: 20}, false},
		{nil, false},
	} {
		if got := pageSized("1280x720", tc.box); got != tc.want {
			t.Errorf("pageSized(1280x720, %+v) = %v, want %v", tc.box, got, tc.want)
		}
	}
	if pageSized("bogus", &Rect{Width: 5000, Height: 5000}) {
		t.Error("an unreadable viewport must not make a region page-sized")
	}
}
