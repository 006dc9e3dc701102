package mcp

import (
	"context"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/snapq/snapq/client"
)

// browser_help: the browser tool's command reference, read from the api's verb table (GET
// /v1/session-verbs), so it is the server's, whichever CLI serves stdio. It opens no session.

type helpInput struct {
	Verb string `json:"verb"`
}

var helpSchema = schema(`{
  "type": "object",
  "properties": {
    "verb": {"type": "string", "maxLength": 64,
      "description": "One verb (such as click or tabs) to explain; all of them when omitted."}
  },
  "additionalProperties": false
}`)

func addBrowserHelp(s *sdk.Server, d *deps) {
	addTool(s, d, &sdk.Tool{
		Name:  "browser_help",
		Title: "The browser tool's commands",
		Description: "Lists the browser tool's commands with their arguments (or one command's, given verb). " +
			"It opens no browser and costs nothing.",
		InputSchema: helpSchema,
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)},
	}, d.help)
}

func (d *deps) help(ctx context.Context, c *client.Client, in helpInput) (*sdk.CallToolResult, error) {
	ref, err := c.SessionHelp(ctx, in.Verb)
	if err != nil {
		return nil, err
	}
	text := ref.Help + "\n\nCall the browser tool with command set to the verb and args to its arguments, " +
		`e.g. {"command": "click", "args": ["e21"]}.`
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}},
		StructuredContent: structured(ref)}, nil
}
