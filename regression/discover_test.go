package regression

import (
	"context"
	"reflect"
	"strings"
	"testing"

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
	_, err = ParseSuite([]byte(`{"name": "d", "discover": {"sitemap": "ftp://x", "limit": 101, "include": [""],
		"options": {"viewport": {"width": 5}}, "crawl": {}}}`))
	got := fieldsOf(t, err)
	want := []string{"discover.crawl"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("unknown key: fields %v, want %v", got, want)
	}
	_, err = ParseSuite([]byte(`{"name": "d", "discover": {"sitemap": "ftp://x", "limit": 101, "include": [""],
		"options": {"viewport": {"width": 5}}}}`))
	got = fieldsOf(t, err)
	want = []string{"discover.sitemap", "discover.limit", "discover.include[0]", "discover.options.viewport.width"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("fields %v, want %v", got, want)
	}
	if _, err := ParseSuite([]byte(`{"name": "d"}`)); err == nil {
		t.Error("a suite with neither targets nor discover was accepted")
	}
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
	var _ jobs.SitemapReader = pages(nil)
}
