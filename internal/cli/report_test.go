package cli

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/snapq/snapq/client"
)

func reportRun() *client.Run {
	branch, commit := "feature/login", "abc123"
	created := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	finished := created.Add(90 * time.Second)
	return &client.Run{ID: "run-1", Status: client.RunNeedsReview, Branch: &branch, Commit: &commit,
		CreatedAt: created, FinishedAt: &finished, ReviewURL: "http://snapq.test/dashboard/#/runs/run-1",
		Counts: client.RunCounts{Passed: 2, Failed: 1, New: 1, Error: 1},
		Comparisons: []client.Comparison{
			{Target: "home", Viewport: "1280x720", Segment: 0, Status: "passed"},
			{Target: "home", Viewport: "1280x720", Segment: 1, Status: "failed", DiffRatio: 0.0312, Threshold: 0.001,
				Diff: &client.ImageRef{URL: "http://snapq.test/diff.png"}},
			{Target: "pricing | plans", Viewport: "375x812", Segment: 0, Status: "new"},
			{Target: "pricing | plans", Viewport: "375x812", Segment: 1, Status: "new", Approved: true},
			{Target: "login", Viewport: "1280x720", Segment: 0, Status: "error", Message: "navigation_timeout: <b>slow</b>"},
		}}
}

// The JUnit report has one case per comparison: failed and new ones are
// failures, an error is an error, approved and passed ones pass; the
// counts match, and CI tools can parse it.
func TestJUnitReport(t *testing.T) {
	out, err := junitReport(reportRun())
	if err != nil {
		t.Fatal(err)
	}
	var doc junitSuites
	if err := xml.Unmarshal(out, &doc); err != nil {
		t.Fatalf("not XML: %v\n%s", err, out)
	}
	if doc.Tests != 5 || doc.Failures != 2 || doc.Errors != 1 || doc.Time != "90.000" {
		t.Fatalf("totals: tests %d failures %d errors %d time %q", doc.Tests, doc.Failures, doc.Errors, doc.Time)
	}
	cases := doc.Suites[0].Cases
	if c := cases[1]; c.Classname != "home" || c.Name != "viewport 1280x720, segment 1" || c.Failure == nil ||
		!strings.Contains(c.Failure.Text, "0.0312") || !strings.Contains(c.Failure.Text, "diff.png") {
		t.Fatalf("failed comparison: %+v", c)
	}
	if cases[0].Failure != nil || cases[3].Failure != nil || cases[2].Failure == nil || cases[4].Error == nil {
		t.Fatalf("outcomes: %+v", cases)
	}
	props := map[string]string{}
	for _, p := range doc.Suites[0].Props {
		props[p.Name] = p.Value
	}
	if props["branch"] != "feature/login" || props["commit"] != "abc123" || props["status"] != "needs_review" {
		t.Fatalf("properties: %v", props)
	}
}

// The Markdown report lists only what a reviewer must look at, keeps
// page-controlled text inside its table cell, and links the run.
func TestMarkdownReport(t *testing.T) {
	md := string(markdownReport(reportRun()))
	for _, want := range []string{
		"🟡 snapq visual regression: needs_review",
		"1 changed, 1 new, 2 passed, 1 error. [Review the run](http://snapq.test/dashboard/#/runs/run-1)",
		"Branch `feature/login` against `main` at `abc123`.",
		"| home | 1280x720 | 1 | failed | [3.12 %](http://snapq.test/diff.png) |  |",
		`| pricing \| plans | 375x812 | 0 | new | 0.00 % |  |`,
		"navigation_timeout: &lt;b&gt;slow&lt;/b&gt;",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("missing %q in\n%s", want, md)
		}
	}
	if n := strings.Count(md, "\n| "); n != 4 { // the header and three rows
		t.Errorf("%d table lines, want the header and 3 rows (failed, new, error):\n%s", n, md)
	}
}

// The files land where the flags say, directories created.
func TestWriteReports(t *testing.T) {
	dir := t.TempDir()
	j, m := filepath.Join(dir, "a", "snapq.xml"), filepath.Join(dir, "b", "summary.md")
	if err := writeReports(reportRun(), j, m); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{j, m} {
		if fi, err := os.Stat(p); err != nil || fi.Size() == 0 {
			t.Fatalf("%s: %v", p, err)
		}
	}
}

// A history reads oldest first, approvals as A.
func TestOutcomes(t *testing.T) {
	h := []client.TargetRun{{Status: "passed"}, {Status: "failed", Approved: true}, {Status: "failed"}, {Status: "new"}, {Status: "error"}}
	if got := outcomes(h); got != "ENFA." {
		t.Fatalf("outcomes %q, want ENFA.", got)
	}
}
