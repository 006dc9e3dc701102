package capture

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"unicode"

	"github.com/dslipak/pdf"
)

// PDF target limits.
const (
	// MaxPDFBytes is the largest PDF (or other download) a target may serve: checked against
	// Content-Length before anything is read, then against the bytes read.
	MaxPDFBytes = 50 << 20
	// MaxPDFPages is the most pages a PDF target may have.
	MaxPDFPages = 500
)

// Failure codes of PDF targets and downloads. They are part of the public API.
const (
	// CodePDFTooLarge: the PDF is over MaxPDFBytes or MaxPDFPages (not retryable).
	CodePDFTooLarge = "pdf_too_large"
	// CodePDFEncrypted: text or markdown was asked for and the PDF needs a password to be
	// read, or uses an encryption the reader does not support (not retryable). Without them
	// the PDF is stored as it is.
	CodePDFEncrypted = "pdf_encrypted"
	// CodePDFNoText: text or markdown was asked for and the PDF has no text layer, e.g. a
	// scan (not retryable).
	CodePDFNoText = "pdf_no_text"
	// CodePDFInvalid: the bytes are not a PDF this reader can parse (not retryable).
	CodePDFInvalid = "pdf_invalid"
	// CodeUnsupportedContentType: the target is a download that is neither a PDF nor
	// decodable text or JSON (not retryable).
	CodeUnsupportedContentType = "unsupported_content_type"
	// CodeDownloadTooLarge: a download other than a PDF is over MaxPDFBytes (not retryable).
	CodeDownloadTooLarge = "download_too_large"
)

// pdfDoc is what snapq reads from a PDF: its page count, title and the text of each page.
type pdfDoc struct {
	pages int
	title string
	text  []string // per page, lines joined by "\n"; nil unless asked for
}

// readPDF opens data and counts its pages; with withText it also extracts every page's text.
// Failures are *Error with a pdf_* code. The reader is third-party code on untrusted bytes:
// its panics are recovered and reported as pdf_invalid.
func readPDF(data []byte, withText bool) (doc pdfDoc, err error) {
	defer func() {
		if r := recover(); r != nil {
			doc, err = pdfDoc{}, newError(CodePDFInvalid, false, nil, "the PDF could not be parsed: %v", r)
		}
	}()
	r, err := pdf.NewReader(bytes.NewReader(pdfHeaderFix(data)), int64(len(data)))
	if err != nil {
		if hasEncryptDict(data) {
			return pdfDoc{}, newError(CodePDFEncrypted, false, err, "the PDF is encrypted and cannot be read without its password")
		}
		return pdfDoc{}, newError(CodePDFInvalid, false, err, "the PDF could not be parsed")
	}
	doc.pages = r.NumPage()
	switch {
	case doc.pages > MaxPDFPages:
		return pdfDoc{}, newError(CodePDFTooLarge, false, nil, "the PDF has %d pages; at most %d are read", doc.pages, MaxPDFPages)
	case doc.pages < 1:
		return pdfDoc{}, newError(CodePDFInvalid, false, nil, "the PDF has no pages")
	}
	if t := r.Trailer().Key("Info").Key("Title"); t.Kind() == pdf.String {
		doc.title = strings.TrimSpace(t.Text())
	}
	if !withText {
		return doc, nil
	}
	doc.text = make([]string, doc.pages)
	for i := 1; i <= doc.pages; i++ {
		p := r.Page(i)
		if p.V.IsNull() {
			return pdfDoc{}, newError(CodePDFInvalid, false, nil, "page %d of %d is missing", i, doc.pages)
		}
		doc.text[i-1] = pageText(p.Content().Text)
	}
	return doc, nil
}

// pdfHeaderFix presents data with a "%PDF-1.7\n" header when it has another version (the
// reader refuses "%PDF-2.0"); the replacement has the same length, so offsets hold.
func pdfHeaderFix(data []byte) []byte {
	if len(data) < 9 || !bytes.HasPrefix(data, []byte("%PDF-")) {
		return data
	}
	if bytes.HasPrefix(data, []byte("%PDF-1.")) && data[7] >= '0' && data[7] <= '7' && (data[8] == '\n' || data[8] == '\r') {
		return data
	}
	fixed := bytes.Clone(data[:9])
	copy(fixed, "%PDF-1.7\n")
	return append(fixed, data[9:]...)
}

// hasEncryptDict reports whether the file's trailer names an /Encrypt dictionary.
func hasEncryptDict(data []byte) bool {
	tail := data[max(0, len(data)-4096):]
	return bytes.Contains(tail, []byte("/Encrypt")) || bytes.Contains(data, []byte("/Encrypt "))
}

// pageText lays out one page's glyphs as lines of text. Glyphs are kept in content-stream
// order (the order they are read in); a new line starts when the baseline moves by half a
// font size, a blank line when it moves by more than two and a half. Within a line a space
// goes between glyphs that are visibly apart: past the previous glyph's width when the font
// gives widths, or, when it does not (the reader then places every glyph of a text run at
// the run's start), when a run starts well past where the previous run could have ended.
func pageText(glyphs []pdf.Text) string {
	var b strings.Builder
	var prev *pdf.Text
	runX, runLen := 0.0, 0
	for i := range glyphs {
		g := &glyphs[i]
		if g.S == "" {
			continue
		}
		size := math.Max(math.Abs(g.FontSize), 1)
		space := false
		switch {
		case prev == nil:
			runX, runLen = g.X, 0
		case math.Abs(g.Y-prev.Y) > size/2:
			b.WriteByte('\n')
			if math.Abs(g.Y-prev.Y) > 2.5*size {
				b.WriteByte('\n')
			}
			runX, runLen = g.X, 0
		case prev.W > 0:
			space = g.X-(prev.X+prev.W) > size*0.2 || g.X < prev.X-size
		case g.X != runX:
			space = g.X-runX > float64(runLen)*0.6*size+0.8*size || g.X < runX-size
			runX, runLen = g.X, 0
		}
		if space && !endsSpace(b.String()) && g.S != " " {
			b.WriteByte(' ')
		}
		b.WriteString(g.S)
		runLen++
		prev = g
	}
	lines := strings.Split(b.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRightFunc(l, unicode.IsSpace)
	}
	return strings.Trim(strings.Join(lines, "\n"), "\n")
}

func endsSpace(s string) bool { return s != "" && (s[len(s)-1] == ' ' || s[len(s)-1] == '\n') }

// pdfMarkdown joins the pages' text with a "<!-- page N -->" marker before each page. It
// fails with pdf_no_text when no page has any text.
func pdfMarkdown(pages []string) (string, error) {
	var b strings.Builder
	empty := true
	for i, t := range pages {
		if i > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "<!-- page %d -->\n", i+1)
		if strings.TrimSpace(t) != "" {
			empty = false
			b.WriteString("\n" + t + "\n")
		}
	}
	if empty {
		return "", newError(CodePDFNoText, false, nil, "the PDF's %d pages have no text layer (a scan or drawings only)", len(pages))
	}
	return b.String(), nil
}
