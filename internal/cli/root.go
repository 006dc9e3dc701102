package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/snapq/snapq/client"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// usageError is a mistake in how the command was called: exit 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// failedError is a command that ran but whose outcome is a failure (a job
// failed, a run did not pass); it has printed why already: exit 1.
type failedError struct{ msg string }

func (e failedError) Error() string { return e.msg }

// errorExit is a command whose outcome is an error rather than a failure (a
// CI gate's run ended in error, or the API could not be reached): exit 2,
// so a pipeline tells "the pages changed" from "the check broke".
type errorExit struct{ err error }

func (e errorExit) Error() string { return e.err.Error() }
func (e errorExit) Unwrap() error { return e.err }

// app is one invocation: its streams, settings and client.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// Global flags.
	url, apiKey, configPath string
	apiKeyFile              string
	json                    bool
	// noProgress turns the progress display off (--quiet).
	quiet bool
	c     *client.Client
	cfg   client.Config // c's configuration
	// ran is set once flags and arguments are parsed: an error before is a
	// usage error.
	ran bool
}

// Main runs the snapq command with args and returns the exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr}
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var fe failedError
	if errors.As(err, &fe) {
		if fe.msg != "" {
			fmt.Fprintln(stderr, "snapq:", fe.msg)
		}
		return exitFailure
	}
	fmt.Fprintln(stderr, "snapq:", err)
	if errors.As(err, new(errorExit)) {
		return exitUsage
	}
	var ue usageError
	if errors.As(err, &ue) || !a.ran {
		fmt.Fprintln(stderr, "Run 'snapq --help' for usage.")
		return exitUsage
	}
	return exitFailure
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "snapq",
		Short: "Capture web pages in batches with a snapq api",
		Long: `snapq submits batches of URLs to a snapq api, shows their progress, downloads
the screenshots and other artifacts, and follows visual-regression suites and runs.

Settings come from flags, then the environment (SNAPQ_URL, SNAPQ_API_KEY or
SNAPQ_API_KEY_FILE), then the config file (~/.config/snapq/config.yaml, or --config), which holds lines
such as:

  url: http://127.0.0.1:8080
  api_key: sq_...

Exit codes: 0 success, 1 failure (API error, failed job, run not passed),
2 usage error.`,
		Example: `  snapq capture urls.txt --wait --out shots/
  snapq capture --url https://example.com --set viewport.width=390 --wait
  snapq batches ls
  snapq batches watch 0f1e…
  snapq suites run 7a2b… --wait`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			a.ran = true
			if cmd.Name() == "completion" || (cmd.Parent() != nil && cmd.Parent().Name() == "completion") {
				return nil
			}
			return a.connect()
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	pf := root.PersistentFlags()
	pf.StringVar(&a.url, "api", "", "the api's base URL (env SNAPQ_URL; default http://127.0.0.1:8080)")
	pf.StringVar(&a.apiKey, "api-key", "", "the API key (env SNAPQ_API_KEY); shows in the process list (ps) to every local user: prefer --api-key-file or the env")
	pf.StringVar(&a.apiKeyFile, "api-key-file", "", "a file holding the API key (env SNAPQ_API_KEY_FILE)")
	pf.StringVar(&a.configPath, "config", "", "the config file (default ~/.config/snapq/config.yaml)")
	pf.BoolVar(&a.json, "json", false, "print JSON instead of tables, for scripts")
	pf.BoolVarP(&a.quiet, "quiet", "q", false, "show no progress")
	root.AddCommand(a.captureCommand(), a.batchesCommand(), a.jobsCommand(), a.artifactsCommand(),
		a.suitesCommand(), a.runsCommand(), a.mcpCommand(), a.sessionCommand())
	return root
}

// connect resolves the settings (flags > environment > config file) and
// builds the client.
func (a *app) connect() error {
	s, err := resolveSettings(a.url, a.apiKey, a.apiKeyFile, a.configPath, os.Getenv)
	if err != nil {
		return usageError{err}
	}
	a.cfg = client.Config{BaseURL: s.URL, APIKey: s.APIKey, UserAgent: "snapq-cli"}
	c, err := client.New(a.cfg)
	if err != nil {
		return usageError{err}
	}
	a.c = c
	return nil
}

// exactArgs is cobra.ExactArgs as a usage error.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := cobra.ExactArgs(n)(cmd, args); err != nil {
			return usageError{err}
		}
		return nil
	}
}
