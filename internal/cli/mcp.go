package cli

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/snapq/snapq/client"
	"github.com/snapq/snapq/mcp"
)

func (a *app) mcpCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "mcp",
		Short: "Serve snapq's tools to an AI agent over MCP (stdio)",
		Long: `mcp runs a Model Context Protocol server on standard input and output, for
desktop agents that start their tools as processes. Its tools (fetch,
screenshot, pdf, capture_batch, batch_status) call the api named by --api /
SNAPQ_URL with the API key of --api-key-file, SNAPQ_API_KEY_FILE or
SNAPQ_API_KEY. Nothing but MCP messages is written to standard output.
See docs/agents.md#mcp.`,
		Example: `  SNAPQ_URL=http://127.0.0.1:8080 SNAPQ_API_KEY_FILE=~/.config/snapq/key snapq mcp`,
		Args:    exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg := a.cfg
			// A rate-limited call is answered at once, as a tool error with its
			// Retry-After, rather than held while the model waits.
			cfg.MaxRetries, cfg.UserAgent = -1, "snapq-mcp"
			c, err := client.New(cfg)
			if err != nil {
				return usageError{err}
			}
			return mcp.ServeStdio(cmd.Context(), c, "", io.NopCloser(a.stdin), nopWriteCloser{a.stdout})
		},
	}
}

// nopWriteCloser leaves the process's stdout open when the transport closes.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
