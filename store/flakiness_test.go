package store_test

import (
	"context"
	"testing"

	"github.com/snapq/snapq/regression"
)

// A target's history over the suite's finished runs, newest first, with
// each run's worst status and approval; a branch's runs stay out of the main
// branch's history. Scored: new (approved) → passed → failed → passed is two
// flips over three transitions.
func TestTargetHistory(t *testing.T) {
	t.Parallel()
	st := setup(t)
	ctx := context.Background()
	g, s := newSuite(t, st)
	var runIDs []string
	for i, status := range []regression.CompareStatus{regression.CompareNew, regression.ComparePassed, regression.CompareFailed, regression.ComparePassed} {
		r, err := g.StartRun(ctx, s, regression.TriggerManual, nil, regression.RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		finishCapture(t, st, r, status)
		if i == 0 {
			if _, err := st.Approve(ctx, r.ID, regression.Approval{All: true}, "anonymous"); err != nil {
				t.Fatal(err)
			}
		}
		runIDs = append(runIDs, r.ID)
	}
	br, err := g.StartRun(ctx, s, regression.TriggerManual, nil, regression.RunOptions{Branch: "feature/x"})
	if err != nil {
		t.Fatal(err)
	}
	finishCapture(t, st, br, regression.CompareFailed)

	hist, err := st.TargetHistory(ctx, s.ID, regression.MainLine, 10)
	if err != nil {
		t.Fatal(err)
	}
	runs := hist["home"]
	if len(hist) != 1 || len(runs) != 4 {
		t.Fatalf("history %+v; want 4 runs of home", hist)
	}
	want := []struct {
		status   regression.CompareStatus
		approved bool
	}{{"passed", false}, {"failed", false}, {"passed", false}, {"new", true}}
	for i, w := range want {
		if runs[i].RunID != runIDs[3-i] || runs[i].Status != w.status || runs[i].Approved != w.approved {
			t.Errorf("run %d: %+v; want %s approved=%v of %s", i, runs[i], w.status, w.approved, runIDs[3-i])
		}
	}
	f := regression.Flakiness(hist)
	if f[0].Flips != 2 || f[0].Score != 2.0/3 {
		t.Errorf("flakiness %+v; want 2 flips, score 2/3", f[0])
	}
	if two, err := st.TargetHistory(ctx, s.ID, regression.MainLine, 2); err != nil || len(two["home"]) != 2 || two["home"][0].RunID != runIDs[3] {
		t.Errorf("the newest 2 runs: %+v, %v", two, err)
	}
	if b, err := st.TargetHistory(ctx, s.ID, "feature/x", 10); err != nil || len(b["home"]) != 1 || b["home"][0].Status != "failed" {
		t.Errorf("branch history %+v, %v", b, err)
	}
}
