package capture

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/dslipak/pdf"

	sitefx "github.com/snapq/snapq/internal/fixtures"
)

func TestReadPDF(t *testing.T) {
	twoPages := []string{"Alpha line one\nAlpha (line) two", "Beta page"}
	wantMarkdown := "<!-- page 1 -->\n\nAlpha line one\nAlpha (line) two\n\n\n<!-- page 2 -->\n\nBeta page\n"
	tests := []struct {
		name     string
		data     []byte
		wantCode string
		wantText string // markdown with page markers
	}{
		{name: "plain", data: sitefx.PDF(twoPages...), wantText: wantMarkdown},
		{name: "pdf 2.0 header", data: append([]byte("%PDF-2.0\n"), sitefx.PDF(twoPages...)[9:]...), wantText: wantMarkdown},
		{name: "encrypted without a user password", data: sitefx.EncryptedPDF("", "owner", twoPages...), wantText: wantMarkdown},
		{name: "encrypted with a user password", data: sitefx.EncryptedPDF("user", "owner", twoPages...), wantCode: CodePDFEncrypted},
		{name: "unsupported encryption", data: sitefx.PDFWithEncryptDict(twoPages...), wantCode: CodePDFEncrypted},
		{name: "no text", data: sitefx.PDF("", ""), wantCode: CodePDFNoText},
		{name: "garbage", data: []byte("%PDF-1.4\nthis is not a pdf at all"), wantCode: CodePDFInvalid},
		{name: "truncated", data: sitefx.PDF(twoPages...)[:200], wantCode: CodePDFInvalid},
		{name: "tiny", data: []byte("%PDF-"), wantCode: CodePDFInvalid},
		{name: "empty", data: nil, wantCode: CodePDFInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := readPDF(tt.data, true)
			var md string
			if err == nil {
				md, err = pdfMarkdown(doc.text)
			}
			if tt.wantCode != "" {
				var ce *Error
				if !errors.As(err, &ce) || ce.Code != tt.wantCode || ce.Retryable {
					t.Fatalf("error %v, want non-retryable %s", err, tt.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			diff(t, "markdown", tt.wantText, md)
			diff(t, "pages", 2, doc.pages)
			diff(t, "title", "snapq fixture", doc.title)
		})
	}
}

func TestReadPDFPageLimit(t *testing.T) {
	pages := make([]string, MaxPDFPages+1)
	for i := range pages {
		pages[i] = "p"
	}
	_, err := readPDF(sitefx.PDF(pages...), false)
	var ce *Error
	if !errors.As(err, &ce) || ce.Code != CodePDFTooLarge || !strings.Contains(ce.Message, "501 pages") {
		t.Fatalf("error %v, want pdf_too_large naming 501 pages", err)
	}
}

func TestPageTextSpacing(t *testing.T) {
	g := func(x, y, w float64, s string) pdf.Text { return pdf.Text{FontSize: 10, X: x, Y: y, W: w, S: s} }
	got := pageText([]pdf.Text{
		g(0, 100, 5, "a"), g(5, 100, 5, "b"), g(30, 100, 5, "c"), // a gap of 20 pt: a word break
		g(0, 88, 5, "d"), // the next line
		g(0, 40, 5, "e"), // far below: a new paragraph
	})
	diff(t, "text", "ab c\nd\n\ne", got)
}

func TestPageTextWithoutWidths(t *testing.T) {
	// Widths unknown: each run's glyphs share the run's X. "T" then "op" is one word split
	// by kerning; "far" starts well past where "op" could end.
	g := func(x float64, s string) pdf.Text { return pdf.Text{FontSize: 10, X: x, Y: 100, S: s} }
	got := pageText([]pdf.Text{g(0, "T"), g(6, "o"), g(6, "p"), g(60, "f"), g(60, "a"), g(60, "r")})
	diff(t, "text", "Top far", got)
}

func TestTakeDownload(t *testing.T) {
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
			got, ok := decodeText(&tt.d)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("decodeText = %q, %v; want %q, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}
