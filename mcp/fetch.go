package mcp

import (
	"context"
	"fmt"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/snapq/snapq/client"
)

func init() { register("fetch", addFetch) }

type fetchInput struct {
	URL      string `json:"url"`
	MaxChars int    `json:"max_chars"`
}

var fetchSchema = schema(`{
  "type": "object",
  "properties": {
    "url": {"type": "string", "format": "uri", "minLength": 8, "maxLength": 2048,
      "description": "The page to read: an absolute http:// or https:// URL."},
    "max_chars": {"type": "integer", "minimum": 500, "maximum": 100000, "default": 20000,
      "description": "The most characters of Markdown to return; a longer page is cut with a [truncated by snapq …] marker."}
  },
  "required": ["url"],
  "additionalProperties": false
}`)

// fetchFacts is fetch's structured content.
type fetchFacts struct {
	pageFacts
	MarkdownChars int  `json:"markdown_chars"`
	Truncated     bool `json:"truncated"`
}

func addFetch(s *sdk.Server, d *deps) {
	addTool(s, d, &sdk.Tool{
		Name:  "fetch",
		Title: "Read a web page as Markdown",
		Description: "Renders the page in a real browser (JavaScript runs) and returns its main content as Markdown, " +
			"with the page's title, final URL (after redirects) and HTTP status. Use it to read articles, docs and " +
			"listings. The first text block holds those facts, the second the Markdown. A 404 or 500 page is returned " +
			"with its status, not as an error.",
		InputSchema: fetchSchema,
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(true)},
	}, d.fetch)
}

func (d *deps) fetch(ctx context.Context, c *client.Client, in fetchInput) (*sdk.CallToolResult, error) {
	j, err := d.capture(ctx, c, in.URL, &client.Options{Outputs: &[]string{"markdown"}})
	if err != nil {
		return nil, err
	}
	arts := artifactsOf(j, "markdown")
	if len(arts) == 0 {
		return nil, &toolError{Code: "no_markdown", Message: "the capture made no Markdown (is the URL a download?)",
			JobID: j.ID, BatchID: j.BatchID, Hint: "try screenshot or pdf for this URL"}
	}
	raw, err := download(ctx, c, arts[0], maxDownload)
	if err != nil {
		return nil, err
	}
	md := string(raw)
	f := fetchFacts{pageFacts: factsOf(j), MarkdownChars: utf8.RuneCountInString(md)}
	md, f.Truncated = clip(md, min(in.MaxChars, MaxText))
	head := f.header() + fmt.Sprintf("Markdown: %d characters", f.MarkdownChars)
	if f.Truncated {
		head += fmt.Sprintf(" (cut at %d; raise max_chars, at most %d, for more)", min(in.MaxChars, MaxText), MaxText)
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: head}, &sdk.TextContent{Text: md}},
		StructuredContent: structured(f)}, nil
}

func ptr[T any](v T) *T { return &v }
