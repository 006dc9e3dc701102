package markdown

import (
	"strings"
	"testing"

	"github.com/snapq/snapq/capture/internal/markdown/mdpage"
)

// A news page as publishers write them: the <title> carries the site's name, the JSON-LD
// and Open Graph data carry the headline, and the article body opens with a lead image.
func newsPage(head, body string) string {
	return `<!doctype html><html><head><title>Bridge reopens | City Gazette</title>` + head + `</head><body>` +
		mdpage.Nav + `<main><article>` + body + mdpage.Para("NEWS", 6) + `</article></main>` + mdpage.Footer + `</body></html>`
}

const jsonLDHeadline = `<script type="application/ld+json">{"@context":"https://schema.org","@type":"NewsArticle",
"headline":"Council votes to reopen the old river bridge after two years","datePublished":"2026-11-30"}</script>`

func TestMarkdownTitle(t *testing.T) {
	t.Parallel()
	const headline = "Council votes to reopen the old river bridge after two years"
	tests := []struct {
		name, head, body string
		wantStart        string // the Markdown's first line
		wantCount        int    // times the heading text appears as a heading line
		heading          string
	}{
		{name: "JSON-LD headline heads the text", head: jsonLDHeadline,
			wantStart: "# " + headline, heading: headline, wantCount: 1},
		{name: "Open Graph title heads the text", head: `<meta property="og:title" content="` + headline + `">`,
			wantStart: "# " + headline, heading: headline, wantCount: 1},
		{name: "title only in the lead image's alt text", head: `<meta property="og:title" content="` + headline + `">`,
			body:      `<figure><img src="/img/bridge.jpg" alt="` + headline + `"><figcaption>The bridge at dawn.</figcaption></figure>`,
			wantStart: "# " + headline, heading: headline, wantCount: 1},
		{name: "title only in a link's URL", head: `<meta property="og:title" content="Bridge">`,
			body:      `<p><a href="/tags/Bridge">More on this</a></p>`,
			wantStart: "# Bridge", heading: "Bridge", wantCount: 1},
		{name: "body already opens with the title", head: jsonLDHeadline,
			body:      `<h1>` + headline + `</h1>`,
			wantStart: "# " + headline, heading: headline, wantCount: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out := convert(t, newsPage(tt.head, tt.body), 0)
			if !out.Article {
				t.Fatalf("the extraction was not used:\n%s", out.Text)
			}
			first, _, _ := strings.Cut(out.Text, "\n")
			if first != tt.wantStart {
				t.Errorf("first line %q, want %q\n%s", first, tt.wantStart, out.Text)
			}
			if n := strings.Count("\n"+out.Text+"\n", "\n# "+tt.heading+"\n"); n != tt.wantCount {
				t.Errorf("%d title headings, want %d:\n%s", n, tt.wantCount, out.Text)
			}
			if strings.Contains(out.Text, "schema.org") || strings.Contains(out.Text, "datePublished") {
				t.Errorf("the JSON-LD leaked into the Markdown:\n%s", out.Text)
			}
		})
	}
}

// The whole-document fallback (a portal page) never carries the JSON-LD either.
func TestMarkdownJSONLDNotInFallback(t *testing.T) {
	t.Parallel()
	body := `<ul>` + strings.Repeat(`<li><a href="/x">Link to a story</a></li>`, 200) + `</ul>`
	out := convert(t, `<html><head><title>Portal</title>`+jsonLDHeadline+`</head><body>`+body+`</body></html>`, 0)
	if strings.Contains(out.Text, "schema.org") || strings.Contains(out.Text, "headline") {
		t.Errorf("the JSON-LD leaked into the Markdown:\n%.600s", out.Text)
	}
}

func TestMarkdownAnchorsWithoutHref(t *testing.T) {
	t.Parallel()
	// A documentation page: named anchors before each heading, an id'd anchor around a
	// term, and an empty link an icon font would fill.
	var b strings.Builder
	b.WriteString(`<article><h1>Options</h1>`)
	for _, s := range []string{"alpha", "beta", "gamma"} {
		b.WriteString(`<a name="` + s + `"></a><h2><a id="h-` + s + `"></a>Option ` + s + `</h2>` + mdpage.Para(strings.ToUpper(s), 2))
	}
	b.WriteString(`<p>See <a id="term">the term</a> and <a href="/icons/x"> </a><a href="/docs/next">the next page</a>.</p></article>`)
	out := convert(t, page(b.String()), 0)
	if strings.Contains(out.Text, "[]") {
		t.Errorf("markdown holds an empty link:\n%s", out.Text)
	}
	for _, want := range []string{"## Option alpha", "See the term and [the next page](http://127.0.0.1:8090/docs/next)."} {
		if !strings.Contains(out.Text, want) {
			t.Errorf("markdown lacks %q:\n%s", want, out.Text)
		}
	}
	if strings.Contains(out.Text, "](http://127.0.0.1:8090/news/bridge)") {
		t.Errorf("markdown links to the page itself:\n%s", out.Text)
	}
}
