package mcp

import (
	"context"
	"io"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/snapq/snapq/client"
)

// maxFrame caps one JSON-RPC message read from a stdio peer.
const maxFrame = 1 << 20

// ServeStdio serves the tools over in and out (a desktop agent's pipes) with
// c, until the peer closes in or ctx ends. c should not wait out 429s
// (client.Config.MaxRetries < 0): a rate-limited call is answered at once as
// a tool error with its Retry-After.
func ServeStdio(ctx context.Context, c *client.Client, version string, in io.ReadCloser, out io.WriteCloser) error {
	s, d, err := newServer(Config{Version: version,
		Caller: func(context.Context, *sdk.CallToolRequest) (*client.Client, error) { return c, nil }})
	if err != nil {
		return err
	}
	err = s.Run(ctx, &sdk.IOTransport{Reader: in, Writer: out, MaxLineLength: maxFrame})
	// The browser session of the peer is closed before the process ends.
	d.browsers.wait()
	return err
}
