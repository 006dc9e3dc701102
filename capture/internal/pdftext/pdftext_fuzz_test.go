package pdftext

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	sitefx "github.com/snapq/snapq/internal/fixtures"
)

// Fuzz bounds. The Go reader (github.com/dslipak/pdf) is known to loop forever on some
// malformed inputs (an unterminated "[", a startxref past the end) and to overflow the stack
// on deeply nested ones, which no recover can catch, and poppler's tools are C on untrusted
// bytes: reads run in the bounded child, as in production.
const (
	maxFuzzPDF = 64 << 10
	readBound  = 3 * time.Second
)

// FuzzRead reads malformed PDFs. Read returns a Doc of 1..maxPages pages (with one text per
// page when asked for), or an *Error of one of the documented kinds with a message.
func FuzzRead(f *testing.F) {
	two := sitefx.PDF("Alpha line one\nAlpha (line) two", "Beta page")
	for _, data := range [][]byte{
		two,
		sitefx.PDF("a", "", "c"),
		append([]byte("%PDF-2.0\n"), two[9:]...),
		sitefx.EncryptedPDF("", "owner", "secret text"),
		sitefx.EncryptedPDF("user", "owner", "secret text"),
		sitefx.PDFWithEncryptDict("x"),
		sitefx.PDF("", ""),
		two[:200],
		two[:len(two)-30],
		bytes.Replace(two, []byte("/Count 2"), []byte("/Count 9"), 1),
		[]byte("%PDF-1.4\nthis is not a pdf at all"),
		[]byte("%PDF-"),
		nil,
	} {
		f.Add(data, uint8(10), true)
	}
	f.Add(sitefx.PDF("a", "b", "c"), uint8(2), false)

	f.Fuzz(func(t *testing.T, data []byte, maxPages uint8, withText bool) {
		if len(data) > maxFuzzPDF {
			t.Skip()
		}
		// The reader is known to loop for ever on some malformed files (a startxref past
		// the end, a "< >" key in the trailer): it runs in its limited child process, as in
		// production, where such a file ends as ErrTimeout.
		var r struct {
			doc Doc
			err error
		}
		r.doc, r.err = ReadInChild(context.Background(), data, int(maxPages), withText,
			Limits{Timeout: readBound, Memory: 512 << 20})
		if r.err != nil {
			var pe *Error
			if !errors.As(r.err, &pe) || pe.Message == "" {
				t.Fatalf("error %v (%T), want a *Error with a message", r.err, r.err)
			}
			switch pe.Kind {
			case ErrEncrypted, ErrInvalid, ErrTooManyPages, ErrTooLarge, ErrTimeout:
			default:
				t.Fatalf("error %v has kind %v", r.err, pe.Kind)
			}
			if fmt.Sprint(r.doc) != fmt.Sprint(Doc{}) {
				t.Fatalf("error %v came with %+v", r.err, r.doc)
			}
			return
		}
		if r.doc.Pages < 1 || r.doc.Pages > int(maxPages) {
			t.Fatalf("%d pages read with a limit of %d", r.doc.Pages, maxPages)
		}
		if withText && len(r.doc.Text) != r.doc.Pages {
			t.Fatalf("%d page texts for %d pages", len(r.doc.Text), r.doc.Pages)
		}
		if !withText && r.doc.Text != nil {
			t.Fatalf("text extracted without being asked for")
		}
		if withText {
			if _, err := Markdown(r.doc.Text); err != nil && !errors.Is(err, ErrNoText) {
				t.Fatalf("Markdown: %v", err)
			}
		}
	})
}
