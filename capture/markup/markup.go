// Package markup is capture's HTML codec (capture.Markup): a page's HTML to Markdown
// (capture/internal/markdown) and text in a declared charset to UTF-8
// (golang.org/x/net/html/charset).
//
// Why it exists: both need an HTML parser, and capture's types are imported by the domain
// (jobs, regression, web). Keeping the parser behind capture.Config.Markup, filled in by
// cmd/worker with Codec{}, keeps golang.org/x/net/html out of every package that only speaks
// of captures; internal/house's dependency test checks that it stays out of jobs.
package markup

import (
	"bytes"
	"io"

	"golang.org/x/net/html/charset"

	"github.com/snapq/snapq/capture/internal/markdown"
)

// Codec implements capture.Markup. The zero value is ready to use.
type Codec struct{}

// Markdown converts a page's serialized HTML to Markdown (markdown.Convert): the
// readability article when it covers the page, else the whole document, cut at maxChars
// characters (markdown.DefaultMaxChars when 0 or less).
func (Codec) Markdown(html, pageURL string, visibleChars, maxChars int) (string, bool, error) {
	r, err := markdown.Convert(html, pageURL, visibleChars, maxChars)
	return r.Text, r.Truncated, err
}

// DecodeCharset decodes data, text in the charset named label (a WHATWG encoding label,
// "iso-8859-1", "shift_jis", …), to UTF-8; an unknown label is an error.
func (Codec) DecodeCharset(label string, data []byte) ([]byte, error) {
	r, err := charset.NewReaderLabel(label, bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(r)
}

// DefaultMaxChars is the cap Markdown applies when maxChars is 0 or less
// (capture.DefaultMarkdownMaxChars is the same number; a test checks).
const DefaultMaxChars = markdown.DefaultMaxChars
