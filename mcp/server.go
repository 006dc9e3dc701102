package mcp

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/snapq/snapq/client"
)

// Caller returns the snapq client a tool call runs with: the stdio server's
// one client, or on the api a client carrying the key of the HTTP request that
// carried the call.
type Caller func(ctx context.Context, req *sdk.CallToolRequest) (*client.Client, error)

// Defaults and limits of Config.
const (
	DefaultWait = 60 * time.Second
	MaxWait     = 120 * time.Second // POST /v1/capture's own maximum
)

// Config configures the MCP server.
type Config struct {
	// Caller gives each tool call its client (required).
	Caller Caller
	// Version is reported to clients as the server's version (default: the
	// build's module version, or "dev").
	Version string
	// Wait is how long a capture tool waits for its page (default
	// DefaultWait, at most MaxWait); a page not done by then is a tool error
	// naming its job, to be read with batch_status.
	Wait time.Duration
}

// Validate checks the configuration.
func (c Config) Validate() error {
	if c.Caller == nil {
		return fmt.Errorf("mcp: Caller is required")
	}
	if c.Wait < 0 || c.Wait > MaxWait {
		return fmt.Errorf("mcp: Wait %s: want 0 (default %s) to %s", c.Wait, DefaultWait, MaxWait)
	}
	return nil
}

// deps is what every tool uses.
type deps struct {
	caller Caller
	waitMS int
	// browsers are the browser tool's sessions, one per MCP session (browser.go).
	browsers *browsers
}

// tool is one MCP tool: add puts it on a server.
type tool struct {
	name string
	add  func(s *sdk.Server, d *deps)
}

var (
	toolsMu sync.Mutex
	tools   []tool
)

// register adds a tool to every server built after it: each tool's file calls
// it from its init, so a new tool is one new file.
func register(name string, add func(s *sdk.Server, d *deps)) {
	toolsMu.Lock()
	defer toolsMu.Unlock()
	for _, t := range tools {
		if t.name == name {
			panic("mcp: tool " + name + " registered twice")
		}
	}
	tools = append(tools, tool{name: name, add: add})
}

// ToolNames lists the registered tools, in registration order.
func ToolNames() []string {
	toolsMu.Lock()
	defer toolsMu.Unlock()
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = t.name
	}
	return out
}

// serverInstructions tell the model what the server is for.
const serverInstructions = `snapq renders web pages in a real browser. Use fetch to read a page as Markdown, ` +
	`screenshot to see it, pdf for a printable copy, capture_batch and batch_status for many pages at once. ` +
	`To interact with a page (log in, click, fill forms, follow links) use browser, one command per call, ` +
	`starting with open URL then snapshot; browser_help lists its commands. ` +
	`Errors carry a code and a hint; a 404 page is a result with its status, not an error.`

// NewServer returns an MCP server with every registered tool.
func NewServer(cfg Config) (*sdk.Server, error) {
	s, _, err := newServer(cfg)
	return s, err
}

// newServer is NewServer with the tools' dependencies (the browser sessions it holds).
func newServer(cfg Config) (*sdk.Server, *deps, error) {
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	if cfg.Version == "" {
		cfg.Version = buildVersion()
	}
	wait := cfg.Wait
	if wait == 0 {
		wait = DefaultWait
	}
	s := sdk.NewServer(&sdk.Implementation{Name: "snapq", Title: "snapq web capture", Version: cfg.Version},
		&sdk.ServerOptions{Instructions: serverInstructions})
	d := &deps{caller: cfg.Caller, waitMS: int(wait / time.Millisecond), browsers: newBrowsers()}
	toolsMu.Lock()
	defer toolsMu.Unlock()
	for _, t := range tools {
		t.add(s, d)
	}
	return s, d, nil
}

// buildVersion is the main module's version from the build, "dev" when none.
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// addTool adds a tool whose handler gets the caller's client; its errors
// become error results (reply.go) and its answer is held to the reply caps.
func addTool[In any](s *sdk.Server, d *deps, t *sdk.Tool,
	run func(ctx context.Context, c *client.Client, in In) (*sdk.CallToolResult, error)) {
	sdk.AddTool(s, t, func(ctx context.Context, req *sdk.CallToolRequest, in In) (*sdk.CallToolResult, any, error) {
		c, err := d.caller(ctx, req)
		if err != nil {
			return errorResult(err), nil, nil
		}
		ctx = context.WithValue(ctx, mcpSessionKey{}, req.Session)
		res, err := run(ctx, c, in)
		if err != nil {
			return errorResult(err), nil, nil
		}
		return res, nil, nil
	})
}
