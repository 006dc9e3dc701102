package discover

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snapq/snapq/jobs"
)

func TestExtractLinks(t *testing.T) {
	t.Parallel()
	page := `<!doctype html><base href="/sub/"><a href="x">x</a><a href='/y#frag'>y</a>
		<A HREF="https://other.test/z">z</A><a href="#top">top</a><a href="javascript:void(0)">js</a>
		<a href="mailto:a@b.c">mail</a><a>no href</a><area href="../w"><img src="/img.png"><link href="/style.css">
		<script>document.write('<a href="/from-script">s</a>')</script>`
	got := ExtractLinks([]byte(page), "http://site.test/dir/page", 100)
	want := []string{"http://site.test/sub/x", "http://site.test/y", "https://other.test/z", "http://site.test/sub/", "http://site.test/w"} // #top against <base>, as a browser reads it
	if !reflect.DeepEqual(got, want) {
		t.Errorf("links %q\nwant %q", got, want)
	}
}

// Hostile pages: thousands of links stop at the cap, deep nesting costs nothing (no tree),
// a giant tag stops the reading, garbage yields nothing. Not parallel: the byte count
// below reads the process's counters, which a parallel test would move.
func TestExtractLinksHostile(t *testing.T) {
	many := strings.Repeat(`<a href="/p">p</a>`, 20000)
	if got := ExtractLinks([]byte(many), "http://s.test/", jobs.MaxCrawlLinks); len(got) != jobs.MaxCrawlLinks {
		t.Errorf("20000 links: %d kept, want %d", len(got), jobs.MaxCrawlLinks)
	}
	deep := strings.Repeat("<div>", 200000) + `<a href="/deep">d</a>` + strings.Repeat("</div>", 200000)
	page := []byte(deep)
	var got []string
	allocated := allocatedBytes(func() { got = ExtractLinks(page, "http://s.test/", 10) })
	if !reflect.DeepEqual(got, []string{"http://s.test/deep"}) {
		t.Errorf("deep nesting: %q", got)
	}
	// A tree costs a node per element (200,000 × ~100 bytes); the tokenizer costs its buffer and
	// a few bytes per tag name.
	if allocated > 8<<20 {
		t.Errorf("200000 nested divs allocated %d bytes, want a reader that builds no tree (< 8 MiB)", allocated)
	}
	huge := `<a href="/first">f</a><a title="` + strings.Repeat("x", 1<<20) + `" href="/in-huge-tag">h</a><a href="/after">a</a>`
	if got := ExtractLinks([]byte(huge), "http://s.test/", 10); !reflect.DeepEqual(got, []string{"http://s.test/first"}) {
		t.Errorf("a 1 MiB tag: %q, want the links before it only", got)
	}
	if got := ExtractLinks([]byte("\x00\xff<<<>>>%PDF"), "http://s.test/", 10); len(got) != 0 {
		t.Errorf("garbage: %q", got)
	}
}

// allocatedBytes is what f allocates on the heap. The test that calls it must not be parallel.
func allocatedBytes(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// fakeSite serves pages from a map: path → (status, location, content type, body).
type fakeSite struct {
	mu      sync.Mutex
	pages   map[string]fakePage
	fetched []string
	delay   time.Duration
}

type fakePage struct {
	status          int
	location, ctype string
	body            string
}

func (f *fakeSite) FetchPage(ctx context.Context, rawURL string, maxBytes int64) (int, string, string, []byte, error) {
	f.mu.Lock()
	f.fetched = append(f.fetched, rawURL)
	p, ok := f.pages[strings.TrimPrefix(rawURL, "http://s.test")]
	f.mu.Unlock()
	if f.delay > 0 {
		select {
		case <-time.After(f.delay):
		case <-ctx.Done():
			return 0, "", "", nil, ctx.Err()
		}
	}
	if !ok {
		return 404, "", "text/html", nil, nil
	}
	if p.status == 0 {
		p.status = 200
	}
	if p.ctype == "" {
		p.ctype = "text/html; charset=utf-8"
	}
	b := []byte(p.body)
	if int64(len(b)) > maxBytes {
		b = b[:maxBytes]
	}
	return p.status, p.location, p.ctype, b, nil
}

func linksPage(links ...string) fakePage {
	var b strings.Builder
	for _, l := range links {
		fmt.Fprintf(&b, `<a href="%s">%s</a>`, l, l)
	}
	return fakePage{body: b.String()}
}

func TestCrawlLinksBFS(t *testing.T) {
	t.Parallel()
	site := &fakeSite{pages: map[string]fakePage{
		"/":          linksPage("/a", "/b", "/doc.pdf", "http://other.test/x", "/redir", "/out", "/404", "/a"),
		"/a":         linksPage("/a/1", "/"),
		"/b":         linksPage("/b/1", "/private/x"),
		"/a/1":       linksPage("/a/1/deep"),
		"/b/1":       linksPage(),
		"/a/1/deep":  linksPage(),
		"/private/x": linksPage(),
		"/doc.pdf":   {ctype: "application/pdf", body: "%PDF"},
		"/redir":     {status: 301, location: "/b/1"},
		"/out":       {status: 302, location: "http://other.test/"},
	}}
	c := &jobs.Crawl{URL: "http://s.test/", MaxDepth: 2, MaxPages: 100, SameOrigin: true, Exclude: []string{"/private*"}}
	got, st, err := CrawlLinks(context.Background(), site, c)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"http://s.test/", "http://s.test/a", "http://s.test/b", "http://s.test/a/1", "http://s.test/b/1"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("pages %q\nwant %q (the redirect to /b/1 counts once, /a/1/deep is 3 links down)", got, want)
	}
	if st.NotHTML != 1 || st.Failed != 2 { // doc.pdf; /out (off-origin redirect) and /404
		t.Errorf("stats %+v", st)
	}
	for _, u := range site.fetched {
		if strings.Contains(u, "deep") || strings.Contains(u, "other.test") || strings.Contains(u, "private") {
			t.Errorf("fetched %s", u)
		}
	}

	c.MaxPages = 3
	if got, st, _ := CrawlLinks(context.Background(), site, c); len(got) != 3 || st.Skipped == 0 {
		t.Errorf("max_pages 3: %q %+v", got, st)
	}
	c.MaxPages, c.MaxDepth = 100, 0
	if got, _, _ := CrawlLinks(context.Background(), site, c); !reflect.DeepEqual(got, []string{"http://s.test/"}) {
		t.Errorf("max_depth 0: %q", got)
	}
}

func TestCrawlLinksStartPage(t *testing.T) {
	t.Parallel()
	site := &fakeSite{pages: map[string]fakePage{
		"/pdf":   {ctype: "application/pdf"},
		"/loop":  {status: 302, location: "/loop"},
		"/moved": {status: 301, location: "/"},
		"/":      linksPage(),
	}}
	for path, code := range map[string]string{"/missing": "crawl_unreachable", "/pdf": "crawl_not_html", "/loop": "crawl_unreachable"} {
		_, _, err := CrawlLinks(context.Background(), site, &jobs.Crawl{URL: "http://s.test" + path, MaxDepth: 2, MaxPages: 10, SameOrigin: true})
		var ve *jobs.ValidationError
		if !errors.As(err, &ve) || ve.Fields[0].Field != "url" || ve.Fields[0].Code != code {
			t.Errorf("start %s: %v, want %s on url", path, err, code)
		}
	}
	if got, _, err := CrawlLinks(context.Background(), site, &jobs.Crawl{URL: "http://s.test/moved", MaxDepth: 2, MaxPages: 10, SameOrigin: true}); err != nil || !reflect.DeepEqual(got, []string{"http://s.test/"}) {
		t.Errorf("a start page that redirects: %q %v, want its target", got, err)
	}
	// http://s.test/away redirects to https://www.s.test/, whose links are then followed.
	moved := &fakeSite{pages: map[string]fakePage{
		"/away":                    {status: 301, location: "https://www.s.test/"},
		"https://www.s.test/":      linksPage("/in", "http://s.test/old-origin"),
		"https://www.s.test/in":    linksPage(),
		"http://s.test/old-origin": linksPage(),
	}}
	if got, _, err := CrawlLinks(context.Background(), moved, &jobs.Crawl{URL: "http://s.test/away", MaxDepth: 2, MaxPages: 10, SameOrigin: true}); err != nil ||
		!reflect.DeepEqual(got, []string{"https://www.s.test/", "https://www.s.test/in"}) {
		t.Errorf("a start page redirected to another origin: %q %v", got, err)
	}
}

// A site of endless pages each with thousands of links stops at max_pages after as many
// requests; a 4 MiB page is read up to LinkCrawlPageBytes.
func TestCrawlLinksBounds(t *testing.T) {
	t.Parallel()
	endless := &endlessSite{}
	got, st, err := CrawlLinks(context.Background(), endless, &jobs.Crawl{URL: "http://s.test/", MaxDepth: 5, MaxPages: 100, SameOrigin: true})
	if err != nil || len(got) != 100 || st.Fetches != 100 {
		t.Errorf("endless site: %d pages, %+v, %v", len(got), st, err)
	}
	for _, u := range got {
		if strings.Contains(u, "past-the-cut") {
			t.Errorf("a link past %d bytes was followed", LinkCrawlPageBytes)
		}
	}
	if endless.maxBody != LinkCrawlPageBytes {
		t.Errorf("read %d bytes of a page", endless.maxBody)
	}
}

type endlessSite struct {
	mu      sync.Mutex
	maxBody int64
}

func (e *endlessSite) FetchPage(ctx context.Context, rawURL string, maxBytes int64) (int, string, string, []byte, error) {
	var b strings.Builder
	for i := 0; i < 3000; i++ {
		fmt.Fprintf(&b, `<a href="%s/%d">x</a>`, strings.TrimSuffix(rawURL, "/"), i)
	}
	if strings.HasSuffix(rawURL, "/1") {
		b.WriteString(strings.Repeat("<p>padding</p>", 300000)) // ~4 MiB
		b.WriteString(`<a href="/past-the-cut">x</a>`)
	}
	body := []byte(b.String())
	if int64(len(body)) > maxBytes {
		body = body[:maxBytes]
	}
	e.mu.Lock()
	e.maxBody = max(e.maxBody, int64(len(body)))
	e.mu.Unlock()
	return 200, "", "text/html", body, nil
}

// hostCounter answers every request: the start page links to 300 pages of victim.test
// and 50 of down.test, whose requests fail; it counts the requests per host.
type hostCounter struct {
	mu    sync.Mutex
	hosts map[string]int
}

func (h *hostCounter) FetchPage(_ context.Context, rawURL string, _ int64) (int, string, string, []byte, error) {
	host := jobs.TargetHost(rawURL)
	h.mu.Lock()
	h.hosts[host]++
	h.mu.Unlock()
	switch host {
	case "down.test":
		return 0, "", "", nil, errors.New("connection refused")
	case "victim.test":
		return 200, "", "text/html", []byte(`<a href="/next">x</a>`), nil
	}
	var b strings.Builder
	for i := range 300 {
		fmt.Fprintf(&b, `<a href="http://victim.test/p/%d">x</a>`, i)
		if i < 50 {
			fmt.Fprintf(&b, `<a href="http://down.test/p/%d">x</a>`, i)
		}
	}
	return 200, "", "text/html", []byte(b.String()), nil
}

// A crawl with same_origin off sends at most MaxLinkCrawlHostFetches requests to a host
// other than the start page's, and none to a host after MaxLinkCrawlHostFailures failed.
func TestCrawlLinksCapsRequestsPerHost(t *testing.T) {
	t.Parallel()
	h := &hostCounter{hosts: map[string]int{}}
	_, st, err := CrawlLinks(context.Background(), h, &jobs.Crawl{URL: "http://start.test/", MaxDepth: 2, MaxPages: 100, SameOrigin: false})
	if err != nil {
		t.Fatal(err)
	}
	if h.hosts["victim.test"] > MaxLinkCrawlHostFetches || h.hosts["down.test"] > MaxLinkCrawlHostFailures {
		t.Fatalf("requests per host %v, want victim.test <= %d and down.test <= %d", h.hosts, MaxLinkCrawlHostFetches, MaxLinkCrawlHostFailures)
	}
	if st.HostCapped == 0 || st.Failed != MaxLinkCrawlHostFailures {
		t.Fatalf("stats %+v: want requests refused for their host and %d failures", st, MaxLinkCrawlHostFailures)
	}
	t.Logf("requests per host %v, %+v", h.hosts, st)
}
