package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snapq/snapq/client"
)

// headerSite serves /p/<n>: a page with a header box whose colour the test
// toggles (the same box, top left, on every page and at every viewport
// width) over content of its own per page.
type headerSite struct {
	mu    sync.Mutex
	color string
}

func (s *headerSite) set(color string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.color = color
}

func (s *headerSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	color := s.color
	s.mu.Unlock()
	n, ok := strings.CutPrefix(r.URL.Path, "/p/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	fmt.Fprintf(w, `<!doctype html><html><head><style>
		body { margin: 0; background: #fafafa; font-family: sans-serif; }
		#hdr { position: absolute; left: 10px; top: 10px; width: 120px; height: 30px; background: %s; }
		main { position: absolute; left: 10px; top: 60px; font-size: 14px; }
	</style></head><body><div id="hdr"></div><main>Page %s</main></body></html>`, color, n)
}

// Review at scale through the API and the Go client: a header change on 30
// pages × 2 viewports (6 in `make test`) is one change group of 60 (12); rejecting it marks 60
// comparisons rejected (still failed); approving it is one call that
// approves 60 comparisons and writes 60 baselines; then the page toggles
// back to its first approved state and passes as matches_previous naming
// version 1, and to the second, which passes against the active version 2.
// Each step is a phase; a phase that fails stops the ones after it.
func TestChangeGroupsAndApprovalMemory(t *testing.T) {
	t.Parallel()
	start := time.Now()
	s := sharedStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	site := &headerSite{color: "#2255aa"}
	srv := httptest.NewServer(site)
	t.Cleanup(srv.Close)
	c := s.goClient()

	// Triage settings are validated, each bad field named.
	if !t.Run("bad triage settings", func(t *testing.T) { groupsBadTriage(s.as(t), srv.URL) }) {
		return
	}

	pages := proofScale(t, 6, 30) // 30 with SNAPQ_PROOF_SCALE=full (`make proofs`)
	vps := []client.Viewport{{Width: 320, Height: 200}, {Width: 400, Height: 200}}
	var targets []client.SuiteTarget
	for i := 1; i <= pages; i++ {
		targets = append(targets, client.SuiteTarget{URL: fmt.Sprintf("%s/p/%d", srv.URL, i), Name: fmt.Sprintf("page-%02d", i), Viewports: vps})
	}
	suite, err := c.CreateSuite(ctx, client.SuiteInput{Name: "groups", Targets: targets,
		Options: &client.Options{Screenshot: &client.ScreenshotOptions{Mode: client.Ptr("viewport")}}})
	if err != nil {
		t.Fatal(err)
	}
	run := func(s *stack, want string, n int) runResp {
		s.t.Helper()
		r := s.waitRun(s.startRun(suite.ID), 2*time.Minute)
		if r.Status != want || len(r.Comparisons) != n {
			s.t.Fatalf("run: %s %v, want %s with %d comparisons: %s", r.Status, r.Counts, want, n, statuses(r))
		}
		return r
	}

	// A: every comparison new; approved as the first baselines.
	if !t.Run("run A approved", func(t *testing.T) {
		r1 := run(s.as(t), "needs_review", 2*pages)
		if _, err := c.ApproveRun(ctx, r1.ID, client.Approval{All: true}); err != nil {
			t.Fatal(err)
		}
		t.Logf("run A + approval: %s", time.Since(start).Round(time.Millisecond))
	}) {
		return
	}

	// B: the header's colour changes everywhere: one group of 60.
	var v1 map[string]string // target@viewport → version 1's id
	if !t.Run("run B one group", func(t *testing.T) {
		site.set("#cc3311")
		r2 := run(s.as(t), "failed", 2*pages)
		v1 = groupsReview(t, c, r2, suite.ID, pages)
		t.Logf("run B + group review: %s", time.Since(start).Round(time.Millisecond))
	}) {
		return
	}

	// The toggles, on two of the pages (the suite keeps their baselines;
	// fewer captures keep the test short).
	if _, err := c.UpdateSuite(ctx, suite.ID, map[string]any{"targets": targets[:2]}); err != nil {
		t.Fatal(err)
	}
	const kept = 2 * 2
	// Back to A: identical to version 1, every comparison passes as matches_previous.
	if !t.Run("back to A", func(t *testing.T) {
		site.set("#2255aa")
		r3 := run(s.as(t), "passed", kept)
		r3c, err := c.GetRun(ctx, r3.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, cmp := range r3c.Comparisons {
			m := cmp.MatchesPrevious
			if cmp.Status != "passed" || m == nil || m.Version != 1 || m.BaselineID != v1[cmp.Target+"@"+cmp.Viewport] ||
				!strings.Contains(cmp.Message, "identical to baseline version 1") || cmp.DiffPixels == 0 {
				t.Fatalf("run A again: comparison %+v", cmp)
			}
		}
		if gs, err := c.ListGroups(ctx, r3.ID); err != nil || len(gs) != 1 || gs[0].NeedsReview != 0 || gs[0].Counts.Passed != kept {
			t.Fatalf("run A again: groups %+v, %v", gs, err)
		}
	}) {
		return
	}

	// And B again: the active baseline, a plain pass.
	t.Run("back to B", func(t *testing.T) {
		site.set("#cc3311")
		r4 := run(s.as(t), "passed", kept)
		r4c, err := c.GetRun(ctx, r4.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, cmp := range r4c.Comparisons {
			if cmp.Status != "passed" || cmp.MatchesPrevious != nil || cmp.DiffPixels != 0 {
				t.Fatalf("run B again: comparison %+v", cmp)
			}
		}
	})
	t.Logf("four runs: %s", time.Since(start).Round(time.Millisecond))
}

// groupsBadTriage: triage settings are validated, each bad field named.
func groupsBadTriage(s *stack, base string) {
	for _, tc := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"preset": "lenient"}, "preset"},
		{map[string]any{"auto_approve_below": 0.2, "fail_above": 0.1}, "auto_approve_below"},
		{map[string]any{"fail_above": 0}, "fail_above"},
	} {
		body := map[string]any{"name": "bad", "targets": []map[string]any{{"url": base + "/p/1"}}}
		for k, v := range tc.body {
			body[k] = v
		}
		var bad errResp
		if code := s.do("POST", "/v1/suites", body, &bad); code != http.StatusBadRequest || bad.Error.Field != tc.field {
			s.t.Fatalf("suite %v: status %d, %+v; want 400 naming %s", tc.body, code, bad.Error, tc.field)
		}
	}
}

// groupsReview checks run B (the header changed on every page) as one group,
// rejects it (its comparisons stay failed, marked), then approves it in one
// call (2 × pages new baseline versions holding run B's images); it returns
// version 1's baseline id per target@viewport.
func groupsReview(t *testing.T, c *client.Client, r2 runResp, suiteID string, pages int) map[string]string {
	t.Helper()
	ctx := context.Background()
	groups, err := c.ListGroups(ctx, r2.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != 1 {
		t.Fatalf("%d groups, want 1: %+v", len(groups), groups)
	}
	g := groups[0]
	if g.Size != 2*pages || len(g.Comparisons) != 2*pages || g.Counts.Failed != 2*pages || g.NeedsReview != 2*pages ||
		len(g.Targets) != pages || len(g.Viewports) != 2 || g.Representative.Diff == nil || g.Representative.Diff.Thumbnail == nil ||
		g.Representative.GroupKey == nil || *g.Representative.GroupKey != g.ID {
		t.Fatalf("group %+v", g)
	}
	// Rejecting keeps them failed, marked.
	rej, err := c.RejectGroup(ctx, r2.ID, g.ID)
	if err != nil || rej.Rejected != 2*pages || rej.Group.Counts.Rejected != 2*pages || rej.RunStatus != "failed" || rej.Group.NeedsReview != 0 {
		t.Fatalf("reject: %+v, %v", rej, err)
	}
	rr, err := c.GetRun(ctx, r2.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, cmp := range rr.Comparisons {
		if cmp.Status != "failed" || !cmp.Rejected || cmp.RejectedAt == nil || cmp.RejectedBy == nil || cmp.Approved {
			t.Fatalf("rejected comparison %+v", cmp)
		}
	}
	// Approving the group: one call, 60 approvals, 60 new baseline versions.
	res, err := c.ApproveGroup(ctx, r2.ID, g.ID)
	if err != nil || res.Approved != 2*pages || res.Group.Counts.Approved != 2*pages || res.Group.Counts.Rejected != 0 ||
		res.RunStatus != "approved" {
		t.Fatalf("approve group: %+v, %v", res, err)
	}
	current := map[string]string{}
	for _, cmp := range r2.Comparisons {
		current[cmp.Target+"@"+cmp.Viewport] = cmp.Current.ArtifactID
	}
	bases := activeBaselines(t, c, suiteID, "")
	if len(bases) != 2*pages {
		t.Fatalf("%d active baselines, want %d", len(bases), 2*pages)
	}
	for _, b := range bases {
		if b.Version != 2 || b.ArtifactID == nil || *b.ArtifactID != current[b.Target+"@"+b.Viewport] {
			t.Fatalf("baseline %+v; want version 2 holding run B's image", b)
		}
	}
	all, err := c.ListBaselines(ctx, suiteID, true)
	if err != nil || len(all) != 4*pages {
		t.Fatalf("%d baseline versions (%v), want %d", len(all), err, 4*pages)
	}
	v1 := map[string]string{}
	for _, b := range all {
		if b.Version == 1 {
			v1[b.Target+"@"+b.Viewport] = b.ID
		}
	}
	return v1
}
