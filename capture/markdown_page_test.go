package capture

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/snapq/snapq/capture/internal/markdown/mdpage"
)

// markdownPage has an article between page chrome, a stylesheet, and a runtime script that
// writes JSON holding "</script>" into a data script (serialized html must not let it escape).
var markdownPage = `<!doctype html><html><head><title>Bridge repairs funded</title>
<style>.STYLERULE { color: red } body { font-family: serif }</style>
<script type="application/json" id="state">{}</script>
<script>
document.getElementById("state").textContent = JSON.stringify({payload: "JSONPAYLOAD </script><p>INJECTED</p>"});
</script></head><body>` + mdpage.Nav + mdpage.Aside +
	`<main><article><h1>Bridge repairs funded</h1>` + mdpage.Para("PAGEARTICLE", 6) + `</article></main>` + mdpage.Footer + `</body></html>`

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
