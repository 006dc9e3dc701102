package capture

import (
	"context"
	"errors"
	"strings"
	"testing"

	sitefx "github.com/snapq/snapq/internal/fixtures"
)

func TestReadPDF(t *testing.T) {
	t.Parallel()
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
			doc, err := readPDF(context.Background(), tt.data, true)
			var md string
			if err == nil {
				md, err = pdfMarkdown(doc.Text)
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
			diff(t, "pages", 2, doc.Pages)
			diff(t, "title", "snapq fixture", doc.Title)
		})
	}
}

func TestReadPDFPageLimit(t *testing.T) {
	t.Parallel()
	pages := make([]string, MaxPDFPages+1)
	for i := range pages {
		pages[i] = "p"
	}
	_, err := readPDF(context.Background(), sitefx.PDF(pages...), false)
	var ce *Error
	if !errors.As(err, &ce) || ce.Code != CodePDFTooLarge || !strings.Contains(ce.Message, "501 pages") {
		t.Fatalf("error %v, want pdf_too_large naming 501 pages", err)
	}
}
