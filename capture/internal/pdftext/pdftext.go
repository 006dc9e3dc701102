package pdftext

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"unicode"

	"github.com/dslipak/pdf"
)

// Kinds of failure. Every error Read and Markdown return is an *Error whose Kind is one of
// these, so errors.Is(err, ErrEncrypted) and the like work.
var (
	// ErrEncrypted: the PDF needs a password to be read, or uses an encryption the reader
	// does not support.
	ErrEncrypted = errors.New("pdf is encrypted")
	// ErrInvalid: the bytes are not a PDF the reader can parse.
	ErrInvalid = errors.New("pdf is invalid")
	// ErrTooManyPages: the PDF has more pages than Read was allowed to read.
	ErrTooManyPages = errors.New("pdf has too many pages")
	// ErrNoText: no page has a text layer (a scan, or drawings only).
	ErrNoText = errors.New("pdf has no text")
	// ErrTooLarge: the pages' content inflates past MaxContentBytes, or the text read from
	// it is past the child's output limit.
	ErrTooLarge = errors.New("pdf content is too large")
	// ErrTimeout: ReadInChild's reader did not finish within its wall-clock or CPU time.
	ErrTimeout = errors.New("pdf read timed out")
)

// MaxContentBytes bounds the inflated bytes of all pages' content streams Read interprets
// for text (a stream a document uses twice counts twice): 32 MiB, far more than the text of
// 500 ordinary pages, while a reader turns every byte of a string into a glyph record of
// about 100 bytes. The streams are inflated once, to count, before they are interpreted.
const MaxContentBytes = 32 << 20

// Error is a PDF this package could not read.
type Error struct {
	Kind    error  // ErrEncrypted, ErrInvalid, ErrTooManyPages, ErrNoText, ErrTooLarge or ErrTimeout
	Message string // one sentence for the person who asked, e.g. "the PDF has no pages"
	Err     error  // the reader's own error, when there is one
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

// Is reports whether target is e's Kind.
func (e *Error) Is(target error) bool { return target == e.Kind }

func (e *Error) Unwrap() error { return e.Err }

func newError(kind, err error, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...), Err: err}
}

// Doc is what snapq reads from a PDF: its page count, title and the text of each page.
type Doc struct {
	Pages int
	Title string
	Text  []string // per page, lines joined by "\n"; nil unless asked for
}

// Read opens data and counts its pages, refusing more than maxPages; with withText it also
// extracts every page's text. Failures are *Error. The reader is third-party code on
// untrusted bytes: its panics are recovered and reported as ErrInvalid.
func Read(data []byte, maxPages int, withText bool) (doc Doc, err error) {
	defer func() {
		if r := recover(); r != nil {
			doc, err = Doc{}, newError(ErrInvalid, nil, "the PDF could not be parsed: %v", r)
		}
	}()
	r, err := pdf.NewReader(bytes.NewReader(headerFix(data)), int64(len(data)))
	if err != nil {
		if hasEncryptDict(data) {
			return Doc{}, newError(ErrEncrypted, err, "the PDF is encrypted and cannot be read without its password")
		}
		return Doc{}, newError(ErrInvalid, err, "the PDF could not be parsed")
	}
	doc.Pages = r.NumPage()
	switch {
	case doc.Pages > maxPages:
		return Doc{}, newError(ErrTooManyPages, nil, "the PDF has %d pages; at most %d are read", doc.Pages, maxPages)
	case doc.Pages < 1:
		return Doc{}, newError(ErrInvalid, nil, "the PDF has no pages")
	}
	if t := r.Trailer().Key("Info").Key("Title"); t.Kind() == pdf.String {
		doc.Title = strings.TrimSpace(t.Text())
	}
	if !withText {
		return doc, nil
	}
	doc.Text = make([]string, doc.Pages)
	budget := int64(MaxContentBytes)
	for i := 1; i <= doc.Pages; i++ {
		p := r.Page(i)
		if p.V.IsNull() {
			return Doc{}, newError(ErrInvalid, nil, "page %d of %d is missing", i, doc.Pages)
		}
		if budget -= contentBytes(p.V.Key("Contents"), budget+1); budget < 0 {
			return Doc{}, newError(ErrTooLarge, nil, "the PDF's page content inflates past %d MiB (at page %d)", MaxContentBytes>>20, i)
		}
		doc.Text[i-1] = pageText(p.Content().Text)
	}
	return doc, nil
}

// contentBytes inflates a page's content stream, or each of an array of them, and counts
// the bytes, stopping after limit.
func contentBytes(contents pdf.Value, limit int64) int64 {
	streams := []pdf.Value{contents}
	if contents.Kind() == pdf.Array {
		streams = streams[:0]
		for i := range contents.Len() {
			streams = append(streams, contents.Index(i))
		}
	}
	var n int64
	for _, s := range streams {
		if s.Kind() != pdf.Stream {
			continue
		}
		rc := s.Reader()
		m, _ := io.Copy(io.Discard, io.LimitReader(rc, limit-n))
		_ = rc.Close()
		if n += m; n >= limit {
			break
		}
	}
	return n
}

// headerFix presents data with a "%PDF-1.7\n" header when it has another version (the
// reader refuses "%PDF-2.0"); the replacement has the same length, so offsets hold.
func headerFix(data []byte) []byte {
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

// Markdown joins the pages' text with a "<!-- page N -->" marker before each page. It
// fails with ErrNoText when no page has any text.
func Markdown(pages []string) (string, error) {
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
		return "", newError(ErrNoText, nil, "the PDF's %d pages have no text layer (a scan or drawings only)", len(pages))
	}
	return b.String(), nil
}
