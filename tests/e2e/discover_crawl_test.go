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

// A suite that discovers its targets by crawling a 3-level fixture site's HTML links
// (discover.crawl, max_depth 2): the pages within two links of the start are targets, the
// one three links down is not, non-HTML and off-origin links are skipped. Between runs
// /b's link changes from /old to /new: the second run has page-new new and page-old missing.
// A second suite's max_pages caps its run's targets; bad discover.crawl fields are 400s
// naming them, and a start page that answers 404 fails the run's start on discover.crawl.url.
func TestSuiteDiscoveryByCrawl(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	bLinks := `<a href="/old">next</a>`
	links := map[string]string{
		"/":     `<a href="/a">a</a> <a href="b">b</a> <a href="/doc.pdf">pdf</a> <a href="http://elsewhere.invalid/x">out</a> <a href="mailto:x@y.z">mail</a> <a href="/r">r</a>`,
		"/a":    `<div><div><a href="/c#top">c</a></div></div> <a href="/">home</a>`,
		"/c":    `<a href="/d">d, three links down</a>`,
		"/d":    ``,
		"/old":  ``,
		"/new":  ``,
		"/gone": ``,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		body, ok := links[r.URL.Path]
		if r.URL.Path == "/b" {
			body, ok = bLinks, true
		}
		mu.Unlock()
		switch {
		case r.URL.Path == "/doc.pdf":
			w.Header().Set("Content-Type", "application/pdf")
			w.Write([]byte("%PDF-1.4")) //nolint:errcheck
			return
		case r.URL.Path == "/r":
			http.Redirect(w, r, "/a", http.StatusFound) // same page as /a: not a second target
			return
		case !ok || r.URL.Path == "/gone":
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>%s</title><body style="margin:0;background:#fff;font:24px sans-serif">
			<div style="background:#2a6;color:#fff;padding:20px">%s</div><p>%s</p>`, r.URL.Path, r.URL.Path, body)
	}))
	t.Cleanup(srv.Close)
	s := sharedStack(t)

	for _, tt := range []struct {
		discover map[string]any
		field    string
	}{
		{map[string]any{"sitemap": srv.URL + "/sitemap.xml", "crawl": map[string]any{"url": srv.URL}}, "discover"},
		{map[string]any{"crawl": map[string]any{"url": "ftp://x/"}}, "discover.crawl.url"},
		{map[string]any{"crawl": map[string]any{}}, "discover.crawl.url"},
		{map[string]any{"crawl": map[string]any{"url": srv.URL, "max_pages": 101}}, "discover.crawl.max_pages"},
		{map[string]any{"crawl": map[string]any{"url": srv.URL, "max_depth": 6}}, "discover.crawl.max_depth"},
		{map[string]any{"crawl": map[string]any{"url": srv.URL, "include": []string{""}}}, "discover.crawl.include[0]"},
	} {
		var bad errResp
		if code := s.do("POST", "/v1/suites", map[string]any{"name": "bad", "discover": tt.discover}, &bad); code != http.StatusBadRequest || bad.Error.Field != tt.field {
			t.Errorf("discover %v: %d %+v, want 400 on %s", tt.discover, code, bad.Error, tt.field)
		}
	}

	opts := map[string]any{"viewport": map[string]any{"width": 400, "height": 300}, "screenshot": map[string]any{"mode": "viewport"}}
	var suite struct {
		ID       string `json:"id"`
		Discover *struct {
			Crawl *struct {
				MaxDepth   int  `json:"max_depth"`
				MaxPages   int  `json:"max_pages"`
				SameOrigin bool `json:"same_origin"`
			} `json:"crawl"`
		} `json:"discover"`
	}
	if code := s.do("POST", "/v1/suites", map[string]any{"name": "crawling", "options": opts,
		"discover": map[string]any{"crawl": map[string]any{"url": srv.URL + "/"}}}, &suite); code != http.StatusCreated ||
		suite.Discover == nil || suite.Discover.Crawl == nil || suite.Discover.Crawl.MaxDepth != 2 || suite.Discover.Crawl.MaxPages != 100 || !suite.Discover.Crawl.SameOrigin {
		t.Fatalf("create suite: status %d %+v", code, suite.Discover)
	}
	summary := func(r runResp) string {
		var out []string
		for _, c := range r.Comparisons {
			out = append(out, c.Target+"="+c.Status)
		}
		sort.Strings(out)
		return strings.Join(out, " ")
	}

	start := time.Now()
	r1 := s.waitRun(s.startRun(suite.ID), 2*time.Minute)
	if got := summary(r1); got != "page-a=new page-b=new page-c=new page-home=new page-old=new" {
		t.Fatalf("first run: %s: %s", r1.Status, got)
	}
	t.Logf("first run (crawl + 5 captures + compare): %s", time.Since(start).Round(time.Millisecond))
	if code := s.do("POST", "/v1/runs/"+r1.ID+"/approve", map[string]any{"all": true}, nil); code != http.StatusOK {
		t.Fatalf("approve: %d", code)
	}

	mu.Lock()
	bLinks = `<a href="/new">next</a>` // the same text: page-b looks the same
	mu.Unlock()
	r2 := s.waitRun(s.startRun(suite.ID), 2*time.Minute)
	if got := summary(r2); r2.Status != "needs_review" || got != "page-a=passed page-b=passed page-c=passed page-home=passed page-new=new page-old=missing" {
		t.Fatalf("second run: %s: %s", r2.Status, got)
	}
	if r2.Counts["new"] != 1 || r2.Counts["missing"] != 1 || r2.Counts["passed"] != 4 {
		t.Errorf("second run counts %v", r2.Counts)
	}

	// max_pages: the start page and the first page found; the run is not waited for.
	var capped struct {
		ID string `json:"id"`
	}
	if code := s.do("POST", "/v1/suites", map[string]any{"name": "capped", "options": opts,
		"discover": map[string]any{"crawl": map[string]any{"url": srv.URL, "max_pages": 2}}}, &capped); code != http.StatusCreated {
		t.Fatalf("create capped suite: %d", code)
	}
	var r3 runResp
	if code := s.do("POST", "/v1/suites/"+capped.ID+"/runs", map[string]any{}, &r3); code != http.StatusAccepted {
		t.Fatalf("start capped run: %d", code)
	}
	r3 = s.waitRun(r3.ID, 2*time.Minute)
	if got := summary(r3); got != "page-a=new page-home=new" {
		t.Errorf("max_pages 2: %s", got)
	}

	// An unreachable start page fails the manual run's start, naming the field.
	var gone struct {
		ID string `json:"id"`
	}
	if code := s.do("POST", "/v1/suites", map[string]any{"name": "gone", "discover": map[string]any{"crawl": map[string]any{"url": srv.URL + "/gone"}}}, &gone); code != http.StatusCreated {
		t.Fatalf("create gone suite: %d", code)
	}
	var bad errResp
	if code := s.do("POST", "/v1/suites/"+gone.ID+"/runs", map[string]any{}, &bad); code != http.StatusBadRequest ||
		bad.Error.Field != "discover.crawl.url" || bad.Error.Code != "crawl_unreachable" || !strings.Contains(bad.Error.Message, "404") {
		t.Errorf("run of a suite whose start page is 404: %d %+v", code, bad.Error)
	}
}
