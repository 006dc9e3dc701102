package capture

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"golang.org/x/net/html"
)

// outputsSite serves /start (302 to /doc) and /doc, a page with every kind of content the
// page outputs treat specially. It counts the requests for /doc.
func outputsSite(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var docHits atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/start", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/doc", http.StatusFound)
	})
	mux.HandleFunc("/square", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(`<!doctype html><style>@page { size: 100mm 100mm; margin: 0 }</style><p>a square page</p>`))
	})
	mux.HandleFunc("/doc", func(w http.ResponseWriter, r *http.Request) {
		docHits.Add(1)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(outputsPage))
	})
	srv := httptest.NewServer(mux) // 127.0.0.1
	t.Cleanup(srv.Close)
	return srv, &docHits
}

// outputsPage writes "</script>" into a data script and the ld+json at runtime (the parser
// would end the element at it otherwise). The tall block makes the PDF several pages long.
const outputsPage = `<!doctype html><html lang="en-GB"><head><title>Outputs fixture</title>
<meta name="description" content="A page for the outputs test">
<link rel="canonical" href="/canonical-page">
<meta property="og:title" content="OG Title"><meta property="og:type" content="article">
<script type="application/ld+json" id="ld">{"@type": "Article"}</script>
<script type="text/x-data" id="data"></script>
<script>
document.getElementById("ld").textContent = '{"@type": "Article", "name": "a<\/script><b>x"}';
document.getElementById("data").textContent = 'SECRETDATA <\/script><img src=x onerror=alert(1)>';
window.inline = "INLINE_SCRIPT_TEXT";
</script>
</head><body>
<nav><a href="/about">About</a> <a href="/about">About again</a> <a href="mailto:x@example.com">Mail</a>
<a href="https://localhost/ext" rel="nofollow noopener">  External
   link </a> <a href="javascript:void(0)">JS</a> <a href="#top">Top</a></nav>
<h1>Visible Heading</h1><p>Hello outputs world</p>
<noscript><p>NOSCRIPT_CONTENT</p></noscript>
<template><p>TEMPLATE_CONTENT</p></template>
<div style="height:5000px;background:linear-gradient(#fff,#00f)">tall</div>
</body></html>`

func fileByKind(t *testing.T, res *Result, kind string) File {
	t.Helper()
	for _, f := range res.Files {
		if f.Kind == kind {
			return f
		}
	}
	t.Fatalf("no %s file in %v", kind, fileKinds(res.Files))
	return File{}
}

func fileKinds(files []File) []string {
	s := make([]string, len(files))
	for i, f := range files {
		s[i] = f.Kind + ":" + f.Name + ":" + f.ContentType
	}
	return s
}

// pdfPages counts page objects (Skia writes them uncompressed).
var pdfPageRe = regexp.MustCompile(`/Type\s*/Page\b`)

func pdfPages(data []byte) int { return len(pdfPageRe.FindAll(data, -1)) }

func TestOutputsAllFromOneLoad(t *testing.T) {
	b := sharedBrowser(t)
	srv, hits := outputsSite(t)
	res := mustCapture(t, b, Request{
		URL: srv.URL + "/start", Name: "doc",
		Outputs: []string{OutputScreenshot, OutputHTML, OutputText, OutputLinks, OutputMetadata, OutputPDF},
		PDF:     PDFOptions{Paper: PaperA4, MarginMM: 10, PrintBackground: true, Scale: 1},
	})
	if n := hits.Load(); n != 1 {
		t.Errorf("/doc was requested %d times, want 1 (every output from one load)", n)
	}
	if len(res.Images) == 0 || res.Segments.Captured == 0 {
		t.Errorf("no screenshots: %d images, segments %+v", len(res.Images), res.Segments)
	}
	diff(t, "files", []string{
		"html:doc.html:text/html; charset=utf-8", "text:doc.txt:text/plain; charset=utf-8",
		"links:doc-links.json:application/json", "metadata:doc-metadata.json:application/json",
		"pdf:doc.pdf:application/pdf",
	}, fileKinds(res.Files))

	t.Run("html", func(t *testing.T) {
		doc := string(fileByKind(t, res, OutputHTML).Data)
		if !strings.HasPrefix(doc, "<!doctype html>") {
			t.Errorf("html starts %q, want <!doctype html>", doc[:min(40, len(doc))])
		}
		for _, gone := range []string{"SECRETDATA", "INLINE_SCRIPT_TEXT", "TEMPLATE_CONTENT", "onerror", "text/x-data"} {
			if strings.Contains(doc, gone) {
				t.Errorf("html still contains %q", gone)
			}
		}
		for _, kept := range []string{"<noscript>", "NOSCRIPT_CONTENT", "Visible Heading", `a<\/script><b>x`} {
			if !strings.Contains(doc, kept) {
				t.Errorf("html lacks %q", kept)
			}
		}
		root, err := html.Parse(strings.NewReader(doc))
		if err != nil {
			t.Fatalf("html does not re-parse: %v", err)
		}
		var scripts []string
		var walk func(*html.Node)
		walk = func(n *html.Node) {
			if n.Type == html.ElementNode && n.Data == "script" {
				typ := ""
				for _, a := range n.Attr {
					if a.Key == "type" {
						typ = a.Val
					}
				}
				text := ""
				if n.FirstChild != nil {
					text = n.FirstChild.Data
				}
				scripts = append(scripts, typ+" "+text)
			}
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				walk(c)
			}
		}
		walk(root)
		diff(t, "scripts after re-parse", []string{`application/ld+json {"@type": "Article", "name": "a<\/script><b>x"}`}, scripts)
	})

	t.Run("text", func(t *testing.T) {
		f := fileByKind(t, res, OutputText)
		text := string(f.Data)
		for _, want := range []string{"Visible Heading", "Hello outputs world", "About"} {
			if !strings.Contains(text, want) {
				t.Errorf("text lacks %q:\n%s", want, text)
			}
		}
		for _, gone := range []string{"SECRETDATA", "INLINE_SCRIPT_TEXT", "TEMPLATE_CONTENT", "Article"} {
			if strings.Contains(text, gone) {
				t.Errorf("text contains %q", gone)
			}
		}
		if f.Chars != utf8.RuneCount(f.Data) || f.Chars == 0 {
			t.Errorf("Chars = %d, text has %d characters", f.Chars, utf8.RuneCount(f.Data))
		}
	})

	t.Run("links", func(t *testing.T) {
		var links []Link
		if err := json.Unmarshal(fileByKind(t, res, OutputLinks).Data, &links); err != nil {
			t.Fatal(err)
		}
		diff(t, "links", []Link{
			{URL: srv.URL + "/about", Text: "About"},
			{URL: "https://localhost/ext", Text: "External link", Rel: "nofollow noopener"},
			{URL: srv.URL + "/doc#top", Text: "Top"},
		}, links)
	})

	t.Run("metadata", func(t *testing.T) {
		var m Metadata
		if err := json.Unmarshal(fileByKind(t, res, OutputMetadata).Data, &m); err != nil {
			t.Fatal(err)
		}
		diff(t, "metadata", Metadata{
			Title: "Outputs fixture", Description: "A page for the outputs test", Language: "en-GB",
			CanonicalURL: srv.URL + "/canonical-page",
			OpenGraph:    map[string]string{"og:title": "OG Title", "og:type": "article"},
			Status:       200, ContentType: "text/html", FinalURL: srv.URL + "/doc",
			RedirectChain: []string{srv.URL + "/start"},
		}, m)
	})

	t.Run("pdf", func(t *testing.T) {
		data := fileByKind(t, res, OutputPDF).Data
		if !strings.HasPrefix(string(data), "%PDF-") || len(data) < 1024 {
			t.Fatalf("pdf: %d bytes starting %q", len(data), data[:min(8, len(data))])
		}
		if n := pdfPages(data); n < 2 {
			t.Errorf("pdf has %d pages, want several (the page is 5000 px tall)", n)
		}
	})
}

func TestOutputsWithoutScreenshot(t *testing.T) {
	b := sharedBrowser(t)
	srv, _ := outputsSite(t)
	res := mustCapture(t, b, Request{URL: srv.URL + "/doc", Name: "t", Outputs: []string{OutputText}})
	if len(res.Images) != 0 || res.Segments != (Segments{}) {
		t.Errorf("outputs without screenshot gave %d images, segments %+v", len(res.Images), res.Segments)
	}
	diff(t, "files", []string{"text:t.txt:text/plain; charset=utf-8"}, fileKinds(res.Files))
	if res.Title != "Outputs fixture" || res.HTTPStatus != 200 {
		t.Errorf("title %q status %d", res.Title, res.HTTPStatus)
	}
}

func TestPDFOptions(t *testing.T) {
	b := sharedBrowser(t)
	srv, _ := outputsSite(t)
	pdf := func(t *testing.T, o PDFOptions) ([]byte, error) {
		t.Helper()
		res, err := capture(t, b, Request{URL: srv.URL + "/doc", Name: "p", Outputs: []string{OutputPDF}, PDF: o})
		if err != nil {
			return nil, err
		}
		if len(res.Images) != 0 || len(res.Files) != 1 {
			t.Fatalf("want exactly one file and no images, got %d images and %v", len(res.Images), fileKinds(res.Files))
		}
		return res.Files[0].Data, nil
	}
	all, err := pdf(t, PDFOptions{MarginMM: 10, PrintBackground: true})
	if err != nil {
		t.Fatal(err)
	}
	allPages := pdfPages(all)
	tests := []struct {
		name  string
		opts  PDFOptions
		check func(t *testing.T, data []byte)
	}{
		{name: "page range 1 keeps one page", opts: PDFOptions{PageRanges: "1"}, check: func(t *testing.T, data []byte) {
			if n := pdfPages(data); n != 1 || len(data) >= len(all) {
				t.Errorf("page_ranges 1: %d pages %d bytes; all pages: %d pages %d bytes", n, len(data), allPages, len(all))
			}
		}},
		{name: "landscape needs more pages", opts: PDFOptions{Landscape: true, MarginMM: 10}, check: func(t *testing.T, data []byte) {
			if n := pdfPages(data); n <= allPages {
				t.Errorf("landscape: %d pages, portrait %d", n, allPages)
			}
		}},
		{name: "a3 needs fewer pages", opts: PDFOptions{Paper: PaperA3, MarginMM: 10}, check: func(t *testing.T, data []byte) {
			if n := pdfPages(data); n >= allPages {
				t.Errorf("a3: %d pages, a4 %d", n, allPages)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := pdf(t, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(data), "%PDF-") {
				t.Fatalf("not a PDF: %q", data[:min(8, len(data))])
			}
			tt.check(t, data)
		})
	}
	t.Run("prefer_css_page_size takes the page's @page size", func(t *testing.T) {
		box := regexp.MustCompile(`/MediaBox\s*\[\s*0\s+0\s+([\d.]+)\s+([\d.]+)`)
		for _, tc := range []struct {
			prefer bool
			want   string // width x height in points, rounded
		}{{false, "596x842"}, {true, "283x283"}} {
			res, err := capture(t, b, Request{URL: srv.URL + "/square", Name: "sq", Outputs: []string{OutputPDF},
				PDF: PDFOptions{Paper: PaperA4, PreferCSSPageSize: tc.prefer, Scale: 1}})
			if err != nil {
				t.Fatal(err)
			}
			m := box.FindSubmatch(res.Files[0].Data)
			if m == nil {
				t.Fatalf("prefer %v: no MediaBox in the PDF", tc.prefer)
			}
			w, _ := strconv.ParseFloat(string(m[1]), 64)
			h, _ := strconv.ParseFloat(string(m[2]), 64)
			if got := fmt.Sprintf("%.0fx%.0f", math.Round(w), math.Round(h)); got != tc.want {
				t.Errorf("prefer_css_page_size %v: page %s pt, want %s", tc.prefer, got, tc.want)
			}
		}
	})
	t.Run("page range past the end", func(t *testing.T) {
		_, err := pdf(t, PDFOptions{PageRanges: fmt.Sprint(allPages + 5)})
		wantCode(t, err, CodeInvalidPageRange, false)
	})
}
