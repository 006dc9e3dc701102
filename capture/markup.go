package capture

// Markup is the HTML codec capture needs (markup.Codec in capture/markup, set as
// Config.Markup by cmd/worker). It is an interface, not an import, because capture's
// types (Request, Result, Error, the output and action names) are imported by the domain
// packages: an HTML parser here would be a dependency of jobs and everything built on it.
type Markup interface {
	// Markdown converts a page's serialized HTML (of the page at pageURL, whose visible
	// text is visibleChars characters long) to Markdown of at most maxChars characters
	// (DefaultMarkdownMaxChars when 0 or less), reporting whether it was cut.
	Markdown(html, pageURL string, visibleChars, maxChars int) (md string, truncated bool, err error)
	// DecodeCharset decodes data, text in the charset named label, to UTF-8; an unknown
	// label is an error.
	DecodeCharset(label string, data []byte) ([]byte, error)
}

// errNoMarkup fails a markdown output asked of a Browser without Config.Markup.
var errNoMarkup = newError(CodeInternal, false, nil, "this worker has no HTML codec (capture.Config.Markup) for the markdown output")
