package store_test

import (
	"context"
	"testing"

	"github.com/snapq/snapq/regression"
)

// A branch run falls back to the main branch's baselines, approving it
// writes the branch's only, a second branch run compares with the branch's,
// and merging promotes them to the main branch and empties the branch.
func TestBranchBaselines(t *testing.T) {
	t.Parallel()
	st := setup(t)
	ctx := context.Background()
	g, s := newSuite(t, st)
	key := regression.CaptureKey{Target: "home", Viewport: "1280x720"}

	main, err := g.StartRun(ctx, s, regression.TriggerManual, nil, regression.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, mainArt := finishCapture(t, st, main, regression.CompareNew)
	if _, err := st.Approve(ctx, main.ID, regression.Approval{All: true}, "anonymous"); err != nil {
		t.Fatal(err)
	}

	opts := regression.RunOptions{Branch: "feature/login", Commit: "0123abcd", BaseURL: "http://127.0.0.1:9999"}
	br, err := g.StartRun(ctx, s, regression.TriggerManual, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	got, err := st.GetRun(ctx, br.ID)
	if err != nil || got.Branch != "feature/login" || got.BaseBranch != "main" || got.Commit != "0123abcd" ||
		got.BaseURL != "http://127.0.0.1:9999" || got.Spec.Targets[0].URL != "http://127.0.0.1:9999/" {
		t.Fatalf("branch run %+v, %v", got, err)
	}
	chain := got.BaselineBranches()
	active, err := st.ActiveBaselines(ctx, s.ID, chain, key)
	if err != nil || len(active) != 1 || active[0].Branch != regression.MainLine || active[0].Artifact.ID != mainArt.ID {
		t.Fatalf("branch run without branch baselines: %+v, %v; want main's", active, err)
	}
	_, brArt := finishCapture(t, st, got, regression.CompareFailed)
	if _, err := st.Approve(ctx, br.ID, regression.Approval{All: true}, "anonymous"); err != nil {
		t.Fatal(err)
	}
	mainBases, err := st.ListBaselines(ctx, s.ID, regression.MainLine, true)
	if err != nil || len(mainBases) != 1 || mainBases[0].Artifact.ID != mainArt.ID {
		t.Fatalf("main baselines after a branch approval: %+v, %v; want main's one, untouched", mainBases, err)
	}
	active, err = st.ActiveBaselines(ctx, s.ID, chain, key)
	if err != nil || len(active) != 1 || active[0].Branch != "feature/login" || active[0].Version != 1 || active[0].Artifact.ID != brArt.ID {
		t.Fatalf("branch baselines after approval: %+v, %v", active, err)
	}
	// The main branch still sees its own.
	active, err = st.ActiveBaselines(ctx, s.ID, []string{regression.MainLine}, key)
	if err != nil || len(active) != 1 || active[0].Artifact.ID != mainArt.ID {
		t.Fatalf("main's active baselines: %+v, %v", active, err)
	}

	n, err := st.MergeBranch(ctx, s.ID, "feature/login", regression.MainLine, "ci")
	if err != nil || n != 1 {
		t.Fatalf("merge: %d, %v; want 1 promoted", n, err)
	}
	mainBases, err = st.ListBaselines(ctx, s.ID, regression.MainLine, false)
	if err != nil || len(mainBases) != 1 || mainBases[0].Version != 2 || mainBases[0].Artifact.ID != brArt.ID || mainBases[0].ApprovedBy != "ci" {
		t.Fatalf("main baselines after merge: %+v, %v; want version 2 with the branch's image", mainBases, err)
	}
	left, err := st.ListBaselines(ctx, s.ID, "feature/login", true)
	if err != nil || len(left) != 0 {
		t.Fatalf("branch baselines after merge: %+v, %v; want none", left, err)
	}
	if n, err := st.MergeBranch(ctx, s.ID, "feature/login", regression.MainLine, "ci"); err != nil || n != 0 {
		t.Fatalf("second merge: %d, %v; want 0", n, err)
	}
}
