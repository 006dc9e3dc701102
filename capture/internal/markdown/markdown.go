package markdown

import (
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	"codeberg.org/readeck/go-readability/v2"
	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/base"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/commonmark"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/table"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/snapq/snapq/capture/internal/runecap"
)

// Limits and thresholds.
const (
	// DefaultMaxChars caps the output when Convert's maxChars is 0 or less (capture's
	// DefaultMarkdownMaxChars is this value).
	DefaultMaxChars = 100_000

	// The coverage gate: an extraction shorter than minArticleChars, or holding less than
	// minArticleShare of the page's visible text, missed the content (portal and list pages,
	// where the content is the links), so the whole document is converted instead.
	minArticleChars = 250
	minArticleShare = 0.10

	// Trailing-link pruning thresholds (see pruneTrailingLinks).
	pruneBlockLinkRatio  = 0.5
	pruneRemainLinkRatio = 0.2
)

// Result is one conversion: the Markdown text and how it was made.
type Result struct {
	Text      string
	Truncated bool
	Article   bool // the readability extraction was used (false: the whole document)
}

// Convert converts a page's serialized DOM to Markdown, in Go: readability extracts the
// article (base URL pageURL) unless the coverage gate sends it back to the whole sanitized
// document; html-to-markdown (CommonMark + GFM tables) renders it; the result is cut at
// maxChars characters (DefaultMaxChars when 0 or less). visibleChars is the length of the
// page's visible text (the text output).
func Convert(rawHTML, pageURL string, visibleChars, maxChars int) (Result, error) {
	if maxChars <= 0 {
		maxChars = DefaultMaxChars
	}
	doc, err := html.Parse(strings.NewReader(rawHTML))
	if err != nil {
		return Result{}, fmt.Errorf("parse html: %w", err)
	}
	// Before anything else, so an inline screenshot can never reach the body.
	replaceDataImages(doc)
	sanitize(doc, true) // readability reads the title from the JSON-LD
	unwrapAnchors(doc)
	baseURL, _ := url.Parse(pageURL)

	var out Result
	node, title := doc, ""
	// FromDocument works on a copy: doc stays whole for the fallback.
	if art, err := readability.FromDocument(doc, baseURL); err == nil && art.Node != nil {
		n := utf8.RuneCountInString(strings.TrimSpace(textOf(art.Node)))
		if n >= minArticleChars && float64(n) >= minArticleShare*float64(visibleChars) {
			pruneTrailingLinks(art.Node)
			node, title, out.Article = art.Node, strings.TrimSpace(art.Title()), true
		}
	}
	sanitize(node, false)
	conv := converter.NewConverter(converter.WithPlugins(base.NewBasePlugin(),
		commonmark.NewCommonmarkPlugin(commonmark.WithLinkEmptyContentBehavior(commonmark.LinkBehaviorSkip)),
		table.NewTablePlugin()))
	var opts []converter.ConvertOptionFunc
	if pageURL != "" {
		opts = append(opts, converter.WithDomain(pageURL))
	}
	md, err := conv.ConvertNode(node, opts...)
	if err != nil {
		return Result{}, fmt.Errorf("convert to markdown: %w", err)
	}
	text := strings.TrimSpace(string(md))
	// Readability keeps the title out of the article body; put it back as the heading.
	if title != "" && !opensWith(node, title) {
		text = "# " + title + "\n\n" + text
	}
	out.Text, out.Truncated = CapRunes(text, maxChars)
	return out, nil
}

// CapRunes cuts s to at most max characters, at the last line break of the final tenth
// when there is one (runecap.Cut, shared with capture's download Markdown).
func CapRunes(s string, max int) (string, bool) { return runecap.Cut(s, max) }

// replaceDataImages replaces every <img> whose src is a data: URI with a short text naming its
// size, e.g. "[image: data URI, 2.0 MB]", and drops data: URIs from srcset, so an inline
// screenshot cannot flood the Markdown.
func replaceDataImages(doc *html.Node) {
	var imgs []*html.Node
	walk(doc, func(n *html.Node) bool {
		if n.Type == html.ElementNode && n.DataAtom == atom.Img {
			imgs = append(imgs, n)
		}
		return true
	})
	for _, n := range imgs {
		src := attr(n, "src")
		if !isDataURI(src) {
			// A data: srcset candidate would win over a good src in some renderers.
			if ss := attr(n, "srcset"); strings.Contains(strings.ToLower(ss), "data:") {
				removeAttr(n, "srcset")
			}
			continue
		}
		ph := &html.Node{Type: html.TextNode, Data: "[image: data URI, " + byteSize(dataURISize(src)) + "]"}
		n.Parent.InsertBefore(ph, n)
		n.Parent.RemoveChild(n)
	}
}

func isDataURI(s string) bool {
	s = strings.TrimSpace(s)
	return len(s) >= 5 && strings.EqualFold(s[:5], "data:")
}

// dataURISize is the decoded size of a data: URI's payload in bytes (approximate for base64).
func dataURISize(uri string) int {
	meta, payload, _ := strings.Cut(uri, ",")
	if strings.HasSuffix(strings.ToLower(meta), ";base64") {
		return len(strings.TrimRight(payload, "=")) * 3 / 4
	}
	return len(payload)
}

func byteSize(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// sanitize removes what is never content: scripts, styles, templates, noscript, iframes
// (and objects/embeds). Navigation is kept: on portal pages it is the content. With
// keepJSONLD, <script type="application/ld+json"> stays: it is data, not code, and
// readability reads the article's headline from it; it never reaches the converter.
func sanitize(doc *html.Node, keepJSONLD bool) {
	var drop []*html.Node
	walk(doc, func(n *html.Node) bool {
		if n.Type != html.ElementNode {
			return true
		}
		switch n.DataAtom {
		case atom.Script:
			if keepJSONLD && isJSONLD(n) {
				return false
			}
			drop = append(drop, n)
			return false
		case atom.Style, atom.Template, atom.Noscript, atom.Iframe, atom.Object, atom.Embed:
			drop = append(drop, n)
			return false
		}
		return true
	})
	for _, n := range drop {
		if n.Parent != nil {
			n.Parent.RemoveChild(n)
		}
	}
}

func isJSONLD(script *html.Node) bool {
	typ, _, _ := strings.Cut(attr(script, "type"), ";")
	return strings.EqualFold(strings.TrimSpace(typ), "application/ld+json")
}

// unwrapAnchors replaces every <a> without an href (a named anchor, an id target) by its
// children: it is not a link, and the converter would make it one to the page itself.
func unwrapAnchors(doc *html.Node) {
	var anchors []*html.Node
	walk(doc, func(n *html.Node) bool {
		if n.Type == html.ElementNode && n.DataAtom == atom.A && !hasAttr(n, "href") {
			anchors = append(anchors, n)
		}
		return true
	})
	for _, a := range anchors {
		for c := a.FirstChild; c != nil; c = a.FirstChild {
			a.RemoveChild(c)
			a.Parent.InsertBefore(c, a)
		}
		a.Parent.RemoveChild(a)
	}
}

// opensWith reports whether the visible text of node starts with title, or one of its
// h1/h2 headings is the title (a kicker or a date line may stand above it), compared
// without case and with white space collapsed. Text in an image's alt or a link's URL is
// not visible text.
func opensWith(node *html.Node, title string) bool {
	want := strings.ToLower(strings.Join(strings.Fields(title), " "))
	if strings.HasPrefix(strings.ToLower(textOf(node)), want) {
		return true
	}
	found := false
	walk(node, func(n *html.Node) bool {
		if found || n.Type != html.ElementNode {
			return !found
		}
		if n.DataAtom == atom.H1 || n.DataAtom == atom.H2 {
			found = strings.ToLower(textOf(n)) == want
			return false
		}
		return true
	})
	return found
}

// pruneTrailingLinks drops "related articles"-style link blocks from the end of an accepted
// extraction. The heuristic: find the article's block list (descending through wrappers whose
// text all sits in a single element child), then walk its blocks from the end and drop a block while
//   - its link-text ratio (characters inside <a> / all characters) is above 0.5, and
//   - the blocks before it have a ratio below 0.2 (they are prose, clearly less linky), and
//   - no more than a third of the blocks (rounded down) have been dropped.
//
// Blocks without text (rules, empty divs) are stepped over and kept. Each removal counts
// toward the third, so a page that is mostly links keeps them all.
func pruneTrailingLinks(root *html.Node) {
	container := root
	for {
		var only *html.Node
		count := 0
		for c := container.FirstChild; c != nil; c = c.NextSibling {
			if c.Type == html.ElementNode {
				if _, all := linkChars(c); all > 0 {
					only, count = c, count+1
				}
			} else if c.Type == html.TextNode && strings.TrimSpace(c.Data) != "" {
				count = 2 // text beside the element: this is the block list
			}
		}
		if count != 1 {
			break
		}
		container = only
	}
	var blocks []*html.Node
	for c := container.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode {
			blocks = append(blocks, c)
		}
	}
	maxDrop := len(blocks) / 3
	dropped := 0
	for i := len(blocks) - 1; i > 0 && dropped < maxDrop; i-- {
		link, all := linkChars(blocks[i])
		if all == 0 {
			continue
		}
		if float64(link)/float64(all) <= pruneBlockLinkRatio {
			break
		}
		var rl, ra int
		for _, b := range blocks[:i] {
			l, a := linkChars(b)
			rl, ra = rl+l, ra+a
		}
		if ra == 0 || float64(rl)/float64(ra) >= pruneRemainLinkRatio {
			break
		}
		container.RemoveChild(blocks[i])
		dropped++
	}
}

// linkChars counts the non-space characters of n inside links and in all.
func linkChars(n *html.Node) (link, all int) {
	var count func(*html.Node, bool)
	count = func(n *html.Node, inLink bool) {
		if n.Type == html.TextNode {
			c := len(strings.Join(strings.Fields(n.Data), ""))
			all += c
			if inLink {
				link += c
			}
		}
		in := inLink || (n.Type == html.ElementNode && n.DataAtom == atom.A)
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			count(c, in)
		}
	}
	count(n, false)
	return link, all
}

// textOf is n's text content with runs of white space collapsed.
func textOf(n *html.Node) string {
	var b strings.Builder
	walk(n, func(c *html.Node) bool {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
			b.WriteByte(' ')
		}
		return true
	})
	return strings.Join(strings.Fields(b.String()), " ")
}

// walk visits n and its descendants in document order; visit returns false to skip children.
func walk(n *html.Node, visit func(*html.Node) bool) {
	if !visit(n) {
		return
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walk(c, visit)
	}
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hasAttr(n *html.Node, key string) bool {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			return true
		}
	}
	return false
}

func removeAttr(n *html.Node, key string) {
	out := n.Attr[:0]
	for _, a := range n.Attr {
		if a.Namespace != "" || a.Key != key {
			out = append(out, a)
		}
	}
	n.Attr = out
}
