package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// A suite that discovers its targets from a sitemap: the first run's pages are new;
// after approval, the sitemap drops one page and lists another, and the next run shows
// the unchanged page passed, the added one new and the dropped one missing — the suite
// itself never edited. Approving the run removes the dropped page's baseline.
func TestSuiteDiscovery(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	pages := []string{"/", "/about", "/old"}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/sitemap.xml" {
			mu.Lock()
			var locs []string
			for _, p := range pages {
				locs = append(locs, "http://"+r.Host+p)
			}
			mu.Unlock()
			w.Write([]byte(sitemapXML("urlset", locs))) //nolint:errcheck
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>%s</title><body style="margin:0;background:#fff;font:24px sans-serif">
			<div style="background:#2a6;color:#fff;padding:20px">%s</div><div style="display:flex">
			<div style="width:150px;height:150px;background:#c33"></div><p style="padding:10px">Some text on the page %s.</p></div>`,
			r.URL.Path, r.URL.Path, r.URL.Path)
	}))
	t.Cleanup(srv.Close)
	s := sharedStack(t)

	var bad errResp
	if code := s.do("POST", "/v1/suites", map[string]any{"name": "d", "discover": map[string]any{"sitemap": "ftp://x/s.xml"}}, &bad); code != http.StatusBadRequest || bad.Error.Field != "discover.sitemap" {
		t.Errorf("bad discover.sitemap: %d %+v", code, bad.Error)
	}
	var suite struct {
		ID       string `json:"id"`
		Discover *struct {
			Limit int `json:"limit"`
		} `json:"discover"`
	}
	if code := s.do("POST", "/v1/suites", map[string]any{"name": "discovering",
		"options":  map[string]any{"viewport": map[string]any{"width": 400, "height": 300}, "screenshot": map[string]any{"mode": "viewport"}},
		"discover": map[string]any{"sitemap": srv.URL + "/sitemap.xml", "exclude": []string{"/private*"}}}, &suite); code != http.StatusCreated || suite.Discover == nil {
		t.Fatalf("create suite: status %d %+v", code, suite)
	}
	summary := func(r runResp) string {
		var out []string
		for _, c := range r.Comparisons {
			out = append(out, c.Target+"="+c.Status)
		}
		sort.Strings(out)
		return strings.Join(out, " ")
	}

	r1 := s.waitRun(s.startRun(suite.ID), 2*time.Minute)
	if got := summary(r1); got != "page-about=new page-home=new page-old=new" {
		t.Fatalf("first run: %s: %s", r1.Status, got)
	}
	if code := s.do("POST", "/v1/runs/"+r1.ID+"/approve", map[string]any{"all": true}, nil); code != http.StatusOK {
		t.Fatalf("approve: %d", code)
	}

	mu.Lock()
	pages = []string{"/", "/about", "/new", "/private/x"}
	mu.Unlock()
	r2 := s.waitRun(s.startRun(suite.ID), 2*time.Minute)
	if got := summary(r2); r2.Status != "needs_review" || got != "page-about=passed page-home=passed page-new=new page-old=missing" {
		t.Fatalf("second run: %s: %s", r2.Status, got)
	}
	if r2.Counts["new"] != 1 || r2.Counts["missing"] != 1 || r2.Counts["passed"] != 2 {
		t.Errorf("second run counts %v", r2.Counts)
	}
	for _, c := range r2.Comparisons {
		if c.Status == "missing" && (c.Baseline == nil || c.Current != nil) {
			t.Errorf("missing comparison %+v: want its baseline and no capture", c)
		}
	}
	var approved runResp
	if code := s.do("POST", "/v1/runs/"+r2.ID+"/approve", map[string]any{"all": true}, &approved); code != http.StatusOK || approved.Status != "approved" {
		t.Fatalf("approve second run: %d %s", code, approved.Status)
	}
	// The dropped page's baseline is gone: the next run has nothing missing.
	r3 := s.waitRun(s.startRun(suite.ID), 2*time.Minute)
	if got := summary(r3); r3.Status != "passed" || got != "page-about=passed page-home=passed page-new=passed" {
		t.Errorf("third run: %s: %s", r3.Status, got)
	}
}
