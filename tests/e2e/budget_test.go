package e2e

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// procStatus reads a /proc/<pid>/status field in KiB (VmRSS, VmHWM).
func procStatus(t *testing.T, pid int, field string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// cpuSeconds is a process's user + system CPU time so far.
func cpuSeconds(t *testing.T, pid int) float64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	u, _ := strconv.ParseFloat(f[11], 64)
	s, _ := strconv.ParseFloat(f[12], 64)
	return (u + s) / 100 // clock ticks
}

// sitemapBomb is a .xml.gz of ~150 KB that inflates to ~50 MiB: one page listed over and
// over, so no limit is ever reached by its pages.
func sitemapBomb(base string) []byte {
	entry := "<url><loc>" + base + "/same-page</loc></url>"
	var raw bytes.Buffer
	raw.WriteString(`<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
	for raw.Len() < 50<<20-len(entry)-100 {
		raw.WriteString(entry)
	}
	raw.WriteString("</urlset>")
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	w.Write(raw.Bytes()) //nolint:errcheck
	w.Close()
	return gz.Bytes()
}

// Twenty sitemap bombs sent at once by one key: the key's discover budget admits its
// share (SNAPQ_BUDGET_DISCOVER_PER_KEY, 2), which end sitemap_too_large at the 10 MiB
// inflation cap; the rest are 429 concurrency_limit with Retry-After at once; the api's
// resident memory grows by less than 200 MiB. Another key is still served.
func TestSitemapBombsWithinBudget(t *testing.T) {
	t.Parallel()
	var bomb []byte
	var served sync.Map
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Store(r.URL.Path, true)
		if r.URL.Path == "/bomb.xml.gz" {
			w.Write(bomb) //nolint:errcheck
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	bomb = sitemapBomb(srv.URL)
	s := startStack(t, "SNAPQ_AUTH=on")
	keyA, keyB := s.apiKey("bomber"), s.apiKey("neighbour")
	pid := s.procs.Pid("api")
	rss0, cpu0 := procStatus(t, pid, "VmRSS"), cpuSeconds(t, pid)

	type answer struct {
		code  int
		retry string
		err   errResp
	}
	answers := make([]answer, 20)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := &answers[i]
			var h http.Header
			a.code, h = s.doWith("POST", "/v1/batches", map[string]string{"Authorization": "Bearer " + keyA},
				map[string]any{"sitemap": srv.URL + "/bomb.xml.gz"}, &a.err)
			a.retry = h.Get("Retry-After")
		}()
	}
	wg.Wait()
	hwm, cpu1 := procStatus(t, pid, "VmHWM"), cpuSeconds(t, pid)
	refused, read := 0, 0
	for _, a := range answers {
		switch {
		case a.code == http.StatusTooManyRequests && a.err.Error.Code == "concurrency_limit" && a.retry != "":
			refused++
		case a.code == http.StatusBadRequest && a.err.Error.Code == "sitemap_too_large" && a.err.Error.Field == "sitemap":
			read++
		default:
			t.Errorf("answer %d %+v, want 429 concurrency_limit or 400 sitemap_too_large", a.code, a.err.Error)
		}
	}
	t.Logf("20 bombs: %d read (400 sitemap_too_large), %d refused (429); api RSS %d MiB before, peak %d MiB (+%d MiB); %.2f s of api CPU",
		read, refused, rss0>>10, hwm>>10, (hwm-rss0)>>10, cpu1-cpu0)
	if read < 1 || read > 6 || refused < 14 {
		t.Errorf("%d bombs read and %d refused, want the key's share (2, a few more as slots free) read and the rest refused", read, refused)
	}
	if grown := (hwm - rss0) >> 10; grown > 200 {
		t.Errorf("the api's resident memory grew by %d MiB, want at most 200", grown)
	}
	// Another key is not refused.
	var e errResp
	code, h := s.doWith("POST", "/v1/batches", map[string]string{"Authorization": "Bearer " + keyB},
		map[string]any{"sitemap": srv.URL + "/bomb.xml.gz"}, &e)
	if code != http.StatusBadRequest || e.Error.Code != "sitemap_too_large" || h.Get("Retry-After") != "" {
		t.Errorf("another key: %d %+v", code, e.Error)
	}
}

// A suite whose discovery crawls with same_origin off, from a page linking to 300 pages of
// another host, sends that host at most 20 requests (discover.MaxLinkCrawlHostFetches).
// On the same stack, one key holds at most its share of event streams
// (SNAPQ_SSE_MAX_STREAMS_PER_KEY=2): the third is 429 concurrency_limit with Retry-After,
// another key's is served.
func TestCrawlHostCapAndStreamShare(t *testing.T) {
	t.Parallel()
	var victimHits atomic.Int64
	release := make(chan struct{})
	victim := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" { // a page that keeps its job running while streams are opened
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		victimHits.Add(1)
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<!doctype html><a href="/more">more</a>`)
	}))
	t.Cleanup(victim.Close)
	t.Cleanup(func() { close(release) })
	start := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<!doctype html><title>start</title>")
		for i := range 300 {
			fmt.Fprintf(w, `<a href="%s/p/%d">%d</a>`, victim.URL, i, i)
		}
	}))
	t.Cleanup(start.Close)
	s := startStack(t, "SNAPQ_AUTH=on", "SNAPQ_SSE_MAX_STREAMS_PER_KEY=2")
	keyA, keyB := s.apiKey("crawler"), s.apiKey("other")
	auth := func(k string) map[string]string { return map[string]string{"Authorization": "Bearer " + k} }

	var suite struct {
		ID string `json:"id"`
	}
	if code, _ := s.doWith("POST", "/v1/suites", auth(keyA), map[string]any{"name": "reflector",
		"options":  map[string]any{"viewport": map[string]any{"width": 400, "height": 300}, "screenshot": map[string]any{"mode": "viewport"}},
		"discover": map[string]any{"crawl": map[string]any{"url": start.URL + "/", "same_origin": false, "max_pages": 100}}}, &suite); code != http.StatusCreated {
		t.Fatalf("create suite: %d", code)
	}
	var run runResp
	if code, _ := s.doWith("POST", "/v1/suites/"+suite.ID+"/runs", auth(keyA), map[string]any{}, &run); code != http.StatusAccepted {
		t.Fatalf("start run: %d", code)
	}
	hits := victimHits.Load() // discovery is over when the run is created; captures come later
	t.Logf("discovery sent %d requests to the linked host", hits)
	if hits > 20 {
		t.Errorf("discovery sent %d requests to one third-party host, want at most 20", hits)
	}

	var b batchResp
	if code, _ := s.doWith("POST", "/v1/batches", auth(keyA), map[string]any{"urls": []string{victim.URL + "/slow"}}, &b); code != http.StatusAccepted {
		t.Fatalf("submit: %d", code)
	}
	stream := func(key string) (*http.Response, error) {
		req, _ := http.NewRequest("GET", s.api+"/v1/batches/"+b.ID+"/events", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		return s.client.Do(req)
	}
	var open []*http.Response
	t.Cleanup(func() {
		for _, r := range open {
			r.Body.Close()
		}
	})
	for i := range 2 {
		r, err := stream(keyA)
		if err != nil || r.StatusCode != http.StatusOK {
			t.Fatalf("stream %d within the share: %v %v", i+1, r, err)
		}
		open = append(open, r)
	}
	r, err := stream(keyA)
	if err != nil {
		t.Fatal(err)
	}
	var e errResp
	json.NewDecoder(r.Body).Decode(&e) //nolint:errcheck
	r.Body.Close()
	if r.StatusCode != http.StatusTooManyRequests || e.Error.Code != "concurrency_limit" || r.Header.Get("Retry-After") == "" {
		t.Errorf("a third stream of one key: %d %+v", r.StatusCode, e.Error)
	}
	var eb errResp
	if code, _ := s.doWith("GET", "/v1/batches/"+b.ID, auth(keyB), nil, &eb); code != http.StatusNotFound {
		t.Fatalf("key B reads key A's batch: %d", code)
	}
	// Key B's own batch's stream is served while A is at its share.
	var bb batchResp
	if code, _ := s.doWith("POST", "/v1/batches", auth(keyB), map[string]any{"urls": []string{victim.URL + "/slow"}}, &bb); code != http.StatusAccepted {
		t.Fatalf("submit B: %d", code)
	}
	req, _ := http.NewRequest("GET", s.api+"/v1/batches/"+bb.ID+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+keyB)
	rb, err := s.client.Do(req)
	if err != nil || rb.StatusCode != http.StatusOK {
		t.Fatalf("another key's stream: %v %v", rb, err)
	}
	open = append(open, rb)
}
