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

// agoSite serves /news: a heading and a relative time ("50 seconds ago")
// the test moves on; gone removes the time's element.
type agoSite struct {
	mu      sync.Mutex
	seconds int
	gone    bool
}

func (s *agoSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	seconds, gone := s.seconds, s.gone
	s.mu.Unlock()
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	ago := fmt.Sprintf(`<span id="ago">%d seconds ago</span>`, seconds)
	if gone {
		ago = ""
	}
	fmt.Fprintf(w, `<!doctype html><html><head><style>body{margin:0;font:16px/20px monospace}
		h1{margin:10px;font-size:24px;line-height:30px}p{margin:10px;height:20px}</style></head><body>
		<h1>Release notes</h1><p id="meta">Updated %s</p></body></html>`, ago)
}

func (s *agoSite) set(f func(*agoSite)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}

// Issue 30, mask mode: a suite with volatility {mode: mask, min_runs: 2}
// fails the first run whose relative time moved on; once 2 earlier runs
// taught it that the time changes by itself, a run whose only change is the
// time passes, listing the masked region on its comparison; a run whose
// time element is removed still fails.
func TestVolatilityMaskLearned(t *testing.T) {
	t.Parallel()
	s := sharedStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	site := &agoSite{seconds: 50}
	srv := httptest.NewServer(site)
	t.Cleanup(srv.Close)
	c := s.goClient()
	suite, err := c.CreateSuite(ctx, client.SuiteInput{Name: "volatile-news",
		Targets:    []client.SuiteTarget{{URL: srv.URL + "/news", Name: "news", Viewports: []client.Viewport{{Width: 480, Height: 160}}}},
		Volatility: &client.VolatilitySettings{Mode: "mask", MinRuns: 2, Threshold: 0.5}})
	if err != nil {
		t.Fatal(err)
	}
	if suite.Volatility != (client.VolatilitySettings{Mode: "mask", MinRuns: 2, Threshold: 0.5}) {
		t.Fatalf("stored volatility = %+v", suite.Volatility)
	}
	var lastRun string
	run := func(want string) client.Comparison {
		t.Helper()
		r := s.waitRun(s.startRun(suite.ID), 2*time.Minute)
		lastRun = r.ID
		got, err := c.GetRun(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != want || len(got.Comparisons) != 1 {
			t.Fatalf("run %s: %s, want %s with one comparison: %s", r.ID, got.Status, want, statuses(r))
		}
		return got.Comparisons[0]
	}
	first := s.waitRun(s.startRun(suite.ID), 2*time.Minute)
	s.approveAll(first.ID)

	site.set(func(s *agoSite) { s.seconds = 51 })
	failed := run("failed") // one earlier run: nothing learned yet
	changes, err := c.ComparisonChanges(ctx, failed.ID)
	if err != nil || len(changes.Changes) != 1 || changes.Changes[0].Kind != "text_changed" || len(failed.MaskedRegions) != 0 {
		t.Fatalf("the time moved on: changes %+v (%v), masked %+v; want one text change, nothing masked", changes, err, failed.MaskedRegions)
	}
	ago := changes.Changes[0].Selector

	site.set(func(s *agoSite) { s.seconds = 52 })
	passed := run("passed") // changed in 1 of 2 earlier runs, none approved: volatile
	if len(passed.MaskedRegions) != 1 || passed.MaskedRegions[0].Selector != ago || passed.MaskedRegions[0].ChangedRuns != 1 ||
		passed.MaskedRegions[0].Runs != 2 || passed.MaskedRegions[0].Box.Width <= 0 {
		t.Fatalf("masked regions = %+v, want %s learned from 1 of 2 runs, with its box", passed.MaskedRegions, ago)
	}

	// The dashboard outlines the masked region on the comparison and draws
	// the suite's heat map over the baseline.
	ui := openDashboard(t, s.api+"/#/runs/"+lastRun)
	ui.wait("the masked region outlined", time.Minute, `() => document.querySelectorAll('.masked-box').length >= 1 && !!document.querySelector('[data-masked="1"]')`)
	if got := ui.text(".masked li code"); got != ago {
		ui.fatalf("masked region listed as %q, want %q", got, ago)
	}
	if err := ui.page.Navigate(s.api + "/#/suites/" + suite.ID); err != nil {
		t.Fatal(err)
	}
	ui.wait("the heat map", time.Minute, `(sel) => !!document.querySelector('.heat-map[data-target="news"] .heat-box') && !!document.querySelector('.heat-map li[data-selector="' + sel + '"]')`, ago)

	site.set(func(s *agoSite) { s.gone = true })
	removed := run("failed") // the region's element went: not volatility
	changes, err = c.ComparisonChanges(ctx, removed.ID)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, ch := range changes.Changes {
		kinds = append(kinds, ch.Kind+" "+ch.Selector+" "+ch.SuppressedBy)
	}
	if !strings.Contains(strings.Join(kinds, "\n"), "removed "+ago+" ") || len(removed.MaskedRegions) != 0 {
		t.Fatalf("removed time: changes %q, masked %+v; want %s removed, unmasked", kinds, removed.MaskedRegions, ago)
	}
}
