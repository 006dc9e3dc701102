package mcp

import (
	"context"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/snapq/snapq/client"
)

func init() { register("screenshot", addScreenshot) }

type screenshotInput struct {
	URL       string `json:"url"`
	MaxImages int    `json:"max_images"`
	Width     int    `json:"width,omitempty"`
	Format    string `json:"format"`
}

var screenshotSchema = schema(`{
  "type": "object",
  "properties": {
    "url": {"type": "string", "format": "uri", "minLength": 8, "maxLength": 2048,
      "description": "The page to picture: an absolute http:// or https:// URL."},
    "max_images": {"type": "integer", "minimum": 1, "maximum": 5, "default": 2,
      "description": "How many screens of the page, from the top, to return as images (1 to 5). The rest are returned as links."},
    "width": {"type": "integer", "minimum": 320, "maximum": 1920,
      "description": "The browser window's width in CSS pixels (default 1280); 390 shows the mobile layout."},
    "format": {"type": "string", "enum": ["png", "jpeg", "webp"], "default": "png",
      "description": "The image format; jpeg and webp are smaller."}
  },
  "required": ["url"],
  "additionalProperties": false
}`)

// screenshotFacts is screenshot's structured content.
type screenshotFacts struct {
	pageFacts
	PageHeight       int      `json:"page_height"`
	SegmentsTotal    int      `json:"segments_total"`
	SegmentsCaptured int      `json:"segments_captured"`
	SegmentsInline   int      `json:"segments_inline"`
	Truncated        bool     `json:"truncated"`
	Links            []string `json:"links"`
}

func addScreenshot(s *sdk.Server, d *deps) {
	addTool(s, d, &sdk.Tool{
		Name:  "screenshot",
		Title: "Picture a web page",
		Description: "Renders the page in a real browser and returns it as images, one per screen from the top " +
			"(segments of the full page, so a long page can be read piece by piece), plus links to the screens not " +
			"returned inline. The first text block gives the title, final URL, HTTP status and how many screens the " +
			"page has. Use fetch instead when the text is what matters.",
		InputSchema: screenshotSchema,
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(true)},
	}, d.screenshot)
}

func (d *deps) screenshot(ctx context.Context, c *client.Client, in screenshotInput) (*sdk.CallToolResult, error) {
	opts := &client.Options{Outputs: &[]string{"screenshot"}, Screenshot: &client.ScreenshotOptions{Format: &in.Format}}
	if in.Width > 0 {
		opts.Viewport = &client.ViewportOptions{Width: &in.Width}
	}
	j, err := d.capture(ctx, c, in.URL, opts)
	if err != nil {
		return nil, err
	}
	shots := artifactsOf(j, "screenshot")
	f := screenshotFacts{pageFacts: factsOf(j), SegmentsCaptured: len(shots), Links: []string{}}
	if r := j.Result; r != nil {
		f.PageHeight, f.SegmentsTotal, f.Truncated = r.PageHeight, r.Segments.Total, r.Segments.Truncated
	}
	var images, links []sdk.Content
	budget := int64(MaxImageBytes)
	for i, a := range shots {
		if i >= min(in.MaxImages, MaxImages) || a.Bytes > budget {
			links = append(links, link(a))
			f.Links = append(f.Links, a.URL)
			continue
		}
		raw, err := download(ctx, c, a, budget)
		if err != nil {
			return nil, err
		}
		budget -= int64(len(raw))
		images = append(images, &sdk.ImageContent{Data: raw, MIMEType: a.ContentType})
	}
	f.SegmentsInline = len(images)
	content := append([]sdk.Content{&sdk.TextContent{Text: f.summary()}}, images...)
	return &sdk.CallToolResult{Content: append(content, links...), StructuredContent: structured(f)}, nil
}

// summary is the reply's first text block.
func (f screenshotFacts) summary() string {
	var b strings.Builder
	b.WriteString(f.header())
	fmt.Fprintf(&b, "Page height: %d px; %d screen(s) captured", f.PageHeight, f.SegmentsCaptured)
	if f.Truncated {
		fmt.Fprintf(&b, " of %d (the rest of the page was not captured)", f.SegmentsTotal)
	}
	fmt.Fprintf(&b, "; %d shown below", f.SegmentsInline)
	if len(f.Links) > 0 {
		fmt.Fprintf(&b, ", %d more as links (raise max_images, at most %d, to see more inline)", len(f.Links), MaxImages)
	}
	b.WriteString(".")
	return b.String()
}
