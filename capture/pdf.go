package capture

import (
	"errors"

	"github.com/snapq/snapq/capture/internal/pdftext"
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

// readPDF opens data (at most MaxPDFPages pages) and counts its pages; with withText it also
// extracts every page's text (internal/pdftext). Failures are *Error with a pdf_* code.
func readPDF(data []byte, withText bool) (pdftext.Doc, error) {
	doc, err := pdftext.Read(data, MaxPDFPages, withText)
	return doc, pdfError(err)
}

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
}

// pdfError classifies a pdftext failure as a non-retryable *Error with the same message and
// underlying reader error. Other errors (none today) and nil pass through.
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
