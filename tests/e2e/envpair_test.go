package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/snapq/snapq/client"
)

// pairSite serves the same three pages on every origin; on an origin whose
// badge is set, page "b" shows its badge in another colour.
type pairSite struct{ badge string }

func (p pairSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	page := strings.TrimPrefix(r.URL.Path, "/")
	if page != "a" && page != "b" && page != "c" {
		http.NotFound(w, r)
		return
	}
	badge := "#2255aa"
	if page == "b" && p.badge != "" {
		badge = p.badge
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, `<!doctype html><html><body style="margin:0;font:16px sans-serif;background:#fff">
<h1 style="margin:20px">Page %s</h1>
<div id="badge" style="width:160px;height:60px;margin:20px;background:%s"></div>
<p style="margin:20px">The same text on every origin.</p></body></html>`, page, badge)
}

// An environment pair: two origins on loopback serve the same three pages
// and differ in one element of one page. A run of the suite (targets on the
// first origin) with compare_to_base_url (the second) captures all six
// pages in the run's batch and fails exactly that page's comparison, the
// others pass; no baseline is read or written, approving is refused (409
// pair_run_not_approvable), and a bad compare_to_base_url is a 400 naming
// the field. The CLI's --compare-to gates the same way (exit 1).
func TestEnvironmentPair(t *testing.T) {
	t.Parallel()
	s := sharedStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	snapqCLI(t)
	staging := httptest.NewServer(pairSite{})
	t.Cleanup(staging.Close)
	prod := httptest.NewServer(pairSite{badge: "#cc3311"})
	t.Cleanup(prod.Close)
	c := s.goClient()

	suite, err := c.CreateSuite(ctx, client.SuiteInput{Name: "envpair", Targets: []client.SuiteTarget{
		{URL: staging.URL + "/a", Name: "a"}, {URL: staging.URL + "/b", Name: "b"}, {URL: staging.URL + "/c", Name: "c"}}})
	if err != nil {
		t.Fatal(err)
	}

	for _, bad := range []string{"ftp://example.com", prod.URL + "/path", "not a url"} {
		_, err := c.StartRunWith(ctx, suite.ID, client.RunOptions{CompareToBaseURL: bad})
		var ae *client.Error
		if !errors.As(err, &ae) || ae.StatusCode != http.StatusBadRequest || ae.Field != "compare_to_base_url" {
			t.Fatalf("compare_to_base_url %q: %v; want a 400 naming the field", bad, err)
		}
	}

	started := time.Now()
	run, err := c.StartRunWith(ctx, suite.ID, client.RunOptions{CompareToBaseURL: prod.URL})
	if err != nil {
		t.Fatal(err)
	}
	if deref(run.CompareToBaseURL) != prod.URL {
		t.Fatalf("run's compare_to_base_url %v, want %s", run.CompareToBaseURL, prod.URL)
	}
	s.waitRun(run.ID, 2*time.Minute)
	t.Logf("pair run of 3 pages (6 captures) settled in %s", time.Since(started).Round(time.Millisecond))
	r, err := c.GetRun(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, cmp := range r.Comparisons {
		got[cmp.Target] = cmp.Status
		if cmp.Baseline == nil || cmp.Current == nil || cmp.Baseline.ArtifactID == cmp.Current.ArtifactID {
			t.Fatalf("comparison %+v: want the reference capture as its baseline image", cmp)
		}
	}
	if r.Status != "failed" || len(r.Comparisons) != 3 || got["a"] != "passed" || got["b"] != "failed" || got["c"] != "passed" {
		t.Fatalf("pair run %s: %v; want a and c passed, b failed", r.Status, got)
	}
	if r.Counts.Failed != 1 || r.Counts.Passed != 2 || r.Counts.New != 0 {
		t.Fatalf("counts %+v", r.Counts)
	}

	// Both origins' captures are jobs of the run's batch.
	origins := map[string]int{}
	for j, err := range c.ListJobs(ctx, r.BatchID, client.ListOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		origins[strings.SplitN(strings.TrimPrefix(strings.TrimPrefix(j.URL, "http://"), "https://"), "/", 2)[0]]++
	}
	if origins[strings.TrimPrefix(staging.URL, "http://")] != 3 || origins[strings.TrimPrefix(prod.URL, "http://")] != 3 {
		t.Fatalf("batch jobs by origin %v; want 3 on each", origins)
	}

	// No baselines: none read (every comparison had an image), none written.
	if bs := activeBaselines(t, c, suite.ID, ""); len(bs) != 0 {
		t.Fatalf("baselines after a pair run %+v; want none", bs)
	}
	_, err = c.ApproveRun(ctx, r.ID, client.Approval{All: true})
	var ae *client.Error
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusConflict || ae.Code != "pair_run_not_approvable" {
		t.Fatalf("approving a pair run: %v; want 409 pair_run_not_approvable", err)
	}
	if bs := activeBaselines(t, c, suite.ID, ""); len(bs) != 0 {
		t.Fatalf("baselines after a refused approval %+v", bs)
	}

	// The CLI: the same pair, gated (exit 1, the counts in the summary).
	res := s.runCLI(ctx, "suites", "run", "envpair", "--compare-to", prod.URL, "--wait")
	if res.code != 1 || !strings.Contains(res.stdout, "failed: 1 changed, 0 new, 2 passed") {
		t.Fatalf("CLI pair run: exit %d\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
}
