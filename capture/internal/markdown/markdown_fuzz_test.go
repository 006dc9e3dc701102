package markdown

import (
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/snapq/snapq/capture/internal/markdown/mdpage"
)

// maxFuzzHTML caps the documents the fuzzer converts: Convert runs readability and a
// converter over the whole tree, and larger hostile pages only repeat smaller ones.
const maxFuzzHTML = 32 << 10

// convertBound is how long one conversion may take before the fuzzer calls it a hang: Convert
// takes no context, so a slow one holds a worker past the job's timeout.
const convertBound = 10 * time.Second

// dataImageRe matches a Markdown image whose source is a data: URI.
var dataImageRe = regexp.MustCompile(`(?i)!\[[^\]]*\]\(\s*<?\s*data:`)

// FuzzConvert converts hostile HTML. The Markdown of a valid UTF-8 document (all Chromium
// serializes) is valid UTF-8, holds at most maxChars characters (Truncated saying when
// it was cut), and never carries an inline data: image.
func FuzzConvert(f *testing.F) {
	for _, doc := range []string{
		page(mdpage.Nav + `<article><h1>The bridge</h1>` + mdpage.Para("a", 6) + `</article>` + mdpage.Aside + mdpage.Footer),
		page(`<ul>` + strings.Repeat(`<li><a href="/x">link</a></li>`, 40) + `</ul>`),
		page(`<p>before</p><img src="data:image/png;base64,` + strings.Repeat("QUJD", 300) + `" alt="shot"><p>after</p>`),
		page(`<img src="/a.png" srcset="data:image/png;base64,AAAA 1x, /b.png 2x">`),
		page(`<table><tr><th>a</th><th>b|c</th></tr><tr><td colspan="3">x</td></tr></table>`),
		page(`<script>alert(1)</script><style>p{}</style><template><p>t</p></template><noscript>n</noscript><iframe src="x"></iframe><p>ok</p>`),
		`<div><div><div><div><div><div><div><div><div><div><div><div><div><div><div><div><p>deep`,
		`<table><td><table><td><table><td><a href=javascript:alert(1)>x</a>`,
		`<p>` + strings.Repeat("é😀\u200b", 200) + `</p>`,
		`<pre><code>` + strings.Repeat("`", 50) + `</code></pre><h1>#</h1><blockquote>> x</blockquote>`,
		`<svg><foreignObject><math><mi><p>x</svg></p>`, `<!-- unterminated`, "\x00\xff<p>\xc3", "",
	} {
		f.Add(doc, "http://127.0.0.1:8090/news/bridge", 500, 0)
	}
	f.Add(page(mdpage.Para("cap", 20)), "", 0, 100)
	f.Add(page(`<a href="../../x">rel</a>`), "not a url ::", 10, 3)

	f.Fuzz(func(t *testing.T, doc, pageURL string, visibleChars, maxChars int) {
		if len(doc) > maxFuzzHTML || len(pageURL) > 2048 {
			t.Skip()
		}
		maxChars %= 10_000 // 0 or less means DefaultMaxChars
		type result struct {
			res Result
			err error
		}
		done := make(chan result, 1)
		go func() {
			res, err := Convert(doc, pageURL, visibleChars, maxChars)
			done <- result{res, err}
		}()
		var res Result
		var err error
		select {
		case r := <-done:
			res, err = r.res, r.err
		case <-time.After(convertBound):
			t.Fatalf("Convert did not return in %s on %d bytes of HTML: %q", convertBound, len(doc), doc)
		}
		if err != nil {
			if res != (Result{}) {
				t.Fatalf("error %v came with a result", err)
			}
			return
		}
		limit := maxChars
		if limit <= 0 {
			limit = DefaultMaxChars
		}
		if n := utf8.RuneCountInString(res.Text); n > limit {
			t.Errorf("%d characters of Markdown, the cap is %d", n, limit)
		}
		if !utf8.ValidString(doc) {
			return
		}
		if !utf8.ValidString(res.Text) {
			t.Errorf("Markdown of a UTF-8 document is not valid UTF-8: %q", res.Text)
		}
		if dataImageRe.MatchString(res.Text) {
			t.Errorf("an inline data: image reached the Markdown: %q", res.Text)
		}
	})
}

// FuzzCapRunes checks the cut itself: at most max characters, a prefix of the input, and
// Truncated exactly when the input was longer.
func FuzzCapRunes(f *testing.F) {
	f.Add("hello\nworld", 5)
	f.Add(strings.Repeat("line of text\n", 50), 100)
	f.Add("é😀\u200b\n\n  ", 2)
	f.Add("\xff\xfe\n\xc3", 1)
	f.Fuzz(func(t *testing.T, s string, max int) {
		if max <= 0 || len(s) > 1<<16 {
			t.Skip() // Convert never passes a cap below 1
		}
		got, cut := CapRunes(s, max)
		n := utf8.RuneCountInString(s)
		if cut != (n > max) {
			t.Errorf("CapRunes(%q, %d) truncated = %v for %d characters", s, max, cut, n)
		}
		if utf8.RuneCountInString(got) > max || !strings.HasPrefix(s, got) {
			t.Errorf("CapRunes(%q, %d) = %q: longer than the cap or not a prefix", s, max, got)
		}
		if cut && utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Errorf("CapRunes(%q, %d) = %q splits a character", s, max, got)
		}
	})
}
