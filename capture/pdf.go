package capture

import (
	"context"
	"errors"
	"time"

	"github.com/snapq/snapq/capture/internal/pdftext"
)

// PDF target limits.
const (
	// MaxPDFBytes is the largest PDF (or other download) a target may serve: checked against
	// Content-Length before anything is read, then against the bytes read.
	MaxPDFBytes = 50 << 20
	// MaxPDFPages is the most pages a PDF target may have.
	MaxPDFPages = 500
	// PDFReadTimeout bounds the wall clock of reading one PDF (30s); the job's own deadline
	// may end it sooner. The reader's CPU time is capped one second past it.
	PDFReadTimeout = 30 * time.Second
	// PDFReadMemory is the address space the PDF reader may map (1 GiB) beyond what its
	// process starts with.
	PDFReadMemory = 1 << 30
)

// Failure codes of PDF targets and downloads. They are part of the public API.
const (
	// CodePDFTooLarge: the PDF is over MaxPDFBytes or MaxPDFPages, or its text is past 64
	// MiB (with the Go reader, also its pages' content inflating past 32 MiB) (not
	// retryable).
	CodePDFTooLarge = "pdf_too_large"
	// CodePDFEncrypted: text or markdown was asked for and the PDF needs a user password to
	// be read (or, with the Go reader, uses an encryption it does not support) (not
	// retryable). Without them the PDF is stored as it is.
	CodePDFEncrypted = "pdf_encrypted"
	// CodePDFNoText: text or markdown was asked for and the PDF has no text layer, e.g. a
	// scan (not retryable).
	CodePDFNoText = "pdf_no_text"
	// CodePDFInvalid: the bytes are not a PDF this reader can parse, or the reader failed on
	// them (a crash, its memory limit) (not retryable).
	CodePDFInvalid = "pdf_invalid"
	// CodePDFTimeout: reading the PDF took longer than PDFReadTimeout, its CPU limit or the
	// job's remaining time (not retryable: a PDF that hangs the reader hangs it again).
	CodePDFTimeout = "pdf_timeout"
	// CodeUnsupportedContentType: the target is a download that is neither a PDF nor
	// decodable text or JSON (not retryable).
	CodeUnsupportedContentType = "unsupported_content_type"
	// CodeDownloadTooLarge: a download other than a PDF is over MaxPDFBytes (not retryable).
	CodeDownloadTooLarge = "download_too_large"
)

// readPDF opens data (at most MaxPDFPages pages) and counts its pages; with withText it also
// extracts every page's text (internal/pdftext: poppler's tools, see PDFReader). The reader runs in a child process of this
// executable, limited in wall clock (PDFReadTimeout or ctx's deadline, whichever is first),
// CPU time and memory (PDFReadMemory), so a PDF that hangs or crashes it, or inflates past
// memory, fails this job alone: with pdf_timeout, pdf_invalid or pdf_too_large. Failures are
// *Error with a pdf_* code, or ctx's error when ctx was canceled.
func readPDF(ctx context.Context, data []byte, withText bool) (pdftext.Doc, error) {
	doc, err := pdftext.ReadInChild(ctx, data, MaxPDFPages, withText,
		pdftext.Limits{Timeout: PDFReadTimeout, Memory: PDFReadMemory})
	return doc, pdfError(err)
}

// PDFReader names the reader of PDF targets on this machine: "poppler" (Debian's
// poppler-utils: pdfinfo and pdftotext on PATH) or "go" (a Go reader that loops on some
// valid PDFs until the time limit ends it; used only where poppler-utils is missing).
func PDFReader() string { return pdftext.ReaderName() }

// pdfMarkdown joins the pages' text with a "<!-- page N -->" marker before each page. It
// fails with pdf_no_text when no page has any text.
func pdfMarkdown(pages []string) (string, error) {
	md, err := pdftext.Markdown(pages)
	return md, pdfError(err)
}

// pdfCodes maps the kinds of pdftext failures to their codes.
var pdfCodes = map[error]string{
	pdftext.ErrEncrypted:    CodePDFEncrypted,
	pdftext.ErrInvalid:      CodePDFInvalid,
	pdftext.ErrTooManyPages: CodePDFTooLarge,
	pdftext.ErrNoText:       CodePDFNoText,
	pdftext.ErrTooLarge:     CodePDFTooLarge,
	pdftext.ErrTimeout:      CodePDFTimeout,
}

// pdfError classifies a pdftext failure as a non-retryable *Error with the same message and
// underlying reader error. Other errors (the reader could not be started, the job was
// canceled) and nil pass through.
func pdfError(err error) error {
	var pe *pdftext.Error
	if !errors.As(err, &pe) {
		return err
	}
	code, ok := pdfCodes[pe.Kind]
	if !ok {
		code = CodePDFInvalid
	}
	return newError(code, false, pe.Err, "%s", pe.Message)
}
