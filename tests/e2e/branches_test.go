package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/snapq/snapq/client"
)

// Branch fallback through the API, the Go client and the CLI: main's
// baselines are approved; a branch run against a preview origin, with no
// branch baselines, compares with main's (and fails: the preview's heading
// has another colour; the CLI exits 1 with the summary and review link);
// approving it writes branch baselines and leaves main's untouched; the next
// branch run passes against the branch's own; merging promotes them to main.
func TestBranchBaselines(t *testing.T) {
	t.Parallel()
	s := sharedStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	snapqCLI(t)
	prod := httptest.NewServer(&changingSite{color: "#223344", blocks: 1})
	t.Cleanup(prod.Close)
	preview := httptest.NewServer(&changingSite{color: "#aa2211", blocks: 1})
	t.Cleanup(preview.Close)
	c := s.goClient()

	suite, err := c.CreateSuite(ctx, client.SuiteInput{Name: "branches",
		Targets: []client.SuiteTarget{{URL: prod.URL + "/page", Name: "home"}}})
	if err != nil {
		t.Fatal(err)
	}
	if suite.MainBranch != "main" {
		t.Fatalf("main_branch %q, want the default main", suite.MainBranch)
	}
	first, err := c.StartRun(ctx, suite.ID)
	if err != nil {
		t.Fatal(err)
	}
	r := s.waitRun(first.ID, 2*time.Minute)
	if r.Status != "needs_review" {
		t.Fatalf("first run: %s: %s", r.Status, statuses(r))
	}
	if _, err := c.ApproveRun(ctx, r.ID, client.Approval{All: true}); err != nil {
		t.Fatal(err)
	}
	mainBase := activeBaselines(t, c, suite.ID, "")
	if len(mainBase) != 1 || mainBase[0].Branch != nil {
		t.Fatalf("main baselines %+v", mainBase)
	}

	// A branch run on the preview origin, by the suite's name: main's baseline, a failure, exit 1.
	const sha = "0123456789abcdef0123456789abcdef01234567"
	reports := t.TempDir()
	junitPath, mdPath := filepath.Join(reports, "snapq.xml"), filepath.Join(reports, "summary.md")
	res := s.runCLI(ctx, "suites", "run", "branches", "--branch", "feature/login", "--commit", sha,
		"--base-url", preview.URL, "--wait", "--junit", junitPath, "--markdown", mdPath)
	if res.code != 1 || !strings.Contains(res.stdout, "failed: 1 changed, 0 new, 0 passed") ||
		!strings.Contains(res.stdout, "review: "+s.api+"/#/runs/") {
		t.Fatalf("branch run: exit %d\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	// The reports a CI keeps: one failed JUnit case for the one comparison, a summary naming it.
	junit, err := os.ReadFile(junitPath)
	if err != nil || !strings.Contains(string(junit), `tests="1" failures="1" errors="0"`) ||
		!strings.Contains(string(junit), `<failure message="failed" type="failed">`) {
		t.Fatalf("junit report: %v\n%s", err, junit)
	}
	md, err := os.ReadFile(mdPath)
	if err != nil || !strings.Contains(string(md), "1 changed, 0 new, 0 passed") || !strings.Contains(string(md), "| failed |") {
		t.Fatalf("markdown report: %v\n%s", err, md)
	}
	runs, err := c.ListRunsPage(ctx, suite.ID, client.ListOptions{Limit: 1})
	if err != nil || len(runs.Items) != 1 {
		t.Fatalf("runs %+v, %v", runs, err)
	}
	br, err := c.GetRun(ctx, runs.Items[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if deref(br.Branch) != "feature/login" || deref(br.BaseBranch) != "main" || deref(br.Commit) != sha ||
		deref(br.BaseURL) != preview.URL || len(br.Comparisons) != 1 {
		t.Fatalf("branch run %+v", br)
	}
	if cmp := br.Comparisons[0]; cmp.Status != "failed" || cmp.Baseline == nil || cmp.Baseline.ArtifactID != *mainBase[0].ArtifactID {
		t.Fatalf("branch comparison %+v; want a failure against main's baseline %s", cmp, *mainBase[0].ArtifactID)
	}

	// Approving on the branch writes the branch's baselines only.
	if _, err := c.ApproveRun(ctx, br.ID, client.Approval{All: true}); err != nil {
		t.Fatal(err)
	}
	if got := activeBaselines(t, c, suite.ID, ""); len(got) != 1 || got[0].ID != mainBase[0].ID {
		t.Fatalf("main baselines after a branch approval %+v; want main's, untouched", got)
	}
	branchBase := activeBaselines(t, c, suite.ID, "feature/login")
	if len(branchBase) != 1 || deref(branchBase[0].Branch) != "feature/login" ||
		*branchBase[0].ArtifactID != br.Comparisons[0].Current.ArtifactID {
		t.Fatalf("branch baselines %+v", branchBase)
	}

	// The branch's next run compares with its own baseline and passes: exit 0.
	res = s.runCLI(ctx, "suites", "run", suite.ID, "--branch", "feature/login", "--base-url", preview.URL, "--wait")
	if res.code != 0 || !strings.Contains(res.stdout, "passed: 0 changed, 0 new, 1 passed") {
		t.Fatalf("second branch run: exit %d\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}

	// Merge: the branch's baseline becomes main's next version; the branch has none left.
	var bad errResp
	if code := s.do("POST", "/v1/suites/"+suite.ID+"/branches/main/merge", nil, &bad); code != http.StatusBadRequest ||
		bad.Error.Field != "branch" {
		t.Fatalf("merging main: status %d, %+v", code, bad.Error)
	}
	m, err := c.MergeBranch(ctx, suite.ID, "feature/login", "")
	if err != nil || m.Promoted != 1 || m.BaseBranch != "main" || m.Branch != "feature/login" {
		t.Fatalf("merge: %+v, %v", m, err)
	}
	got := activeBaselines(t, c, suite.ID, "")
	if len(got) != 1 || got[0].Version != 2 || *got[0].ArtifactID != *branchBase[0].ArtifactID {
		t.Fatalf("main baselines after merge %+v; want version 2 holding the branch's image", got)
	}
	if left := activeBaselines(t, c, suite.ID, "feature/login"); len(left) != 0 {
		t.Fatalf("branch baselines after merge %+v; want none", left)
	}
}

func activeBaselines(t *testing.T, c *client.Client, suiteID, branch string) []client.Baseline {
	t.Helper()
	bs, err := c.ListBranchBaselines(context.Background(), suiteID, branch, false)
	if err != nil {
		t.Fatal(err)
	}
	return bs
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
