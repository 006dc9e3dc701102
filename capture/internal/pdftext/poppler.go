package pdftext

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"unicode"
)

// Poppler's command-line tools (Debian's poppler-utils) are the reader when they are
// installed: pdfinfo counts the pages and reads the title, pdftotext extracts the text,
// one page per form feed. Measured on a corpus of PDFs from Chromium, Ghostscript, qpdf
// and hand-written files (testdata/corpus), they read every kind the Go reader loops on or
// misreads: pages without a content stream, object streams, AES-128/256 and RC4
// encryption with an empty user password. They run as children of the limited child
// process (child.go), so the same wall-clock, CPU and address-space limits hold.
const (
	pdfinfoBin   = "pdfinfo"
	pdftotextBin = "pdftotext"
	// maxTextBytes caps what pdftotext may print: past it the read fails with ErrTooLarge.
	maxTextBytes = DefaultOutput
	// maxInfoBytes caps what pdfinfo may print (a few lines).
	maxInfoBytes = 64 << 10
)

// popplerDir is the folder holding both pdfinfo and pdftotext, found on PATH once; "" when
// poppler-utils is not installed (then the Go reader reads).
var popplerDir = sync.OnceValue(func() string {
	info, err1 := exec.LookPath(pdfinfoBin)
	text, err2 := exec.LookPath(pdftotextBin)
	if err1 != nil || err2 != nil || filepath.Dir(info) != filepath.Dir(text) {
		return ""
	}
	dir, err := filepath.Abs(filepath.Dir(info))
	if err != nil {
		return ""
	}
	return dir
})

// ReaderName names the reader Read uses on this machine: "poppler" (pdfinfo and pdftotext
// on PATH) or "go" (github.com/dslipak/pdf, when poppler-utils is not installed).
func ReaderName() string {
	if popplerDir() != "" {
		return "poppler"
	}
	return "go"
}

// readPoppler is Read through poppler's tools in dir.
func readPoppler(dir string, data []byte, maxPages int, withText bool) (Doc, error) {
	out, err := runTool(filepath.Join(dir, pdfinfoBin), data, maxInfoBytes, "-enc", "UTF-8", "-")
	if err != nil {
		return Doc{}, err
	}
	var doc Doc
	for line := range strings.Lines(string(out)) {
		key, val, ok := strings.Cut(line, ":")
		switch val = strings.TrimSpace(val); {
		case !ok:
		case key == "Pages":
			doc.Pages, _ = strconv.Atoi(val)
		case key == "Title":
			doc.Title = val
		}
	}
	switch {
	case doc.Pages > maxPages:
		return Doc{}, newError(ErrTooManyPages, nil, "the PDF has %d pages; at most %d are read", doc.Pages, maxPages)
	case doc.Pages < 1:
		return Doc{}, newError(ErrInvalid, nil, "the PDF has no pages")
	}
	if !withText {
		return doc, nil
	}
	out, err = runTool(filepath.Join(dir, pdftotextBin), data, maxTextBytes, "-q", "-enc", "UTF-8", "-", "-")
	if err != nil {
		return Doc{}, err
	}
	doc.Text = splitPages(string(out), doc.Pages)
	return doc, nil
}

// runTool runs one of poppler's tools with data on stdin and returns what it printed, at
// most max bytes. A tool that fails is an *Error: ErrEncrypted when it asked for a
// password, ErrTooLarge when it printed more than max, ErrInvalid otherwise.
func runTool(path string, data []byte, max int64, args ...string) ([]byte, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = []string{"LANG=C.UTF-8"}
	cmd.Stdin = bytes.NewReader(data)
	stdout := &capped{max: max}
	stderr := &capped{max: 4 << 10, keepTail: true}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = toolProcAttr()
	err := cmd.Run()
	msg := strings.TrimSpace(string(stderr.Bytes()))
	switch {
	case stdout.over:
		return nil, newError(ErrTooLarge, nil, "the PDF's text is over the %d MiB limit", max>>20)
	case err != nil && strings.Contains(msg, "Incorrect password"):
		return nil, newError(ErrEncrypted, errors.New(msg), "the PDF is encrypted and cannot be read without its password")
	case err != nil && msg != "":
		return nil, newError(ErrInvalid, errors.New(firstLine(msg)), "the PDF could not be parsed")
	case err != nil:
		return nil, newError(ErrInvalid, err, "the PDF reader failed on the PDF (a crash or out of memory)")
	}
	return stdout.Bytes(), nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// splitPages cuts pdftotext's output into the text of each of n pages (it ends each page
// with a form feed), each with trailing spaces and blank lines at either end removed and
// runs of blank lines cut to one.
func splitPages(out string, n int) []string {
	parts := strings.Split(out, "\f")
	pages := make([]string, n)
	for i := range min(n, len(parts)) {
		lines := strings.Split(parts[i], "\n")
		kept := lines[:0]
		for _, l := range lines {
			l = strings.TrimRightFunc(l, unicode.IsSpace)
			if l == "" && (len(kept) == 0 || kept[len(kept)-1] == "") {
				continue
			}
			kept = append(kept, l)
		}
		pages[i] = strings.Trim(strings.Join(kept, "\n"), "\n")
	}
	return pages
}
