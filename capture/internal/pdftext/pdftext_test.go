package pdftext

import (
	"errors"
	"strings"
	"testing"

	"github.com/dslipak/pdf"
	"github.com/google/go-cmp/cmp"

	sitefx "github.com/snapq/snapq/internal/fixtures"
)

func TestRead(t *testing.T) {
	twoPages := []string{"Alpha line one\nAlpha (line) two", "Beta page"}
	wantMarkdown := "<!-- page 1 -->\n\nAlpha line one\nAlpha (line) two\n\n\n<!-- page 2 -->\n\nBeta page\n"
	tests := []struct {
		name     string
		data     []byte
		wantKind error
		wantText string // markdown with page markers
	}{
		{name: "plain", data: sitefx.PDF(twoPages...), wantText: wantMarkdown},
		{name: "pdf 2.0 header", data: append([]byte("%PDF-2.0\n"), sitefx.PDF(twoPages...)[9:]...), wantText: wantMarkdown},
		{name: "encrypted without a user password", data: sitefx.EncryptedPDF("", "owner", twoPages...), wantText: wantMarkdown},
		{name: "encrypted with a user password", data: sitefx.EncryptedPDF("user", "owner", twoPages...), wantKind: ErrEncrypted},
		{name: "unsupported encryption", data: sitefx.PDFWithEncryptDict(twoPages...), wantKind: ErrEncrypted},
		{name: "no text", data: sitefx.PDF("", ""), wantKind: ErrNoText},
		{name: "garbage", data: []byte("%PDF-1.4\nthis is not a pdf at all"), wantKind: ErrInvalid},
		{name: "truncated", data: sitefx.PDF(twoPages...)[:200], wantKind: ErrInvalid},
		{name: "tiny", data: []byte("%PDF-"), wantKind: ErrInvalid},
		{name: "empty", data: nil, wantKind: ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			doc, err := Read(tt.data, 500, true)
			var md string
			if err == nil {
				md, err = Markdown(doc.Text)
			}
			if tt.wantKind != nil {
				var pe *Error
				if !errors.As(err, &pe) || !errors.Is(err, tt.wantKind) || pe.Message == "" {
					t.Fatalf("error %v, want a *Error of kind %q", err, tt.wantKind)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.wantText, md); d != "" {
				t.Errorf("markdown mismatch (-want +got):\n%s", d)
			}
			if d := cmp.Diff(Doc{Pages: 2, Title: "snapq fixture"}, Doc{Pages: doc.Pages, Title: doc.Title}); d != "" {
				t.Errorf("doc mismatch (-want +got):\n%s", d)
			}
		})
	}
}

func TestReadPageLimit(t *testing.T) {
	t.Parallel()
	data := sitefx.PDF("a", "b", "c")
	_, err := Read(data, 2, false)
	var pe *Error
	if !errors.As(err, &pe) || !errors.Is(err, ErrTooManyPages) || !strings.Contains(pe.Message, "3 pages; at most 2") {
		t.Fatalf("error %v, want ErrTooManyPages naming 3 pages and the limit of 2", err)
	}
	if doc, err := Read(data, 3, false); err != nil || doc.Pages != 3 {
		t.Fatalf("at the limit: %d pages, error %v; want 3 pages, no error", doc.Pages, err)
	}
}

func TestPageTextSpacing(t *testing.T) {
	g := func(x, y, w float64, s string) pdf.Text { return pdf.Text{FontSize: 10, X: x, Y: y, W: w, S: s} }
	got := pageText([]pdf.Text{
		g(0, 100, 5, "a"), g(5, 100, 5, "b"), g(30, 100, 5, "c"), // a gap of 20 pt: a word break
		g(0, 88, 5, "d"), // the next line
		g(0, 40, 5, "e"), // far below: a new paragraph
	})
	if d := cmp.Diff("ab c\nd\n\ne", got); d != "" {
		t.Errorf("text mismatch (-want +got):\n%s", d)
	}
}

func TestPageTextWithoutWidths(t *testing.T) {
	// Widths unknown: each run's glyphs share the run's X. "T" then "op" is one word split
	// by kerning; "far" starts well past where "op" could end.
	g := func(x float64, s string) pdf.Text { return pdf.Text{FontSize: 10, X: x, Y: 100, S: s} }
	got := pageText([]pdf.Text{g(0, "T"), g(6, "o"), g(6, "p"), g(60, "f"), g(60, "a"), g(60, "r")})
	if d := cmp.Diff("Top far", got); d != "" {
		t.Errorf("text mismatch (-want +got):\n%s", d)
	}
}
