package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/snapq/snapq/regression"
	"github.com/snapq/snapq/store"
)

// onlySuite limits a shared database's stale branches to one suite's, so
// the pass touches nothing of other tests.
type onlySuite struct {
	*store.Store
	suiteID string
}

func (o onlySuite) StaleBranches(ctx context.Context, now time.Time, def, limit int) ([]regression.StaleBranch, error) {
	all, err := o.Store.StaleBranches(ctx, now, def, 100000)
	var out []regression.StaleBranch
	for _, b := range all {
		if b.SuiteID == o.suiteID {
			out = append(out, b)
		}
	}
	return out, err
}

// Branch baselines expire with their branch's last run or approval: of two
// branches, the one idle for 40 days loses every version of its baselines
// at the default 30 days and the one active yesterday keeps its; the main
// branch's, idle as long, are never touched; a dry run deletes nothing; a
// suite's branch_baseline_days overrides the default (0: never).
func TestBranchBaselineExpiry(t *testing.T) {
	t.Parallel()
	st := setup(t)
	ctx := context.Background()
	g, s := newSuite(t, st)

	approve := func(opts regression.RunOptions, status regression.CompareStatus) *regression.Run {
		t.Helper()
		r, err := g.StartRun(ctx, s, regression.TriggerManual, nil, opts)
		if err != nil {
			t.Fatal(err)
		}
		got, err := st.GetRun(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		finishCapture(t, st, got, status)
		if _, err := st.Approve(ctx, r.ID, regression.Approval{All: true}, "anonymous"); err != nil {
			t.Fatal(err)
		}
		return got
	}
	approve(regression.RunOptions{}, regression.CompareNew)
	approve(regression.RunOptions{Branch: "feature/old"}, regression.CompareFailed)
	approve(regression.RunOptions{Branch: "feature/old"}, regression.CompareFailed) // a second version
	approve(regression.RunOptions{Branch: "feature/new"}, regression.CompareFailed)
	age := func(branch string, days int) {
		t.Helper()
		if err := st.ExecForTest(ctx, `UPDATE baselines SET approved_at = now() - $3 * interval '1 day' WHERE suite_id = $1 AND branch = $2`,
			s.ID, branch, days); err != nil {
			t.Fatal(err)
		}
		runBranch := branch
		if branch == regression.MainLine {
			runBranch = ""
		}
		if err := st.ExecForTest(ctx, `UPDATE runs SET created_at = now() - $3 * interval '1 day' WHERE suite_id = $1 AND branch = $2`,
			s.ID, runBranch, days); err != nil {
			t.Fatal(err)
		}
	}
	age(regression.MainLine, 40)
	age("feature/old", 40)
	age("feature/new", 1)
	count := func(branch string) int {
		t.Helper()
		bs, err := st.ListBaselines(ctx, s.ID, branch, true)
		if err != nil {
			t.Fatal(err)
		}
		return len(bs)
	}
	if count("feature/old") != 2 || count("feature/new") != 1 || count(regression.MainLine) != 1 {
		t.Fatalf("baselines before: old %d, new %d, main %d", count("feature/old"), count("feature/new"), count(regression.MainLine))
	}

	exp := &regression.BranchExpiry{Repo: onlySuite{st, s.ID}}
	rep, err := exp.ExpireBaselines(ctx, regression.DefaultBranchBaselineDays, true)
	if err != nil || rep.Branches != 1 || rep.Baselines != 2 || count("feature/old") != 2 {
		t.Fatalf("dry run: %+v, %v; old has %d; want 1 branch, 2 rows reported and none deleted", rep, err, count("feature/old"))
	}
	rep, err = exp.ExpireBaselines(ctx, regression.DefaultBranchBaselineDays, false)
	if err != nil || rep.Branches != 1 || rep.Baselines != 2 || len(rep.Expired) != 1 || rep.Expired[0].Branch != "feature/old" ||
		rep.Expired[0].Days != 30 {
		t.Fatalf("pass: %+v, %v; want feature/old's 2 rows", rep, err)
	}
	if count("feature/old") != 0 || count("feature/new") != 1 || count(regression.MainLine) != 1 {
		t.Fatalf("baselines after: old %d, new %d, main %d; want 0, 1, 1", count("feature/old"), count("feature/new"), count(regression.MainLine))
	}
	// A run of feature/old now would compare with main's again.
	act, err := st.ActiveBaselines(ctx, s.ID, []string{"feature/old", regression.MainLine},
		regression.CaptureKey{Target: "home", Viewport: "1280x720"})
	if err != nil || len(act) != 1 || act[0].Branch != regression.MainLine {
		t.Fatalf("feature/old's baselines after expiry: %+v, %v; want main's", act, err)
	}

	// The suite's own setting: 0 never expires; 1 day expires feature/new (a day idle).
	age("feature/new", 2)
	zero, one := 0, 1
	s.Spec.BranchBaselineDays = &zero
	if err := st.UpdateSuite(ctx, s); err != nil {
		t.Fatal(err)
	}
	if rep, err := exp.ExpireBaselines(ctx, 1, false); err != nil || rep.Branches != 0 || count("feature/new") != 1 {
		t.Fatalf("branch_baseline_days 0: %+v, %v; want nothing expired", rep, err)
	}
	s.Spec.BranchBaselineDays = &one
	if err := st.UpdateSuite(ctx, s); err != nil {
		t.Fatal(err)
	}
	if rep, err := exp.ExpireBaselines(ctx, 0, false); err != nil || rep.Branches != 1 || count("feature/new") != 0 {
		t.Fatalf("branch_baseline_days 1 (default off): %+v, %v; want feature/new expired", rep, err)
	}
	if count(regression.MainLine) != 1 {
		t.Fatal("the main branch's baseline went")
	}
}
