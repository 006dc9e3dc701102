package regression

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/snapq/snapq/discover"
	"github.com/snapq/snapq/jobs"
)

func TestDiscoveredName(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"https://s.example/":             "page-home",
		"https://s.example":              "page-home",
		"https://other.example:8080/":    "page-home", // the host does not matter
		"https://s.example/docs/intro/":  "page-docs-intro",
		"https://s.example/search?q=a b": "page-search-q-a-b",
	} {
		if got := DiscoveredName(in); !strings.HasPrefix(got, "page-") || (want != "page-search-q-a-b" && got != want) {
			t.Errorf("DiscoveredName(%q) = %q, want %q", in, got, want)
		}
	}
	if DiscoveredName("https://a.example/x/y") != DiscoveredName("http://b.example:81/x/y/") {
		t.Error("a page's name depends on its origin")
	}
}

func TestParseSuiteDiscover(t *testing.T) {
	t.Parallel()
	s, err := ParseSuite([]byte(`{"name": "d", "discover": {"sitemap": "https://S.example/sitemap.xml#x", "exclude": ["/private/*"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if d := s.Spec.Discover; d == nil || d.Sitemap != "https://s.example/sitemap.xml" || d.Limit != DefaultDiscoverLimit || len(s.Spec.Targets) != 0 {
		t.Errorf("discover %+v, targets %v", d, s.Spec.Targets)
	}
	_, err = ParseSuite([]byte(`{"name": "d", "discover": {"sitemap": "https://x/s.xml", "crawl": {"url": "https://x/"}}}`))
	if got, want := fieldsOf(t, err), []string{"discover"}; !reflect.DeepEqual(got, want) {
		t.Errorf("sitemap and crawl: fields %v, want %v", got, want)
	}
	_, err = ParseSuite([]byte(`{"name": "d", "discover": {"sitemap": "ftp://x", "limit": 101, "include": [""],
		"options": {"viewport": {"width": 5}}}}`))
	got := fieldsOf(t, err)
	want := []string{"discover.sitemap", "discover.limit", "discover.include[0]", "discover.options.viewport.width"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("fields %v, want %v", got, want)
	}
	if _, err := ParseSuite([]byte(`{"name": "d"}`)); err == nil {
		t.Error("a suite with neither targets nor discover was accepted")
	}
}

func TestParseSuiteDiscoverCrawl(t *testing.T) {
	t.Parallel()
	s, err := ParseSuite([]byte(`{"name": "d", "discover": {"crawl": {"url": "https://S.example/start#x", "exclude": ["/private/*"]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	c := s.Spec.Discover.Crawl
	if c == nil || c.URL != "https://s.example/start" || c.MaxDepth != 2 || c.MaxPages != MaxSuiteTargets || !c.SameOrigin || s.Spec.Discover.Sitemap != "" || s.Spec.Discover.Limit != 0 {
		t.Errorf("discover.crawl %+v", c)
	}
	_, err = ParseSuite([]byte(`{"name": "d", "discover": {"limit": 3, "include": ["/a"], "crawl": {"url": "ftp://x", "max_depth": 6,
		"max_pages": 101, "include": [""], "exclude": ["/x"], "same_origin": false, "extra": 1}}}`))
	got := fieldsOf(t, err)
	want := []string{"discover.crawl.extra"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("unknown key: fields %v, want %v", got, want)
	}
	_, err = ParseSuite([]byte(`{"name": "d", "discover": {"limit": 3, "include": ["/a"], "crawl": {"url": "ftp://x", "max_depth": 6,
		"max_pages": 101, "include": [""], "exclude": ["/x"], "same_origin": false}}}`))
	got = fieldsOf(t, err)
	want = []string{"discover.crawl.url", "discover.crawl.max_depth", "discover.crawl.max_pages", "discover.crawl.include[0]", "discover.limit", "discover.include"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("fields %v, want %v", got, want)
	}
	_, err = ParseSuite([]byte(`{"name": "d", "discover": {"crawl": {"max_pages": 0.5}}}`))
	if got, want := fieldsOf(t, err), []string{"discover.crawl.url", "discover.crawl.max_pages"}; !reflect.DeepEqual(got, want) {
		t.Errorf("fields %v, want %v", got, want)
	}
}

// A crawling suite's run reads its pages through Pages and names them as a sitemap's.
func TestDiscoverByCrawl(t *testing.T) {
	t.Parallel()
	site := crawlSite{"/": `<a href="/a">a</a><a href="/b">b</a>`, "/a": `<a href="/a/deep">d</a>`, "/b": ``}
	g := &Service{Pages: site}
	spec := SuiteSpec{Discover: &Discover{Crawl: &jobs.Crawl{URL: "http://s.test/", MaxDepth: 1, MaxPages: 10, SameOrigin: true}}}
	ts, err := g.discover(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tg := range ts {
		got = append(got, tg.Name+"="+tg.URL)
	}
	if want := []string{"page-home=http://s.test/", "page-a=http://s.test/a", "page-b=http://s.test/b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("targets %v, want %v", got, want)
	}
	spec.Discover.Crawl.URL = "http://s.test/missing"
	if got := fieldsOf(t, func() error { _, err := g.discover(context.Background(), spec); return err }()); !reflect.DeepEqual(got, []string{"discover.crawl.url"}) {
		t.Errorf("a missing start page: fields %v", got)
	}
	if _, err := (&Service{}).discover(context.Background(), spec); err == nil {
		t.Error("a server without a page fetcher crawled")
	}
}

type crawlSite map[string]string

func (c crawlSite) FetchPage(_ context.Context, u string, _ int64) (int, string, string, []byte, error) {
	body, ok := c[strings.TrimPrefix(u, "http://s.test")]
	if !ok {
		return 404, "", "text/html", nil, nil
	}
	return 200, "", "text/html", []byte(body), nil
}

type pages []string

func (p pages) Read(_ context.Context, _ string, keep func(string) bool) error {
	for _, u := range p {
		if keep(u) {
			return nil
		}
	}
	return nil
}

func TestDiscoverMergesWithStaticTargets(t *testing.T) {
	t.Parallel()
	g := &Service{Sitemaps: pages{"https://s.example/", "https://s.example/a", "https://s.example/a#x",
		"https://s.example/static", "https://s.example/b", "https://s.example/c"}}
	spec := SuiteSpec{Targets: []SuiteTarget{{URL: "https://s.example/static", Name: "static"}, {URL: "https://s.example/other", Name: "page-b"}},
		Discover: &Discover{Sitemap: "https://s.example/sitemap.xml", Limit: 5}}
	ts, err := g.discover(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tg := range ts {
		got = append(got, tg.Name)
	}
	// static first; /static's URL and page-b's name are the static targets'; the limit
	// counts the sitemap's unique pages (/, a, static, b, c).
	if strings.Join(got, " ") != "static page-b page-home page-a page-c" {
		t.Errorf("targets %v", got)
	}
	g.Sitemaps = pages{"mailto:x@y"}
	_, err = g.discover(context.Background(), spec)
	if f := fieldsOf(t, err); f[0] != "discover.sitemap" {
		t.Errorf("empty sitemap: fields %v", f)
	}
	var _ discover.SitemapReader = pages(nil)
}

// unfinishedRepo is a SuiteStore that only counts an owner's unfinished jobs.
type unfinishedRepo struct {
	SuiteStore
	n int
}

func (r unfinishedRepo) CountUnfinished(context.Context, string) (int, error) { return r.n, nil }

type countingPages struct{ n int }

func (c *countingPages) FetchPage(context.Context, string, int64) (int, string, string, []byte, error) {
	c.n++
	return 200, "", "text/html", []byte(`<a href="/a">a</a>`), nil
}

type refuseAll struct{}

func (refuseAll) Acquire(context.Context, string, string) (func(), error) {
	return nil, errors.New("over budget")
}

// A run's discovery does not start when the owner is at its in-flight cap or over its
// work budget: no page is fetched.
func TestDiscoveryAdmittedBeforeAnyFetch(t *testing.T) {
	t.Parallel()
	pages := &countingPages{}
	s := &Suite{ID: "s1", OwnerKeyID: "k1", Spec: SuiteSpec{Discover: &Discover{Crawl: &jobs.Crawl{URL: "http://s.test/", MaxDepth: 1, MaxPages: 10, SameOrigin: true}}}}
	g := &Service{Repo: unfinishedRepo{n: 5}, MaxInFlight: 5, Pages: pages}
	if _, err := g.StartRun(context.Background(), s, TriggerManual, nil, RunOptions{}); !errors.Is(err, jobs.ErrTooManyInFlight) || pages.n != 0 {
		t.Fatalf("at the in-flight cap: %v after %d fetches", err, pages.n)
	}
	g = &Service{Repo: unfinishedRepo{n: 0}, MaxInFlight: 5, Pages: pages, Budget: refuseAll{}}
	if _, err := g.StartRun(context.Background(), s, TriggerManual, nil, RunOptions{}); err == nil || pages.n != 0 {
		t.Fatalf("over budget: %v after %d fetches", err, pages.n)
	}
}
