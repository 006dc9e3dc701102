package capture

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The page chrome and prose below are also in capture/internal/markdown's tests, which check
// the conversion itself; this copy lets the end-to-end test build the same page through
// Chromium without capture importing a test-only helper from the codec.

// para returns n distinct sentences of prose, long enough for readability to score.
func para(tag string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "<p>%s paragraph %d holds the story: the committee met on a wet Tuesday, weighed the budget, "+
			"argued about the bridge, and agreed, after a long and careful debate, to fund the repairs.</p>\n", tag, i)
	}
	return b.String()
}

const noiseNav = `<nav class="menu"><ul><li><a href="/">Home</a></li><li><a href="/world">NAVWORLD</a></li>
<li><a href="/sport">NAVSPORT</a></li><li><a href="/weather">NAVWEATHER</a></li></ul></nav>`

const noiseAside = `<aside class="sidebar"><h3>Popular</h3><ul><li><a href="/p1">SIDEBAR one</a></li>
<li><a href="/p2">SIDEBAR two</a></li></ul></aside>`

const noiseFooter = `<footer class="footer"><a href="/terms">FOOTERTERMS</a> <a href="/privacy">Privacy</a> © 2026</footer>`

// markdownPage has an article between page chrome, a stylesheet, and a runtime script that
// writes JSON holding "</script>" into a data script (serialized html must not let it escape).
var markdownPage = `<!doctype html><html><head><title>Bridge repairs funded</title>
<style>.STYLERULE { color: red } body { font-family: serif }</style>
<script type="application/json" id="state">{}</script>
<script>
document.getElementById("state").textContent = JSON.stringify({payload: "JSONPAYLOAD </script><p>INJECTED</p>"});
</script></head><body>` + noiseNav + noiseAside +
	`<main><article><h1>Bridge repairs funded</h1>` + para("PAGEARTICLE", 6) + `</article></main>` + noiseFooter + `</body></html>`

func TestMarkdownOutputFromPage(t *testing.T) {
	b := sharedBrowser(t)
	mux := http.NewServeMux()
	mux.HandleFunc("/article", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(markdownPage))
	})
	srv := httptest.NewServer(mux) // 127.0.0.1
	t.Cleanup(srv.Close)

	res := mustCapture(t, b, Request{URL: srv.URL + "/article", Name: "a", Outputs: []string{OutputMarkdown}, MarkdownMaxChars: 1_000_000})
	diff(t, "files", []string{"markdown:a.md:text/markdown; charset=utf-8"}, fileKinds(res.Files))
	f := res.Files[0]
	md := string(f.Data)
	for _, want := range []string{"# Bridge repairs funded", "PAGEARTICLE paragraph 0", "PAGEARTICLE paragraph 5"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	for _, gone := range []string{"STYLERULE", "font-family", "JSONPAYLOAD", "INJECTED", "NAVWORLD", "FOOTERTERMS"} {
		if strings.Contains(md, gone) {
			t.Errorf("markdown holds %q:\n%s", gone, md)
		}
	}
	if f.Chars == 0 || f.Truncated {
		t.Errorf("Chars %d Truncated %v", f.Chars, f.Truncated)
	}
}

func TestStatus204And205(t *testing.T) {
	b := sharedBrowser(t)
	mux := http.NewServeMux()
	mux.HandleFunc("/204", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("/205", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusResetContent) })
	srv := httptest.NewServer(mux) // 127.0.0.1
	t.Cleanup(srv.Close)
	for _, status := range []int{204, 205} {
		path := fmt.Sprintf("/%d", status)
		res := mustCapture(t, b, Request{URL: srv.URL + path, Name: "empty",
			Outputs: []string{OutputScreenshot, OutputText, OutputMarkdown}})
		if res.HTTPStatus != status || res.FinalURL != srv.URL+path {
			t.Errorf("%s: http_status %d final_url %q", path, res.HTTPStatus, res.FinalURL)
		}
		if len(res.Images) == 0 {
			t.Errorf("%s: no screenshot of the blank page", path)
		}
		if txt := fileByKind(t, res, OutputText); len(strings.TrimSpace(string(txt.Data))) != 0 {
			t.Errorf("%s: text %q, want empty", path, txt.Data)
		}
	}
	// The tab is still good for a normal page afterwards.
	res := mustCapture(t, b, Request{URL: fixtures.URL + "/page?h=100", Name: "after"})
	if res.HTTPStatus != 200 {
		t.Errorf("after 204: status %d", res.HTTPStatus)
	}
}
