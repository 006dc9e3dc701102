package capture

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/cdp"
	"github.com/go-rod/rod/lib/proto"
)

// Outputs a Request can ask for. Every output of a job comes from the same page load.
const (
	OutputScreenshot = "screenshot"
	OutputHTML       = "html"
	OutputText       = "text"
	OutputLinks      = "links"
	OutputMetadata   = "metadata"
	OutputPDF        = "pdf"
	OutputMarkdown   = "markdown"
)

// DefaultMarkdownMaxChars (100,000 characters) caps the markdown output when
// Request.MarkdownMaxChars is 0.
const DefaultMarkdownMaxChars = 100_000

// Paper sizes for PDFOptions.Paper.
const (
	PaperA4      = "a4"
	PaperLetter  = "letter"
	PaperLegal   = "legal"
	PaperA3      = "a3"
	PaperA5      = "a5"
	PaperTabloid = "tabloid"
)

// paperMM is each paper's portrait width and height in millimetres.
var paperMM = map[string][2]float64{
	PaperA4:      {210, 297},
	PaperLetter:  {215.9, 279.4},
	PaperLegal:   {215.9, 355.6},
	PaperA3:      {297, 420},
	PaperA5:      {148, 210},
	PaperTabloid: {279.4, 431.8},
}

// Papers lists the accepted PDFOptions.Paper values.
func Papers() []string {
	return []string{PaperA4, PaperLetter, PaperLegal, PaperA3, PaperA5, PaperTabloid}
}

// PDFOptions shape the pdf output. The caller resolves defaults: here Paper "" means a4 and
// Scale 0 means 1; MarginMM 0 and PrintBackground false are taken as given.
type PDFOptions struct {
	Paper           string  `json:"paper"`
	Landscape       bool    `json:"landscape"`
	MarginMM        float64 `json:"margin_mm"` // on every side
	PrintBackground bool    `json:"print_background"`
	Scale           float64 `json:"scale"`                 // 0.1..2
	PageRanges      string  `json:"page_ranges,omitempty"` // e.g. "1-3,5"; "" prints every page
	// PreferCSSPageSize lets the page's CSS @page size win over Paper.
	PreferCSSPageSize bool `json:"prefer_css_page_size,omitempty"`
}

// File is one non-screenshot output.
type File struct {
	Kind        string // the output name: html, text, links, metadata, pdf, markdown
	Name        string // file name with extension, e.g. name.html, name-links.json
	ContentType string
	Data        []byte
	Chars       int  // characters of the text and markdown outputs (0 for the others)
	Truncated   bool // the markdown output was cut at Request.MarkdownMaxChars
}

// Link is one entry of the links output.
type Link struct {
	URL  string `json:"url"`
	Text string `json:"text"`
	Rel  string `json:"rel"`
}

// Metadata is the metadata output.
type Metadata struct {
	Title         string            `json:"title"`
	Description   string            `json:"description"`
	Language      string            `json:"language"`
	CanonicalURL  string            `json:"canonical_url"`
	OpenGraph     map[string]string `json:"open_graph"`
	Status        int               `json:"status"`
	ContentType   string            `json:"content_type"`
	FinalURL      string            `json:"final_url"`
	RedirectChain []string          `json:"redirect_chain"`
	// Pages is the page count of a PDF target (absent for pages).
	Pages int `json:"pages,omitempty"`
}

// wants reports whether req asks for output (no list means screenshots only).
func (req Request) wants(output string) bool {
	if len(req.Outputs) == 0 {
		return output == OutputScreenshot
	}
	for _, o := range req.Outputs {
		if o == output {
			return true
		}
	}
	return false
}

// domJS reads every DOM-based output in one evaluation, so they all see one DOM state. The
// html is serialized from a clone, so removing scripts changes nothing on the live page.
const domJS = `((want) => {
	const out = {};
	if (want.html) {
		const root = document.documentElement.cloneNode(true);
		for (const el of root.querySelectorAll("script, template")) {
			if (el.localName === "script" && (el.getAttribute("type") || "").trim().toLowerCase() === "application/ld+json") {
				// Data, not code: keep it, but it can never close its element when re-parsed.
				el.textContent = el.textContent.split("</").join("<\\/");
				continue;
			}
			el.remove();
		}
		out.html = "<!doctype html>\n" + root.outerHTML;
	}
	if (want.text) {
		out.text = document.body ? document.body.innerText : "";
	}
	if (want.links) {
		const seen = new Set();
		out.links = [];
		for (const a of document.querySelectorAll("a[href]")) {
			let u;
			try {
				u = new URL(typeof a.href === "string" ? a.href : a.getAttribute("href"), document.baseURI);
			} catch (e) { continue; }
			if ((u.protocol !== "http:" && u.protocol !== "https:") || seen.has(u.href)) continue;
			seen.add(u.href);
			const text = Array.from((a.innerText || a.textContent || "").replace(/\s+/g, " ").trim()).slice(0, 200).join("");
			out.links.push({url: u.href, text: text, rel: a.getAttribute("rel") || ""});
		}
	}
	if (want.metadata) {
		const content = (sel) => { const e = document.querySelector(sel); return e ? (e.getAttribute("content") || "").trim() : ""; };
		const canon = document.querySelector('link[rel~="canonical" i][href]');
		const og = {};
		for (const m of document.querySelectorAll('meta[property^="og:" i][content]')) {
			const k = m.getAttribute("property").trim().toLowerCase();
			if (!(k in og)) og[k] = m.getAttribute("content");
		}
		out.metadata = {
			title: document.title,
			description: content('meta[name="description" i]'),
			language: document.documentElement.getAttribute("lang") || "",
			canonical_url: canon ? canon.href : "",
			open_graph: og,
		};
	}
	return out;
})`

// pageOutputs produces the html, text, links, metadata and markdown outputs the request asks
// for, from the page as it is now. Markdown is converted in Go from the same html and text.
func (t *tab) pageOutputs(p *rod.Page, req Request, res *Result) ([]File, error) {
	got, ok, err := readDOM(p, req)
	if err != nil || !ok {
		return nil, err
	}
	st, _ := t.state()
	var files []File
	for _, o := range req.Outputs {
		f, ok, err := got.file(o, req, res, st, t.inst.cfg.Markup)
		if err != nil {
			return nil, err
		}
		if ok {
			files = append(files, f)
		}
	}
	return files, nil
}

// domRead is what domJS read of the page.
type domRead struct {
	HTML     string   `json:"html"`
	Text     string   `json:"text"`
	Links    []Link   `json:"links"`
	Metadata Metadata `json:"metadata"`
}

// readDOM reads what the request's outputs need of the page in one call; ok is false when
// they need nothing of it.
func readDOM(p *rod.Page, req Request) (domRead, bool, error) {
	var got domRead
	want := map[string]bool{}
	for _, o := range []string{OutputHTML, OutputText, OutputLinks, OutputMetadata} {
		want[o] = req.wants(o)
	}
	if req.wants(OutputMarkdown) {
		want[OutputHTML], want[OutputText] = true, true
	}
	if !want[OutputHTML] && !want[OutputText] && !want[OutputLinks] && !want[OutputMetadata] {
		return got, false, nil
	}
	arg, err := json.Marshal(want)
	if err != nil {
		return got, false, err
	}
	if err := evalJSON(p, domJS+"("+string(arg)+")", &got); err != nil {
		return got, false, fmt.Errorf("read the page: %w", err)
	}
	return got, true, nil
}

// file is output o made of what was read (ok false: o is not a page output).
func (got domRead) file(o string, req Request, res *Result, st pageState, mk Markup) (File, bool, error) {
	switch o {
	case OutputHTML:
		return File{Kind: o, Name: req.Name + ".html", ContentType: "text/html; charset=utf-8", Data: []byte(got.HTML)}, true, nil
	case OutputText:
		return File{Kind: o, Name: req.Name + ".txt", ContentType: "text/plain; charset=utf-8",
			Data: []byte(got.Text), Chars: utf8.RuneCountInString(got.Text)}, true, nil
	case OutputLinks:
		if got.Links == nil {
			got.Links = []Link{}
		}
		data, err := json.Marshal(got.Links)
		return File{Kind: o, Name: req.Name + "-links.json", ContentType: "application/json", Data: data}, err == nil, err
	case OutputMetadata:
		m := got.Metadata
		if m.OpenGraph == nil {
			m.OpenGraph = map[string]string{}
		}
		m.Status, m.ContentType, m.FinalURL = res.HTTPStatus, st.contentType, res.FinalURL
		m.RedirectChain = st.redirects
		if m.RedirectChain == nil {
			m.RedirectChain = []string{}
		}
		data, err := json.Marshal(m)
		return File{Kind: o, Name: req.Name + "-metadata.json", ContentType: "application/json", Data: data}, err == nil, err
	case OutputMarkdown:
		if mk == nil {
			return File{}, false, errNoMarkup
		}
		md, truncated, err := mk.Markdown(got.HTML, res.FinalURL, utf8.RuneCountInString(got.Text), req.MarkdownMaxChars)
		if err != nil {
			return File{}, false, err
		}
		return File{Kind: o, Name: req.Name + ".md", ContentType: "text/markdown; charset=utf-8",
			Data: []byte(md), Chars: utf8.RuneCountInString(md), Truncated: truncated}, true, nil
	}
	return File{}, false, nil
}

// printPDF prints the page with Chromium (print media), bounded by callTimeout.
func printPDF(ctx context.Context, p *rod.Page, req Request, callTimeout time.Duration) (File, error) {
	o := req.PDF
	size, ok := paperMM[o.Paper]
	if o.Paper == "" {
		size, ok = paperMM[PaperA4], true
	}
	if !ok {
		return File{}, newError(CodeInternal, false, nil, "unknown paper %q", o.Paper)
	}
	scale := o.Scale
	if scale == 0 {
		scale = 1
	}
	inch := func(mm float64) *float64 { v := mm / 25.4; return &v }
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	out, err := proto.PagePrintToPDF{
		Landscape:         o.Landscape,
		PrintBackground:   o.PrintBackground,
		Scale:             &scale,
		PaperWidth:        inch(size[0]),
		PaperHeight:       inch(size[1]),
		MarginTop:         inch(o.MarginMM),
		MarginBottom:      inch(o.MarginMM),
		MarginLeft:        inch(o.MarginMM),
		MarginRight:       inch(o.MarginMM),
		PageRanges:        o.PageRanges,
		PreferCSSPageSize: o.PreferCSSPageSize,
		TransferMode:      proto.PagePrintToPDFTransferModeReturnAsBase64,
	}.Call(p.Context(cctx))
	if err != nil {
		var ce *cdp.Error
		if errors.As(err, &ce) && strings.HasPrefix(ce.Message, "Page range") {
			// Chromium's answer to a range past the last page ("Page range exceeds page
			// count") or one it cannot parse ("Page range syntax error").
			return File{}, newError(CodeInvalidPageRange, false, err, "page_ranges %q does not fit the document: %s", o.PageRanges, ce.Message)
		}
		if ctx.Err() == nil && cctx.Err() != nil {
			return File{}, fmt.Errorf("print to PDF: %w (%s)", errCallTimeout, callTimeout)
		}
		return File{}, fmt.Errorf("print to PDF: %w", err)
	}
	return File{Kind: OutputPDF, Name: req.Name + ".pdf", ContentType: "application/pdf", Data: out.Data}, nil
}

// sortFiles orders files as their kinds appear in outputs.
func sortFiles(files []File, outputs []string) []File {
	slices.SortStableFunc(files, func(a, b File) int {
		return slices.Index(outputs, a.Kind) - slices.Index(outputs, b.Kind)
	})
	return files
}
