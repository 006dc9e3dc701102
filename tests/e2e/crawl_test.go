package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// crawlSite serves a 3-level site: / links to 6 sections, each section to 6 pages, each
// page to 2 leaves, back home and to its siblings (many links written several ways), plus
// a link to another origin: 1 + 6 + 36 + 72 = 115 reachable pages.
func crawlSite(t *testing.T, other string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := strings.TrimSuffix(r.URL.Path, "/")
		parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
		var links []string
		switch {
		case p == "":
			for i := range 6 {
				links = append(links, fmt.Sprintf("/s%d", i), fmt.Sprintf("/s%d#top", i))
			}
			links = append(links, other+"/elsewhere", "mailto:me@example.com")
		case len(parts) == 1:
			for i := range 6 {
				links = append(links, fmt.Sprintf("%s/p%d", p, i))
			}
			links = append(links, "/", "/s0")
		case len(parts) == 2:
			links = append(links, p+"/d0", p+"/d1", "/", parts[0]+"/p0", "../"+parts[0])
		default:
			links = append(links, "/")
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!doctype html><title>%s</title><h1>%s</h1>", r.URL.Path, r.URL.Path)
		for _, l := range links {
			fmt.Fprintf(w, `<a href="%s">%s</a> `, l, l)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

type crawlJob struct {
	ID     string `json:"id"`
	URL    string `json:"url"`
	Status string `json:"status"`
	Crawl  *struct {
		Depth    int    `json:"depth"`
		ParentID string `json:"parent_id"`
		FoundOn  string `json:"found_on"`
	} `json:"crawl"`
}

func (s *stack) crawlJobs(batchID string) []crawlJob {
	s.t.Helper()
	var all []crawlJob
	cursor := ""
	for {
		var page struct {
			Jobs       []crawlJob `json:"jobs"`
			NextCursor *string    `json:"next_cursor"`
		}
		if code := s.do("GET", "/v1/batches/"+batchID+"/jobs?limit=100&cursor="+cursor, nil, &page); code != http.StatusOK {
			s.t.Fatalf("list jobs: %d", code)
		}
		all = append(all, page.Jobs...)
		if page.NextCursor == nil {
			return all
		}
		cursor = *page.NextCursor
	}
}

// A crawl of a 3-level site of 115 pages with max_pages 25 ends with exactly 25 jobs,
// every URL once, each below the page that linked to it; a max_depth 1 crawl stops one hop
// from the start; the batch completes only when the frontier is done; bad crawl fields
// are 400s naming them; the CLI starts a crawl.
func TestCrawlBatch(t *testing.T) {
	t.Parallel()
	base := crawlSite(t, "http://127.0.0.1:1")
	s := startStack(t, "SNAPQ_WORKER_CONCURRENCY=4")
	opts := map[string]any{"viewport": map[string]any{"width": 320, "height": 240},
		"screenshot": map[string]any{"mode": "viewport"}}

	var b batchResp
	if code := s.do("POST", "/v1/batches", map[string]any{"crawl": map[string]any{"url": base + "/", "max_pages": 25, "max_depth": 3},
		"options": opts}, &b); code != http.StatusAccepted {
		t.Fatalf("status %d", code)
	}
	if b.Total != 1 || len(b.Jobs) != 1 || b.Jobs[0].URL != base+"/" {
		t.Fatalf("created %+v, want the start page alone", b)
	}
	done := s.waitBatch(b.ID, 90*time.Second)
	js := s.crawlJobs(b.ID)
	if done.Total != 25 || len(js) != 25 || done.Counts["succeeded"] != 25 {
		t.Errorf("total %d, %d jobs, counts %v; want exactly 25 succeeded", done.Total, len(js), done.Counts)
	}
	// The pages found past max_pages are counted, each once: at most the 90 others.
	var view struct {
		Crawl *struct {
			Skipped int `json:"skipped"`
		} `json:"crawl"`
	}
	if code := s.do("GET", "/v1/batches/"+b.ID, nil, &view); code != http.StatusOK || view.Crawl == nil || view.Crawl.Skipped < 1 || view.Crawl.Skipped > 115-25 {
		t.Errorf("crawl.skipped: %d %+v, want 1 to 90", code, view.Crawl)
	} else {
		t.Logf("crawl.skipped %d", view.Crawl.Skipped)
	}
	byID := map[string]crawlJob{}
	seen := map[string]bool{}
	for _, j := range js {
		byID[j.ID] = j
		if seen[j.URL] {
			t.Errorf("%s captured twice", j.URL)
		}
		seen[j.URL] = true
		if !strings.HasPrefix(j.URL, base+"/") {
			t.Errorf("%s is not of the start's origin", j.URL)
		}
	}
	for _, j := range js {
		switch {
		case j.Crawl == nil:
			t.Errorf("%s has no crawl position", j.URL)
		case j.URL == base+"/":
			if j.Crawl.Depth != 0 || j.Crawl.ParentID != "" {
				t.Errorf("start page at %+v", j.Crawl)
			}
		default:
			parent, ok := byID[j.Crawl.ParentID]
			if !ok || parent.Crawl.Depth+1 != j.Crawl.Depth || parent.URL != j.Crawl.FoundOn || j.Crawl.Depth > 3 {
				t.Errorf("%s at depth %d found on %s (parent %+v)", j.URL, j.Crawl.Depth, j.Crawl.FoundOn, parent)
			}
		}
	}
	// The links output was collected to crawl, not stored: the batch did not ask for it.
	var one jobResp
	s.do("GET", "/v1/jobs/"+b.Jobs[0].ID, nil, &one)
	for _, a := range one.Artifacts {
		if a.Kind != "screenshot" {
			t.Errorf("start page stored a %s artifact the batch did not ask for", a.Kind)
		}
	}

	// max_depth 1 (links asked for and stored), excluding one section: the start page
	// and 5 sections.
	var shallow batchResp
	s.do("POST", "/v1/batches", map[string]any{"crawl": map[string]any{"url": base, "max_depth": 1, "exclude": []string{"/s5*"}},
		"options": map[string]any{"outputs": []string{"links"}}}, &shallow)
	done = s.waitBatch(shallow.ID, 60*time.Second)
	var urls []string
	for _, j := range s.crawlJobs(shallow.ID) {
		urls = append(urls, strings.TrimPrefix(j.URL, base))
		if j.Crawl == nil || j.Crawl.Depth > 1 {
			t.Errorf("%s past max_depth 1: %+v", j.URL, j.Crawl)
		}
	}
	if strings.Join(urls, " ") != " /s0 /s1 /s2 /s3 /s4" || done.Counts["succeeded"] != 6 {
		t.Errorf("max_depth 1 crawl: %q, counts %v", urls, done.Counts)
	}
	s.do("GET", "/v1/jobs/"+shallow.Jobs[0].ID, nil, &one)
	if len(one.Artifacts) != 1 || one.Artifacts[0].Kind != "links" {
		t.Errorf("links asked for: artifacts %+v", one.Artifacts)
	}

	for _, tt := range []struct {
		crawl map[string]any
		field string
	}{
		{map[string]any{"url": "ftp://x.example/"}, "crawl.url"},
		{map[string]any{"url": base, "max_pages": 1001}, "crawl.max_pages"},
		{map[string]any{"url": base, "max_depth": -1}, "crawl.max_depth"},
		{map[string]any{"url": base, "include": []string{""}}, "crawl.include[0]"},
	} {
		var bad errResp
		if code := s.do("POST", "/v1/batches", map[string]any{"crawl": tt.crawl}, &bad); code != http.StatusBadRequest || bad.Error.Field != tt.field {
			t.Errorf("%v: %d %+v, want 400 naming %s", tt.crawl, code, bad.Error, tt.field)
		}
	}

	snapqCLI(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res := s.runCLI(ctx, "--json", "capture", "--crawl", base+"/s1", "--max-pages", "3", "--max-depth", "1")
	var cli struct {
		batchResp
		Crawl *struct {
			MaxPages int `json:"max_pages"`
			MaxDepth int `json:"max_depth"`
		} `json:"crawl"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &cli); res.code != 0 || err != nil || cli.Crawl == nil || cli.Crawl.MaxPages != 3 || cli.Crawl.MaxDepth != 1 {
		t.Errorf("snapq capture --crawl: exit %d (%v)\nstdout: %s\nstderr: %s", res.code, err, res.stdout, res.stderr)
	} else if done := s.waitBatch(cli.ID, 60*time.Second); done.Total != 3 {
		t.Errorf("CLI crawl: total %d, want 3", done.Total)
	}
}

// A crawl whose start page redirects (/x/index.html → /x/) captures that page once: the
// pages linking to /x/ (the page itself, its child) do not add it again (issue 26 item 8).
func TestCrawlStartRedirectOnce(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/x/index.html":
			http.Redirect(w, r, "/x/", http.StatusMovedPermanently)
			return
		case "/x/":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, `<!doctype html><title>x</title><a href="/x/">home</a> <a href="/x/a">a</a>`)
		case "/x/a":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, `<!doctype html><title>a</title><a href="/x/">home</a> <a href="./">up</a>`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	s := sharedStack(t)
	var b struct {
		ID   string `json:"id"`
		Jobs []struct {
			ID string `json:"id"`
		} `json:"jobs"`
	}
	if code := s.do("POST", "/v1/batches", map[string]any{"crawl": map[string]any{"url": srv.URL + "/x/index.html", "max_depth": 3},
		"options": map[string]any{"viewport": map[string]any{"width": 320, "height": 240}, "screenshot": map[string]any{"mode": "viewport"}}},
		&b); code != http.StatusAccepted {
		t.Fatalf("crawl: status %d", code)
	}
	s.waitBatch(b.ID, 90*time.Second)
	var urls []string
	for _, j := range s.crawlJobs(b.ID) {
		urls = append(urls, strings.TrimPrefix(j.URL, srv.URL))
	}
	if len(urls) != 2 || urls[0] != "/x/index.html" || urls[1] != "/x/a" {
		t.Errorf("crawl jobs %q, want the start page once and /x/a", urls)
	}
}
