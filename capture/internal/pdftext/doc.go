// Package pdftext reads a PDF's page count, title and per-page text, and joins the pages'
// text into Markdown with a marker before each page.
//
// Why it exists: when a capture's target is a PDF, capture takes its bytes from the
// navigation and must say how many pages it has and, when text or markdown is asked for,
// what it says. That is pure byte work on untrusted input through a third-party reader
// (github.com/dslipak/pdf), with its own quirks (PDF 2.0 headers, encryption it cannot
// open, panics on damaged files, glyphs without widths) and its own tests; no browser is
// involved. Failures come back as *Error with a Kind (ErrEncrypted, ErrInvalid,
// ErrTooManyPages, ErrNoText, ErrTooLarge, ErrTimeout) that capture maps to its public pdf_*
// codes; the page limit is the caller's (capture.MaxPDFPages).
//
// The reader can also loop for ever, overflow its stack (fatal to the process) or inflate a
// small file into gigabytes (security audit, issue 12), so capture calls ReadInChild, which
// runs Read in a re-executed child of the same binary under wall-clock, CPU and memory
// limits (child.go); Read itself stays in-process for the child and the tests.
package pdftext
