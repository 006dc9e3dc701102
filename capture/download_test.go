package capture

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/snapq/snapq/capture/markup"
	"github.com/snapq/snapq/egress"
	sitefx "github.com/snapq/snapq/internal/fixtures"
)

// siteServer serves internal/fixtures' site (PDFs, downloads, never-loading pages).
func siteServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(sitefx.Handler()) // 127.0.0.1
	t.Cleanup(srv.Close)
	return srv
}

// wantPDFText checks a PDF target's text: both pages' lines, each after its page marker.
func wantPDFText(t *testing.T, what, text string) {
	t.Helper()
	want := "<!-- page 1 -->\n\nFixture PDF page one\nSecond line of page one\n\n\n<!-- page 2 -->\n\nPage two says goodbye\n"
	diff(t, what, want, text)
}

func TestPDFTargets(t *testing.T) {
	b := sharedBrowser(t)
	srv := siteServer(t)
	served := sitefx.PDF(sitefx.PDFPages...)
	for _, path := range []string{"/pdf/inline", "/pdf/attachment", "/pdf/octet"} {
		t.Run(path, func(t *testing.T) {
			res := mustCapture(t, b, Request{URL: srv.URL + path, Name: "doc",
				Outputs: []string{OutputScreenshot, OutputMarkdown, OutputText, OutputMetadata}})
			diff(t, "files", []string{
				"pdf:doc.pdf:application/pdf", "markdown:doc.md:text/markdown; charset=utf-8",
				"text:doc.txt:text/plain; charset=utf-8", "metadata:doc-metadata.json:application/json",
			}, fileKinds(res.Files))
			if !bytes.Equal(fileByKind(t, res, OutputPDF).Data, served) {
				t.Errorf("stored PDF differs from the served one (%d bytes, served %d)", len(fileByKind(t, res, OutputPDF).Data), len(served))
			}
			md := fileByKind(t, res, OutputMarkdown)
			wantPDFText(t, "markdown", string(md.Data))
			wantPDFText(t, "text", string(fileByKind(t, res, OutputText).Data))
			if md.Chars != len([]rune(string(md.Data))) || md.Truncated {
				t.Errorf("markdown Chars %d Truncated %v", md.Chars, md.Truncated)
			}
			var m Metadata
			if err := json.Unmarshal(fileByKind(t, res, OutputMetadata).Data, &m); err != nil {
				t.Fatal(err)
			}
			diff(t, "metadata", Metadata{Title: "snapq fixture", OpenGraph: map[string]string{}, Status: 200,
				ContentType: "application/pdf", FinalURL: srv.URL + path, RedirectChain: []string{}, Pages: 2}, m)
			if len(res.Images) != 0 || len(res.Skipped) != 1 || res.Skipped[0].Output != OutputScreenshot {
				t.Errorf("%d images, skipped %+v; want no image and the screenshot skipped", len(res.Images), res.Skipped)
			}
			diff(t, "status, type, pages, title", "200 application/pdf 2 snapq fixture",
				fmt.Sprint(res.HTTPStatus, " ", res.ContentType, " ", res.PDFPages, " ", res.Title))
		})
	}
	t.Run("only a screenshot asked for", func(t *testing.T) {
		res := mustCapture(t, b, Request{URL: srv.URL + "/pdf/notext", Name: "n"})
		diff(t, "files", []string{"pdf:n.pdf:application/pdf"}, fileKinds(res.Files))
		diff(t, "skipped", "screenshot", res.Skipped[0].Output)
	})
	t.Run("encrypted", func(t *testing.T) {
		_, err := capture(t, b, Request{URL: srv.URL + "/pdf/encrypted", Name: "e", Outputs: []string{OutputMarkdown}})
		wantCode(t, err, CodePDFEncrypted, false)
		// Without text asked for, the encrypted PDF is stored as it is.
		res := mustCapture(t, b, Request{URL: srv.URL + "/pdf/encrypted", Name: "e", Outputs: []string{OutputPDF}})
		diff(t, "files", []string{"pdf:e.pdf:application/pdf"}, fileKinds(res.Files))
		if !bytes.Equal(res.Files[0].Data, sitefx.EncryptedPDF("user-secret", "owner-secret", sitefx.PDFPages...)) || res.PDFPages != 0 {
			t.Errorf("stored %d bytes, pages %d; want the served encrypted PDF", len(res.Files[0].Data), res.PDFPages)
		}
	})
	t.Run("no text", func(t *testing.T) {
		_, err := capture(t, b, Request{URL: srv.URL + "/pdf/notext", Name: "n", Outputs: []string{OutputText}})
		wantCode(t, err, CodePDFNoText, false)
	})
	t.Run("too large by Content-Length", func(t *testing.T) {
		// The server declares 60 MB, sends 9 bytes and holds the connection for 30 s: only
		// a refusal from the header ends this quickly.
		start := time.Now()
		_, err := capture(t, b, Request{URL: srv.URL + "/pdf/huge", Name: "h", Outputs: []string{OutputMarkdown}})
		wantCode(t, err, CodePDFTooLarge, false)
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("took %s to refuse a PDF declared over the limit", d)
		}
	})
}

// An octet-stream declared over the limit is sniffed from its first bytes, not read whole.
func TestOversizeOctetStream(t *testing.T) {
	b := sharedBrowser(t)
	mux := http.NewServeMux()
	for path, first := range map[string]string{"/big.bin": "%PDF-1.4\n", "/big.txt": "just text\n"} {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Header().Set("Content-Length", fmt.Sprint(60<<20))
			_, _ = w.Write([]byte(first + strings.Repeat("x", 4096)))
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
			case <-time.After(30 * time.Second):
			}
		})
	}
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for path, code := range map[string]string{"/big.bin": CodePDFTooLarge, "/big.txt": CodeDownloadTooLarge} {
		t.Run(path, func(t *testing.T) {
			start := time.Now()
			_, err := capture(t, b, Request{URL: srv.URL + path, Name: "b", Outputs: []string{OutputText}})
			wantCode(t, err, code, false)
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %s", d)
			}
		})
	}
}

func TestPDFTargetInvalid(t *testing.T) {
	b := sharedBrowser(t)
	mux := http.NewServeMux()
	mux.HandleFunc("/bad.pdf", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/pdf")
		_, _ = w.Write([]byte("%PDF-1.4\nnot really a PDF\n"))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	_, err := capture(t, b, Request{URL: srv.URL + "/bad.pdf", Name: "b"})
	wantCode(t, err, CodePDFInvalid, false)
}

// A PDF Chromium printed (embedded subset fonts, ToUnicode maps) reads back as its text.
func TestPDFTargetOfChromiumPrint(t *testing.T) {
	b := sharedBrowser(t)
	pages, _ := outputsSite(t)
	printed := fileByKind(t, mustCapture(t, b, Request{URL: pages.URL + "/doc", Name: "p", Outputs: []string{OutputPDF}}), OutputPDF).Data
	mux := http.NewServeMux()
	mux.HandleFunc("/printed.pdf", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/pdf")
		_, _ = w.Write(printed)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	res := mustCapture(t, b, Request{URL: srv.URL + "/printed.pdf", Name: "p", Outputs: []string{OutputText}})
	text := string(fileByKind(t, res, OutputText).Data)
	for _, want := range []string{"<!-- page 1 -->", "Visible Heading", "Hello outputs world"} {
		if !strings.Contains(text, want) {
			t.Errorf("text of Chromium's PDF lacks %q:\n%.500s", want, text)
		}
	}
}

func TestDownloadTargets(t *testing.T) {
	b := sharedBrowser(t)
	srv := siteServer(t)
	t.Run("json attachment", func(t *testing.T) {
		res := mustCapture(t, b, Request{URL: srv.URL + "/download/json", Name: "d",
			Outputs: []string{OutputText, OutputMarkdown, OutputHTML}})
		diff(t, "files", []string{
			"download:d.json:application/json", "text:d.txt:text/plain; charset=utf-8",
			"markdown:d.md:text/markdown; charset=utf-8",
		}, fileKinds(res.Files))
		diff(t, "download body", sitefx.DownloadJSON, string(fileByKind(t, res, FileDownload).Data))
		diff(t, "text", sitefx.DownloadJSON, string(fileByKind(t, res, OutputText).Data))
		diff(t, "markdown", "```json\n"+sitefx.DownloadJSON+"\n```\n", string(fileByKind(t, res, OutputMarkdown).Data))
		if len(res.Skipped) != 1 || res.Skipped[0].Output != OutputHTML || res.HTTPStatus != 200 {
			t.Errorf("skipped %+v, status %d; want html skipped and 200", res.Skipped, res.HTTPStatus)
		}
	})
	// A markdown body is <name>.md, unless the markdown output (always <name>.md)
	// is asked for too: then the body is <name>-download.md, so every name is the job's once.
	t.Run("markdown attachment", func(t *testing.T) {
		res := mustCapture(t, b, Request{URL: srv.URL + "/download/markdown", Name: "m"})
		diff(t, "files alone", []string{"download:m.md:text/markdown; charset=utf-8"}, fileKinds(res.Files))
		res = mustCapture(t, b, Request{URL: srv.URL + "/download/markdown", Name: "m",
			Outputs: []string{OutputMarkdown, OutputText}})
		diff(t, "files with markdown", []string{
			"download:m-download.md:text/markdown; charset=utf-8", "markdown:m.md:text/markdown; charset=utf-8",
			"text:m.txt:text/plain; charset=utf-8",
		}, fileKinds(res.Files))
		diff(t, "download body", sitefx.DownloadMarkdown, string(fileByKind(t, res, FileDownload).Data))
		diff(t, "markdown", sitefx.DownloadMarkdown, string(fileByKind(t, res, OutputMarkdown).Data))
	})
	t.Run("binary attachment", func(t *testing.T) {
		_, err := capture(t, b, Request{URL: srv.URL + "/download/binary", Name: "z", Outputs: []string{OutputText}})
		ce := wantCode(t, err, CodeUnsupportedContentType, false)
		if !strings.Contains(ce.Message, "application/zip") {
			t.Errorf("message %q does not name the type", ce.Message)
		}
	})
	t.Run("pages still render", func(t *testing.T) {
		// text/plain and JSON without an attachment are shown by Chromium, not taken.
		res := mustCapture(t, b, Request{URL: srv.URL + "/short", Name: "s", Outputs: []string{OutputText}})
		if res.ContentType != "text/html" || !strings.Contains(string(fileByKind(t, res, OutputText).Data), "Short page") {
			t.Errorf("content type %q, text %q", res.ContentType, fileByKind(t, res, OutputText).Data)
		}
	})
}

// The PDF's bytes come through the browser context's egress proxy: with a policy that
// refuses loopback the target is blocked, with one that allows it the PDF is stored.
func TestPDFTargetThroughEgress(t *testing.T) {
	srv := siteServer(t)
	for _, tt := range []struct {
		name  string
		allow []netip.Prefix
	}{
		{name: "refused", allow: nil},
		{name: "allowed", allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			guard := egress.New(egress.Config{Policy: egress.NewPolicy(tt.allow)})
			b := newBrowser(t, Config{Tabs: 1, Egress: func() (EgressSession, error) { return guard.NewSession() }})
			res, err := capture(t, b, Request{URL: srv.URL + "/pdf/inline", Name: "g", Outputs: []string{OutputMarkdown}})
			if tt.allow == nil {
				wantCode(t, err, CodeBlockedAddress, false)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			wantPDFText(t, "markdown", string(fileByKind(t, res, OutputMarkdown).Data))
		})
	}
}

func TestPartialWhenBudgetRunsOut(t *testing.T) {
	b := sharedBrowser(t)
	srv := siteServer(t)
	t.Run("never finishes loading", func(t *testing.T) {
		const budget = 2 * time.Second
		start := time.Now()
		res := mustCapture(t, b, Request{URL: srv.URL + "/never", Name: "n", Timeout: budget,
			Outputs: []string{OutputScreenshot, OutputText}})
		took := time.Since(start)
		if !res.Partial || len(res.WaitErrors) != 1 || !strings.Contains(res.WaitErrors[0], "budget ran out") {
			t.Errorf("Partial %v, WaitErrors %q; want partial with the reason", res.Partial, res.WaitErrors)
		}
		if took < budget || took > budget+2*time.Second {
			t.Errorf("took %s for a %s budget", took, budget)
		}
		if len(res.Images) != 1 || res.Images[0].Width != DefaultViewportWidth {
			t.Fatalf("images %d, want the one screen", len(res.Images))
		}
		// The page's blue block rendered: the screenshot is not blank.
		if m := decode(t, res.Images[0]); !strings.Contains(pixel(m, 100, 150), "rgb(26,115,232)") {
			t.Errorf("pixel in the blue block is %s", pixel(m, 100, 150))
		}
		if !strings.Contains(string(fileByKind(t, res, OutputText).Data), "Rendered before the end") || res.Title != "Never finishes" {
			t.Errorf("title %q, text %q", res.Title, fileByKind(t, res, OutputText).Data)
		}
	})
	t.Run("nothing arrives", func(t *testing.T) {
		const budget = time.Second
		start := time.Now()
		_, err := capture(t, b, Request{URL: srv.URL + "/hang", Name: "h", Timeout: budget})
		wantCode(t, err, CodeNavigationTimeout, true)
		if took := time.Since(start); took > budget+time.Second {
			t.Errorf("took %s for a %s budget", took, budget)
		}
	})
	t.Run("a page ready in time is not partial", func(t *testing.T) {
		res := mustCapture(t, b, Request{URL: srv.URL + "/short", Name: "s", Timeout: 10 * time.Second})
		if res.Partial || len(res.WaitErrors) != 0 {
			t.Errorf("Partial %v, WaitErrors %q", res.Partial, res.WaitErrors)
		}
	})
}

func TestTakeDownload(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		status int
		header map[string]string
		want   string // "" = rendered by Chromium; else "mime attachment tooLarge"
	}{
		{name: "html page", status: 200, header: map[string]string{"Content-Type": "text/html; charset=utf-8"}},
		{name: "no type", status: 200},
		{name: "json shown inline", status: 200, header: map[string]string{"Content-Type": "application/json"}},
		{name: "plain text", status: 404, header: map[string]string{"Content-Type": "text/plain"}},
		{name: "png", status: 200, header: map[string]string{"Content-Type": "image/png"}},
		{name: "redirect to a pdf", status: 302, header: map[string]string{"Content-Type": "application/pdf", "Location": "/x.pdf"}},
		{name: "guard's answer", status: 403, header: map[string]string{"Content-Type": "application/pdf", "X-Snapq-Egress": "blocked"}},
		{name: "inline pdf", status: 200, header: map[string]string{"Content-Type": "application/pdf"}, want: "application/pdf false false"},
		{name: "pdf over the limit", status: 200, header: map[string]string{"Content-Type": "application/pdf", "Content-Length": "52428801"},
			want: "application/pdf false true"},
		{name: "pdf at the limit", status: 200, header: map[string]string{"Content-Type": "application/pdf", "Content-Length": "52428800"},
			want: "application/pdf false false"},
		{name: "json attachment", status: 200, header: map[string]string{"Content-Type": "application/json", "Content-Disposition": `attachment; filename="a.json"`},
			want: "application/json true false"},
		{name: "malformed disposition", status: 200, header: map[string]string{"Content-Type": "text/html", "Content-Disposition": `Attachment; filename=a b"`},
			want: "text/html true false"},
		{name: "octet stream", status: 200, header: map[string]string{"Content-Type": "application/octet-stream"}, want: "application/octet-stream false false"},
		{name: "csv", status: 200, header: map[string]string{"Content-Type": "text/csv"}, want: "text/csv false false"},
		{name: "zip", status: 200, header: map[string]string{"Content-Type": "application/zip"}, want: "application/zip false false"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.header {
				h.Set(k, v)
			}
			got := ""
			if d := takeDownload(tt.status, h); d != nil {
				got = fmt.Sprint(d.mime, " ", d.attachment, " ", d.tooLarge)
			}
			diff(t, "taken", tt.want, got)
		})
	}
}

func TestDecodeText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		d      download
		want   string
		wantOK bool
	}{
		{name: "utf-8", d: download{mime: "text/csv", data: []byte("a,b\nÿ,2\n")}, want: "a,b\nÿ,2\n", wantOK: true},
		{name: "bom dropped", d: download{mime: "text/plain", data: []byte("\xef\xbb\xbfhi")}, want: "hi", wantOK: true},
		{name: "latin-1 declared", d: download{mime: "text/plain", charset: "iso-8859-1", data: []byte("caf\xe9")}, want: "café", wantOK: true},
		{name: "invalid utf-8", d: download{mime: "application/octet-stream", data: []byte("caf\xe9")}},
		{name: "control bytes", d: download{mime: "application/octet-stream", data: []byte("PK\x03\x04")}},
		{name: "image", d: download{mime: "image/tiff", data: []byte("II*")}},
		{name: "empty", d: download{mime: "text/plain"}, want: "", wantOK: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := decodeText(&tt.d, markup.Codec{})
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("decodeText = %q, %v; want %q, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}
