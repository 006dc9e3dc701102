package pdftext

import (
	"errors"
	"fmt"
	"strings"
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
// extracts every page's text. Failures are *Error. It reads with poppler's tools when they
// are installed, with the Go reader otherwise (ReaderName says which).
func Read(data []byte, maxPages int, withText bool) (Doc, error) {
	return readWith(popplerDir(), data, maxPages, withText)
}

// readWith reads with poppler's tools in dir, or with the Go reader when dir is "".
func readWith(dir string, data []byte, maxPages int, withText bool) (Doc, error) {
	if dir == "" {
		return readGo(data, maxPages, withText)
	}
	return readPoppler(dir, data, maxPages, withText)
}

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
