package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/regression"
)

// A run's comparisons page in the run's order with a keyset cursor, filtered
// by status and approval; approving by status approves exactly those.
func TestListComparisonsPagesAndApproveByStatus(t *testing.T) {
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
	// 25 targets × 1 segment: every 5th new, the rest failed but every 5th+1 passed.
	var cs []*regression.Comparison
	want := map[regression.CompareStatus]int{}
	for i := range 25 {
		status := regression.CompareFailed
		switch i % 5 {
		case 0:
			status = regression.CompareNew
		case 1:
			status = regression.ComparePassed
		}
		want[status]++
		cs = append(cs, &regression.Comparison{ID: newTestID(t), Target: fmt.Sprintf("page-%02d", 24-i),
			Viewport: "1280x720", Segment: 1, Status: status})
	}
	if _, err := st.RecordComparisons(ctx, r.ID, js[0].ID, cs, nil); err != nil {
		t.Fatal(err)
	}

	page := func(f regression.ComparisonFilter, limit int) []string {
		t.Helper()
		var got []string
		cursor := ""
		for range 100 {
			list, next, err := st.ListComparisons(ctx, r.ID, f, limit, cursor)
			if err != nil {
				t.Fatal(err)
			}
			if len(list) > limit {
				t.Fatalf("page of %d, limit %d", len(list), limit)
			}
			for _, c := range list {
				if len(f.Statuses) > 0 && c.Status != f.Statuses[0] {
					t.Fatalf("%s in a %v page", c.Status, f.Statuses)
				}
				got = append(got, c.Target)
			}
			if next == "" {
				return got
			}
			cursor = next
		}
		t.Fatal("no last page")
		return nil
	}
	all := page(regression.ComparisonFilter{}, 7)
	if len(all) != 25 || all[0] != "page-00" || all[24] != "page-24" {
		t.Fatalf("all pages: %v", all)
	}
	for i := 1; i < len(all); i++ {
		if all[i] <= all[i-1] {
			t.Fatalf("out of order at %d: %v", i, all)
		}
	}
	if got := page(regression.ComparisonFilter{Statuses: []regression.CompareStatus{regression.CompareFailed}}, 4); len(got) != want[regression.CompareFailed] {
		t.Fatalf("failed: %d, want %d", len(got), want[regression.CompareFailed])
	}
	if _, _, err := st.ListComparisons(ctx, r.ID, regression.ComparisonFilter{}, 5, newTestID(t)); !errors.As(err, new(*jobs.ValidationError)) {
		t.Fatalf("foreign cursor: %v, want a validation error", err)
	}

	run, err := st.Approve(ctx, r.ID, regression.Approval{Statuses: []regression.CompareStatus{regression.CompareNew}}, "anonymous")
	if err != nil || run.Comparisons != nil || run.Counts.New != want[regression.CompareNew] {
		t.Fatalf("approve new: %+v, %v", run, err)
	}
	no, yes := false, true
	if got := page(regression.ComparisonFilter{Approved: &yes}, 100); len(got) != want[regression.CompareNew] {
		t.Fatalf("approved after approving new: %d, want %d", len(got), want[regression.CompareNew])
	}
	open := page(regression.ComparisonFilter{Statuses: []regression.CompareStatus{regression.CompareFailed}, Approved: &no}, 100)
	if len(open) != want[regression.CompareFailed] {
		t.Fatalf("unapproved failed: %d, want %d", len(open), want[regression.CompareFailed])
	}
}
