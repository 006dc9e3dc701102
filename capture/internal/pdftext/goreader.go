package pdftext

import (
	"bytes"
	"io"
	"math"
	"strings"
	"unicode"

	"github.com/dslipak/pdf"
)

// readGo is Read through the Go reader (github.com/dslipak/pdf). The reader is third-party
// code on untrusted bytes: its panics are recovered and reported as ErrInvalid.
func readGo(data []byte, maxPages int, withText bool) (doc Doc, err error) {
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
