package jobs_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/snapq/snapq/jobs"
)

func TestCrawlFrontier(t *testing.T) {
	t.Parallel()
	links := []string{
		"https://s.example/a", "https://S.example/a#top", "https://s.example:443/a", // one page
		"https://s.example", "https://s.example/", // one page
		"https://other.example/x", "http://s.example/b", // other origins
		"mailto:x@s.example", "javascript:void(0)", "https://s.example:25/smtp", // not loadable
		"https://s.example/blog/1", "https://s.example/private/x", "https://s.example/c?q=1",
	}
	for _, tt := range []struct {
		name  string
		crawl jobs.Crawl
		depth int
		want  string
	}{
		{"same origin, each once", jobs.Crawl{URL: "https://s.example/", MaxDepth: 2, SameOrigin: true}, 0,
			"https://s.example/a https://s.example https://s.example/blog/1 https://s.example/private/x https://s.example/c?q=1"},
		{"any origin", jobs.Crawl{URL: "https://s.example/", MaxDepth: 2}, 1,
			"https://s.example/a https://s.example https://other.example/x http://s.example/b https://s.example/blog/1 https://s.example/private/x https://s.example/c?q=1"},
		{"include and exclude", jobs.Crawl{URL: "https://s.example:443", MaxDepth: 2, SameOrigin: true,
			Include: []string{"/blog/*", "/private/*", "*/c?q=*"}, Exclude: []string{"/private/*"}}, 0,
			"https://s.example/blog/1 https://s.example/c?q=1"},
		{"at max depth", jobs.Crawl{URL: "https://s.example/", MaxDepth: 2, SameOrigin: true}, 2, ""},
		{"depth 0 crawls only the start", jobs.Crawl{URL: "https://s.example/", MaxDepth: 0, SameOrigin: true}, 0, ""},
	} {
		var got []string
		for _, p := range tt.crawl.Frontier(tt.depth, links) {
			got = append(got, p.URL)
		}
		if strings.Join(got, " ") != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.name, strings.Join(got, " "), tt.want)
		}
	}
	// Keys are what the store holds once per batch: every spelling of a page has one.
	c := jobs.Crawl{URL: "https://s.example/", MaxDepth: 1}
	if a, b := c.Frontier(0, []string{"https://s.example"}), c.Frontier(0, []string{"https://S.EXAMPLE:443/#x"}); a[0].Key != b[0].Key {
		t.Errorf("keys %q and %q differ", a[0].Key, b[0].Key)
	}
	many := make([]string, jobs.MaxCrawlLinks+10)
	for i := range many {
		many[i] = "https://s.example/p" + strings.Repeat("x", i%7) + "?" + string(rune('a'+i%26)) + strings.Repeat("y", i/26)
	}
	if n := len(c.Frontier(0, many)); n > jobs.MaxCrawlLinks {
		t.Errorf("%d pages from one page, want at most %d", n, jobs.MaxCrawlLinks)
	}
}

func TestSubmitCrawl(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.svc.MaxTargets = 50
	b, js, _, err := e.svc.Submit(context.Background(), jobs.Submission{Body: []byte(
		`{"crawl": {"url": "https://S.example/start#x", "max_pages": 25, "exclude": ["/private/*"]}, "options": {"outputs": ["screenshot"]}}`)})
	if err != nil {
		t.Fatal(err)
	}
	if len(js) != 1 || js[0].URL != "https://s.example/start" || js[0].Crawl == nil || js[0].Crawl.Depth != 0 {
		t.Fatalf("jobs %+v, want the start page at depth 0", js)
	}
	c := b.Crawl
	if c == nil || c.URL != "https://s.example/start" || c.MaxPages != 25 || c.MaxDepth != jobs.DefaultCrawlDepth || !c.SameOrigin || c.Exclude[0] != "/private/*" {
		t.Errorf("crawl %+v", c)
	}
	if v := b.View(); v.Crawl == nil || v.Total != 1 {
		t.Errorf("view %+v", v)
	}
	_, js, _, err = e.svc.Submit(context.Background(), jobs.Submission{Body: []byte(`{"urls": ["https://s.example/"]}`)})
	if err != nil || js[0].Crawl != nil {
		t.Errorf("a plain batch's job has a crawl position: %+v %v", js[0].Crawl, err)
	}

	for _, tt := range []struct{ body, code, field string }{
		{`{"crawl": {}}`, "required", "crawl.url"},
		{`{"crawl": {"url": "file:///etc/passwd"}}`, "invalid_url", "crawl.url"},
		{`{"crawl": {"url": "http://127.0.0.3:1/"}}`, "unsafe_port", "crawl.url"},
		{`{"crawl": {"url": "https://s.example/", "max_pages": 51}}`, "invalid_option", "crawl.max_pages"},
		{`{"crawl": {"url": "https://s.example/", "max_pages": 2.5}}`, "invalid_option", "crawl.max_pages"},
		{`{"crawl": {"url": "https://s.example/", "max_depth": 11}}`, "invalid_option", "crawl.max_depth"},
		{`{"crawl": {"url": "https://s.example/", "include": [""]}}`, "invalid_option", "crawl.include[0]"},
		{`{"crawl": {"url": "https://s.example/", "exclude": ["` + strings.Repeat("x", 501) + `"]}}`, "invalid_option", "crawl.exclude[0]"},
		{`{"crawl": {"url": "https://s.example/"}, "urls": ["https://a.example/"]}`, "invalid_field", "crawl"},
		{`{"crawl": {"url": "https://s.example/", "depth": 2}}`, "unknown_field", "crawl.depth"},
	} {
		_, _, _, err := e.svc.Submit(context.Background(), jobs.Submission{Body: []byte(tt.body)})
		var ve *jobs.ValidationError
		if !errors.As(err, &ve) || ve.Fields[0].Code != tt.code || ve.Fields[0].Field != tt.field {
			t.Errorf("%s: %v, want %s on %s", tt.body, err, tt.code, tt.field)
		}
	}
}
