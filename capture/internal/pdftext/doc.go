// Package pdftext reads a PDF's page count, title and per-page text, and joins the pages'
// text into Markdown with a marker before each page.
//
// Why it exists: when a capture's target is a PDF, capture takes its bytes from the
// navigation and must say how many pages it has and, when text or markdown is asked for,
// what it says. That is pure byte work on untrusted input; no browser is involved. The
// reader is poppler's pdfinfo and pdftotext (Debian's poppler-utils, poppler.go) where
// they are installed, a Go reader (github.com/dslipak/pdf, goreader.go) otherwise. Poppler
// was picked by measurement on testdata/corpus (issue 25): it reads every kind of valid PDF
// there, while the Go reader loops on pages without a content stream and misreads object
// streams and AES or RC4 encryption with an empty password. Failures come back as *Error
// with a Kind (ErrEncrypted, ErrInvalid, ErrTooManyPages, ErrNoText, ErrTooLarge,
// ErrTimeout) that capture maps to its public pdf_* codes; the page limit is the caller's
// (capture.MaxPDFPages).
//
// Either reader can loop, crash or inflate a small file into gigabytes (security audit,
// issue 12), so capture calls ReadInChild, which runs Read in a re-executed child of the
// same binary under wall-clock, CPU and memory limits (child.go) that pass on to the
// poppler tools it starts; Read itself stays in-process for the child and the tests.
package pdftext
