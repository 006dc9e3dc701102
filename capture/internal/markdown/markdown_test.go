package markdown

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/snapq/snapq/capture/internal/markdown/mdpage"
	"golang.org/x/net/html"
)

func page(body string) string {
	return `<!doctype html><html><head><title>The bridge story</title></head><body>` + body + `</body></html>`
}

// visible approximates the text output's length for a fixture.
func visible(t *testing.T, doc string) int {
	t.Helper()
	n, err := html.Parse(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	sanitize(n, false)
	return utf8.RuneCountInString(textOf(n))
}

func convert(t *testing.T, doc string, maxChars int) Result {
	t.Helper()
	out, err := Convert(doc, "http://127.0.0.1:8090/news/bridge", visible(t, doc), maxChars)
	if err != nil {
		t.Fatalf("Convert: %v", err)
	}
	return out
}

func TestMarkdownArticleWithoutNoise(t *testing.T) {
	t.Parallel()
	doc := page(mdpage.Nav + mdpage.Aside + `<main><article><h1>The bridge story</h1>` + mdpage.Para("ARTICLE", 8) +
		`</article></main>` + mdpage.Footer)
	out := convert(t, doc, 0)
	if !out.Article {
		t.Errorf("the extraction was not used:\n%s", out.Text)
	}
	for _, want := range []string{"ARTICLE paragraph 0", "ARTICLE paragraph 7", "# The bridge story"} {
		if !strings.Contains(out.Text, want) {
			t.Errorf("markdown lacks %q:\n%s", want, out.Text)
		}
	}
	for _, gone := range []string{"NAVWORLD", "SIDEBAR", "FOOTERTERMS"} {
		if strings.Contains(out.Text, gone) {
			t.Errorf("markdown holds page chrome %q:\n%s", gone, out.Text)
		}
	}
}

func TestMarkdownPortalKeepsLinks(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	// A short featured story is what readability picks; it is far under 10% of the page.
	b.WriteString(mdpage.Nav + `<h1>Front page</h1><article class="featured">` + mdpage.Para("FEATURED", 2) + `</article><div class="grid">`)
	for i := range 300 {
		fmt.Fprintf(&b, `<div class="card"><a href="/story/%d">Headline number %d about the news</a></div>`, i, i)
	}
	b.WriteString(`</div>` + mdpage.Footer)
	out := convert(t, page(b.String()), 0)
	if out.Article {
		t.Errorf("a portal page used the extraction (coverage gate did not fire)")
	}
	for _, want := range []string{"[Headline number 0 about the news](http://127.0.0.1:8090/story/0)",
		"Headline number 299 about the news", "NAVWORLD", "FEATURED paragraph 1"} {
		if !strings.Contains(out.Text, want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
	if n := strings.Count(out.Text, "Headline number"); n != 300 {
		t.Errorf("%d headlines in the markdown, want 300", n)
	}
}

func TestMarkdownDataImagePlaceholder(t *testing.T) {
	t.Parallel()
	payload := strings.Repeat("A", 2<<20*4/3) // base64 of 2 MiB
	doc := page(`<article><h1>Shot</h1>` + mdpage.Para("DATAIMG", 4) +
		`<p><img alt="screenshot" src="data:image/png;base64,` + payload + `"></p>` + mdpage.Para("AFTER", 2) + `</article>`)
	out := convert(t, doc, 1_000_000)
	if len(out.Text) > 10_000 {
		t.Errorf("markdown is %d bytes; the data: image leaked into it", len(out.Text))
	}
	if !strings.Contains(out.Text, "image: data URI, 2.0 MB") {
		t.Errorf("no size placeholder:\n%s", out.Text)
	}
	if strings.Contains(out.Text, "AAAA") || strings.Contains(out.Text, "data:image") {
		t.Errorf("markdown holds the data URI")
	}
}

func TestMarkdownTable(t *testing.T) {
	t.Parallel()
	doc := page(`<article><h1>Prices</h1>` + mdpage.Para("TABLE", 4) + `<table><thead><tr><th>Fruit</th><th>Price</th></tr></thead>
<tbody><tr><td>Apple</td><td>1.20</td></tr><tr><td>Pear</td><td>0.90</td></tr></tbody></table>` + mdpage.Para("MORE", 2) + `</article>`)
	out := convert(t, doc, 0)
	for _, want := range []string{"| Fruit | Price |", "| Apple | 1.20  |", "|---"} {
		if !strings.Contains(strings.ReplaceAll(out.Text, "| ---", "|---"), want) {
			t.Errorf("markdown lacks %q:\n%s", want, out.Text)
		}
	}
}

func TestMarkdownTrailingRelatedLinksPruned(t *testing.T) {
	t.Parallel()
	related := `<div class="related"><h3>Related articles</h3><ul>` +
		`<li><a href="/r1">RELATED bridge collapses elsewhere in the region</a></li>` +
		`<li><a href="/r2">RELATED budget talks resume in the autumn</a></li>` +
		`<li><a href="/r3">RELATED council elects a new chair for the year</a></li></ul></div>`
	t.Run("end to end", func(t *testing.T) {
		t.Parallel()
		out := convert(t, page(`<article><h1>The bridge story</h1>`+mdpage.Para("BODY", 6)+related+`</article>`), 0)
		if !strings.Contains(out.Text, "BODY paragraph 5") || strings.Contains(out.Text, "RELATED") {
			t.Errorf("want the body without the related links:\n%s", out.Text)
		}
	})
	t.Run("heuristic", func(t *testing.T) {
		t.Parallel()
		tests := []struct {
			name, body string
			want, gone []string
		}{
			{name: "trailing link list dropped", body: mdpage.Para("BODY", 6) + related,
				want: []string{"BODY paragraph 5"}, gone: []string{"RELATED"}},
			{name: "links in the middle kept", body: mdpage.Para("BODY", 3) + related + mdpage.Para("TAIL", 3),
				want: []string{"RELATED", "TAIL paragraph 2"}},
			{name: "mostly links kept (at most a third dropped)", body: mdpage.Para("BODY", 1) + related,
				want: []string{"RELATED"}},
			{name: "linky body keeps its links", body: strings.Repeat(`<p><a href="/x">LINKY prose with a link</a> and words</p>`, 6) + related,
				want: []string{"RELATED"}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				n, err := html.Parse(strings.NewReader(`<div id="wrap"><div>` + tt.body + `</div><hr></div>`))
				if err != nil {
					t.Fatal(err)
				}
				pruneTrailingLinks(n)
				text := textOf(n)
				for _, w := range tt.want {
					if !strings.Contains(text, w) {
						t.Errorf("lost %q: %s", w, text)
					}
				}
				for _, g := range tt.gone {
					if strings.Contains(text, g) {
						t.Errorf("kept %q: %s", g, text)
					}
				}
			})
		}
	})
}

func TestMarkdownCap(t *testing.T) {
	t.Parallel()
	doc := page(`<article><h1>Long</h1>` + mdpage.Para("CAP", 200) + `</article>`)
	full := convert(t, doc, 0)
	if full.Truncated || utf8.RuneCountInString(full.Text) < 20_000 {
		t.Fatalf("uncapped: %d characters, truncated %v", utf8.RuneCountInString(full.Text), full.Truncated)
	}
	out := convert(t, doc, 5_000)
	if n := utf8.RuneCountInString(out.Text); !out.Truncated || n > 5_000 || n < 4_000 {
		t.Errorf("capped at 5000: %d characters, truncated %v", n, out.Truncated)
	}
	if !strings.HasPrefix(full.Text, out.Text) {
		t.Errorf("the capped text is not a prefix of the full text")
	}
}
