package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/snapq/snapq/client"
)

// The browser tool: one command of an interactive session (POST /v1/sessions/:id/commands)
// per call. Each MCP session gets its own snapq session, opened by its first browser call
// (POST /v1/sessions, so the key's session cap and in-flight budget apply) and closed when
// the MCP session ends; a call that names a session_id drives that session instead, and
// leaves it open. browser_help reads the verb table (GET /v1/session-verbs).

func init() {
	register("browser", addBrowser)
	register("browser_help", addBrowserHelp)
}

// browserVerbs are the verbs the schema offers: session.Verbs() (a test compares them; the
// CLI binary that serves stdio does not link the session package).
var browserVerbs = []string{"back", "check", "click", "close", "dblclick", "eval", "fill", "forward", "goto", "help",
	"hover", "markdown", "open", "pdf", "press", "reload", "screenshot", "scroll", "select", "snapshot", "tabs", "text",
	"type", "uncheck", "wait_for"}

// Bounds of the browser tool's input (the API's own: session.MaxArgs, session.MaxArgBytes).
const (
	maxBrowserArgs     = 16
	maxBrowserArgBytes = 16 << 10
	// closeWait bounds closing a session when its MCP session ends.
	closeWait = 30 * time.Second
)

type browserInput struct {
	Command   string   `json:"command"`
	Args      []string `json:"args"`
	SessionID string   `json:"session_id"`
}

var browserSchema = schema(`{
  "type": "object",
  "properties": {
    "command": {"type": "string", "enum": ["` + strings.Join(browserVerbs, `", "`) + `"],
      "description": "The verb: open URL, snapshot, click/fill/select/check/hover/type TARGET …, press KEY, scroll, wait_for, tabs, back, forward, reload, screenshot, pdf, markdown, text, eval, close, help. TARGET is a ref from the latest snapshot (e21) or a CSS selector."},
    "args": {"type": "array", "maxItems": 16, "items": {"type": "string", "maxLength": 16384},
      "description": "The verb's arguments, one string each: [\"e21\"], [\"e5\", \"Ada Lovelace\"], [\"https://example.com\"], [\"select\", \"1\"]."},
    "session_id": {"type": "string", "maxLength": 64,
      "description": "Drive this existing snapq session instead of this conversation's own (opened by the first call, closed when the conversation ends)."}
  },
  "required": ["command"],
  "additionalProperties": false
}`)

func addBrowser(s *sdk.Server, d *deps) {
	addTool(s, d, &sdk.Tool{
		Name:  "browser",
		Title: "Drive a browser tab, one command per call",
		Description: "A real browser tab kept between calls (cookies, logins and page state stay). Start with " +
			"command open and args [URL], then snapshot: the page as an accessibility tree where each element has a " +
			"ref such as e21. Act by ref: click [e21], fill [e5, text], select [e7, option], check [e9], press [Enter]. " +
			"Refs are valid until the next navigation or snapshot (an older one fails with stale_ref: take a new " +
			"snapshot). tabs lists popups the page opened (tabs [select, 1] switches). screenshot stores images " +
			"(the first shown inline), markdown and text read the page, back goes back, close ends the tab. Replies " +
			"are capped; a cut reply ends with a [truncated: …] line. browser_help gives every verb's arguments.",
		InputSchema: browserSchema,
		Annotations: &sdk.ToolAnnotations{OpenWorldHint: ptr(true), DestructiveHint: ptr(false)},
	}, d.browser)
}

// browserFacts is browser's structured content.
type browserFacts struct {
	SessionID string          `json:"session_id"`
	OK        bool            `json:"ok"`
	Reply     string          `json:"reply"`
	Truncated bool            `json:"truncated"`
	URL       string          `json:"url"`
	Title     string          `json:"title"`
	Seq       int             `json:"seq"`
	Artifacts []browserOutput `json:"artifacts"`
}

type browserOutput struct {
	Name        string `json:"name"`
	Kind        string `json:"kind"`
	ContentType string `json:"content_type"`
	Size        int64  `json:"size"`
	URL         string `json:"url"`
}

func (d *deps) browser(ctx context.Context, c *client.Client, in browserInput) (*sdk.CallToolResult, error) {
	if err := checkBrowserInput(in); err != nil {
		return nil, err
	}
	if in.Command == "help" {
		return d.help(ctx, c, helpInput{Verb: firstOf(in.Args)})
	}
	id, own := in.SessionID, in.SessionID == ""
	ss, _ := ctx.Value(mcpSessionKey{}).(*sdk.ServerSession)
	if own {
		if in.Command == "close" && d.browsers.current(ss) == "" {
			return textResult("no browser session is open"), nil
		}
		var err error
		if id, err = d.browsers.open(ctx, ss, c); err != nil {
			return nil, err
		}
	}
	r, err := c.Exec(ctx, id, in.Command, in.Args...)
	if err != nil {
		if own && sessionEnded(err) {
			d.browsers.forget(ss, id)
			return nil, endedHint(err)
		}
		return nil, err
	}
	if !r.OK {
		return nil, &toolError{Code: r.Error.Code, Message: r.Error.Message}
	}
	if own && in.Command == "close" {
		d.browsers.forget(ss, id)
	}
	return browserResult(ctx, c, id, r)
}

// checkBrowserInput holds the input to the API's bounds, naming the argument.
func checkBrowserInput(in browserInput) error {
	if in.Command == "" {
		return &toolError{Code: "invalid_command", Field: "command", Message: "required: a verb such as open or snapshot"}
	}
	if len(in.Args) > maxBrowserArgs {
		return &toolError{Code: "bad_args", Field: "args", Message: fmt.Sprintf("at most %d arguments", maxBrowserArgs)}
	}
	for i, a := range in.Args {
		if len(a) > maxBrowserArgBytes {
			return &toolError{Code: "bad_args", Field: fmt.Sprintf("args[%d]", i), Message: fmt.Sprintf("over %d bytes", maxBrowserArgBytes)}
		}
	}
	if len(in.SessionID) > 64 {
		return &toolError{Code: "invalid_session_id", Field: "session_id", Message: "at most 64 characters"}
	}
	return nil
}

// browserResult is a command's reply: its text with the page's title and URL, the first
// screenshot inline, every file as a link.
func browserResult(ctx context.Context, c *client.Client, id string, r *client.SessionReply) (*sdk.CallToolResult, error) {
	f := browserFacts{SessionID: id, OK: r.OK, Reply: r.Reply, Truncated: r.Truncated, URL: r.URL, Title: r.Title, Seq: r.Seq,
		Artifacts: []browserOutput{}}
	text := r.Reply + fmt.Sprintf("\n\nPage: %q %s", r.Title, r.URL)
	content := []sdk.Content{&sdk.TextContent{Text: text}}
	var links []sdk.Content
	budget := int64(MaxImageBytes)
	for i, a := range r.Artifacts {
		f.Artifacts = append(f.Artifacts, browserOutput(a))
		if i < DefaultImages && a.Kind == "screenshot" && a.Size <= budget {
			raw, err := readSessionFile(ctx, c, id, a.Name, budget)
			if err != nil {
				return nil, err
			}
			budget -= int64(len(raw))
			content = append(content, &sdk.ImageContent{Data: raw, MIMEType: a.ContentType})
			continue
		}
		size := a.Size
		links = append(links, &sdk.ResourceLink{URI: a.URL, Name: a.Name, MIMEType: a.ContentType, Size: &size,
			Description: "snapq session file; GET it with the API key as Authorization: Bearer (a redirect to the file)"})
	}
	return &sdk.CallToolResult{Content: append(content, links...), StructuredContent: structured(f)}, nil
}

// readSessionFile reads a session's file, at most limit bytes of it.
func readSessionFile(ctx context.Context, c *client.Client, id, name string, limit int64) ([]byte, error) {
	body, err := c.OpenSessionArtifact(ctx, id, name)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	return readCapped(body, name, limit)
}

// sessionEnded reports the API's answer for a session that is over.
func sessionEnded(err error) bool {
	var ae *client.Error
	return errors.As(err, &ae) && (ae.Code == "session_closed" || ae.Code == "session_lost" ||
		ae.StatusCode == http.StatusNotFound)
}

// endedHint tells the model its session is gone and the next call opens another.
func endedHint(err error) error {
	e := asToolError(err)
	e.Hint = "this conversation's browser session ended (idle too long, past its lifetime, or its worker went away); " +
		"call browser again to open a new one, starting with open URL"
	return e
}

func textResult(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

func firstOf(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

// mcpSessionKey carries the call's MCP session in the tool's context (addTool).
type mcpSessionKey struct{}

// browsers are the snapq sessions of MCP sessions: one each, opened on demand, closed when
// the MCP session ends.
type browsers struct {
	mu   sync.Mutex
	held map[*sdk.ServerSession]*held
	wg   sync.WaitGroup // the closers of ended MCP sessions
}

type held struct {
	mu sync.Mutex // held while the session is being opened
	id string
	c  *client.Client
}

func newBrowsers() *browsers { return &browsers{held: map[*sdk.ServerSession]*held{}} }

// entry is ss's entry; the first one starts the closer that runs when ss ends.
func (b *browsers) entry(ss *sdk.ServerSession) *held {
	b.mu.Lock()
	defer b.mu.Unlock()
	h, ok := b.held[ss]
	if !ok {
		h = &held{}
		b.held[ss] = h
		b.wg.Add(1)
		go b.closeWhenDone(ss, h)
	}
	return h
}

// current is ss's open session id, "" when none.
func (b *browsers) current(ss *sdk.ServerSession) string {
	b.mu.Lock()
	h := b.held[ss]
	b.mu.Unlock()
	if h == nil {
		return ""
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.id
}

// open returns ss's session id, opening the session first when it has none.
func (b *browsers) open(ctx context.Context, ss *sdk.ServerSession, c *client.Client) (string, error) {
	if ss == nil {
		return "", &toolError{Code: "no_mcp_session", Message: "the call came without an MCP session; give session_id"}
	}
	h := b.entry(ss)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.id != "" {
		return h.id, nil
	}
	s, err := c.CreateSession(ctx, client.SessionOptions{})
	if err != nil {
		return "", err
	}
	h.id, h.c = s.ID, c
	return h.id, nil
}

// forget drops id as ss's session (it ended); the next call opens another.
func (b *browsers) forget(ss *sdk.ServerSession, id string) {
	b.mu.Lock()
	h := b.held[ss]
	b.mu.Unlock()
	if h == nil {
		return
	}
	h.mu.Lock()
	if h.id == id {
		h.id = ""
	}
	h.mu.Unlock()
}

// closeWhenDone closes ss's session once ss has ended.
func (b *browsers) closeWhenDone(ss *sdk.ServerSession, h *held) {
	defer b.wg.Done()
	_ = ss.Wait()
	b.mu.Lock()
	delete(b.held, ss)
	b.mu.Unlock()
	h.mu.Lock()
	id, c := h.id, h.c
	h.id = ""
	h.mu.Unlock()
	if id == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), closeWait)
	defer cancel()
	_, _ = c.CloseSession(ctx, id)
}

// wait waits for the closers of ended MCP sessions.
func (b *browsers) wait() { b.wg.Wait() }
