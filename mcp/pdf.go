package mcp

import (
	"context"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/snapq/snapq/client"
)

func init() { register("pdf", addPDF) }

type pdfInput struct {
	URL       string `json:"url"`
	Paper     string `json:"paper"`
	Landscape bool   `json:"landscape"`
}

var pdfSchema = schema(`{
  "type": "object",
  "properties": {
    "url": {"type": "string", "format": "uri", "minLength": 8, "maxLength": 2048,
      "description": "The page to print: an absolute http:// or https:// URL."},
    "paper": {"type": "string", "enum": ["a4", "letter", "legal", "a3", "a5", "tabloid"], "default": "a4",
      "description": "The paper size."},
    "landscape": {"type": "boolean", "default": false, "description": "Print in landscape."}
  },
  "required": ["url"],
  "additionalProperties": false
}`)

// pdfFacts is pdf's structured content.
type pdfFacts struct {
	pageFacts
	PDFURL string `json:"pdf_url"`
	Bytes  int64  `json:"bytes"`
}

func addPDF(s *sdk.Server, d *deps) {
	addTool(s, d, &sdk.Tool{
		Name:  "pdf",
		Title: "Print a web page to PDF",
		Description: "Renders the page in a real browser and prints it to a PDF file. Returns a link to the PDF " +
			"(not its bytes) with the title, final URL and HTTP status; hand the link to the user or to a tool that " +
			"downloads files. To read the page, use fetch.",
		InputSchema: pdfSchema,
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(true)},
	}, d.pdf)
}

func (d *deps) pdf(ctx context.Context, c *client.Client, in pdfInput) (*sdk.CallToolResult, error) {
	opts := &client.Options{Outputs: &[]string{"pdf"}, PDF: &client.PDFOptions{Paper: &in.Paper, Landscape: &in.Landscape}}
	j, err := d.capture(ctx, c, in.URL, opts)
	if err != nil {
		return nil, err
	}
	arts := artifactsOf(j, "pdf")
	if len(arts) == 0 {
		return nil, &toolError{Code: "no_pdf", Message: "the capture made no PDF", JobID: j.ID, BatchID: j.BatchID}
	}
	a := arts[0]
	f := pdfFacts{pageFacts: factsOf(j), PDFURL: a.URL, Bytes: a.Bytes}
	text := f.header() + fmt.Sprintf("PDF: %s (%d bytes)", a.URL, a.Bytes)
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}, link(a)},
		StructuredContent: structured(f)}, nil
}
