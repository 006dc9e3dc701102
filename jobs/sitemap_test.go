package jobs_test

import (
	"context"
	"errors"
	"regexp"
	"testing"

	"github.com/snapq/snapq/discover"
	"github.com/snapq/snapq/jobs"
)

type fakeSitemap struct {
	pages []string
	err   error
	read  int
}

func (f *fakeSitemap) Read(_ context.Context, _ string, keep func(string) bool) error {
	for _, p := range f.pages {
		f.read++
		if keep(p) {
			return nil
		}
	}
	return f.err
}

// SitemapPages implements jobs.SitemapPages the way discover.Reader does.
func (f *fakeSitemap) SitemapPages(ctx context.Context, u string, limit int, include, exclude []*regexp.Regexp) ([]string, error) {
	return discover.ReadSitemap(ctx, f, u, limit, include, exclude)
}

type problem struct{}

func (problem) Error() string       { return "https://s.example/sitemap.xml: not well-formed XML" }
func (problem) ProblemCode() string { return "invalid_sitemap" }

func TestSubmitFromSitemapDedupesFiltersAndLimits(t *testing.T) {
	t.Parallel()
	e := setup(t)
	f := &fakeSitemap{pages: []string{
		"https://S.example/a", "https://s.example/a#top", "https://s.example:443/a", "https://s.example",
		"https://s.example/", "https://s.example/blog/1", "https://s.example/b", "ftp://s.example/x",
		"http://127.0.0.3:25/", "https://s.example/c", "https://s.example/d",
	}}
	e.svc.Sitemaps = f
	body := `{"sitemap": "https://s.example/sitemap.xml", "limit": 3, "exclude": ["/blog/*"], "labels": {"from": "sitemap"}}`
	b, js, _, err := e.svc.Submit(context.Background(), jobs.Submission{Body: []byte(body)})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, j := range js {
		got = append(got, j.URL)
	}
	want := []string{"https://s.example/a", "https://s.example", "https://s.example/b"}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("jobs %v, want %v", got, want)
	}
	if b.Labels["from"] != "sitemap" || f.read != 7 {
		t.Errorf("labels %v, read %d entries (want 7: it stops at the limit)", b.Labels, f.read)
	}

	f2 := &fakeSitemap{pages: []string{"https://s.example/a", "https://s.example/b"}}
	e.svc.Sitemaps = f2
	_, js, _, err = e.svc.Submit(context.Background(), jobs.Submission{Body: []byte(`{"sitemap": "https://s.example/sitemap.xml", "include": ["*/b"]}`)})
	if err != nil || len(js) != 1 || js[0].URL != "https://s.example/b" {
		t.Fatalf("include: %v %v", js, err)
	}
}

func TestSubmitFromSitemapRejectsNamingTheProblem(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for _, tt := range []struct {
		body, code, field string
		reader            jobs.SitemapPages
	}{
		{`{"sitemap": "https://s.example/x.xml"}`, "invalid_sitemap", "sitemap", &fakeSitemap{err: problem{}}},
		{`{"sitemap": "https://s.example/x.xml"}`, "sitemap_empty", "sitemap", &fakeSitemap{pages: []string{"mailto:x@y"}}},
		{`{"sitemap": "file:///etc/passwd"}`, "invalid_url", "sitemap", &fakeSitemap{}},
		{`{"sitemap": "https://s.example/x.xml", "limit": 0}`, "invalid_option", "limit", &fakeSitemap{}},
		{`{"sitemap": "https://s.example/x.xml", "urls": ["https://a.example/"]}`, "invalid_field", "sitemap", &fakeSitemap{}},
		{`{"limit": 5}`, "required", "sitemap", &fakeSitemap{}},
		{`{"sitemap": "https://s.example/x.xml", "include": [""]}`, "invalid_option", "include[0]", &fakeSitemap{}},
		{`{"sitemap": "https://s.example/x.xml"}`, "invalid_field", "sitemap", nil},
	} {
		e.svc.Sitemaps = tt.reader
		_, _, _, err := e.svc.Submit(context.Background(), jobs.Submission{Body: []byte(tt.body)})
		var ve *jobs.ValidationError
		if !errors.As(err, &ve) || ve.Fields[0].Code != tt.code || ve.Fields[0].Field != tt.field {
			t.Errorf("%s: %v, want %s on %s", tt.body, err, tt.code, tt.field)
		}
	}
}

// refusingBudget refuses every piece of work and counts the asks.
type refusingBudget struct{ asked int }

type overBudget struct{}

func (overBudget) Error() string { return "over budget" }

func (b *refusingBudget) Acquire(context.Context, string, string) (func(), error) {
	b.asked++
	return nil, overBudget{}
}

// A key at its in-flight cap, or over its work budget, is refused before the sitemap is
// fetched; an Idempotency-Key replay answers before both.
func TestSitemapRefusedBeforeAnyFetch(t *testing.T) {
	t.Parallel()
	e := setup(t)
	f := &fakeSitemap{pages: []string{"https://s.example/a", "https://s.example/b"}}
	e.svc.Sitemaps = f
	e.svc.MaxInFlight = 1
	ctx := context.Background()
	if _, _, _, err := e.svc.Submit(ctx, jobs.Submission{Body: []byte(`{"urls":["https://s.example/x"]}`), Owner: "k1"}); err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"sitemap": "https://s.example/sitemap.xml"}`)
	_, _, _, err := e.svc.Submit(ctx, jobs.Submission{Body: body, Owner: "k1"})
	if !errors.Is(err, jobs.ErrTooManyInFlight) || f.read != 0 {
		t.Fatalf("at the in-flight cap: err %v after %d sitemap entries read, want too many in flight before any", err, f.read)
	}
	b := &refusingBudget{}
	e.svc.Budget = b
	_, _, _, err = e.svc.Submit(ctx, jobs.Submission{Body: body, Owner: "k2"})
	if !errors.As(err, new(overBudget)) || f.read != 0 || b.asked != 1 {
		t.Fatalf("over budget: err %v, %d entries read, %d asks", err, f.read, b.asked)
	}
	e.svc.Budget, e.svc.MaxInFlight = nil, 0
	first, _, _, err := e.svc.Submit(ctx, jobs.Submission{Body: body, Owner: "k3", IdempotencyKey: "i1"})
	if err != nil {
		t.Fatal(err)
	}
	read := f.read
	e.svc.Budget = b
	again, _, replayed, err := e.svc.Submit(ctx, jobs.Submission{Body: body, Owner: "k3", IdempotencyKey: "i1"})
	if err != nil || !replayed || again.ID != first.ID || f.read != read || b.asked != 1 {
		t.Fatalf("replay: %v replayed=%v, %d more entries read, %d asks", err, replayed, f.read-read, b.asked)
	}
}
