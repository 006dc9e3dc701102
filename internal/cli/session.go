package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/snapq/snapq/client"
)

// sessionCommand is `snapq session`: interactive browser sessions (docs/sessions.md).
func (a *app) sessionCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "session",
		Aliases: []string{"sessions"},
		Short:   "Drive an interactive browser session: open, snapshot, click by ref, …",
		Long: `A session is one browser tab kept for you on a worker: cookies and page state persist
between commands. Each command is a verb and its arguments ("open URL", "snapshot",
"click e21", "fill e3 'Ada'"); "help" lists them. Replies are capped; a capped reply
ends with a "[truncated: …]" line.`,
		Example: `  id=$(snapq session new)
  snapq session exec $id open https://example.com
  snapq session exec $id snapshot
  snapq session exec $id click e3
  snapq session close $id
  printf 'open https://example.com\nsnapshot\n' | snapq session run -`,
	}
	var o client.SessionOptions
	newCmd := &cobra.Command{
		Use:   "new",
		Short: "Open a session and print its id",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := a.c.CreateSession(cmd.Context(), o)
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(s)
			}
			fmt.Fprintln(a.stdout, s.ID)
			return nil
		},
	}
	sessionFlags(newCmd, &o)
	cmd.AddCommand(newCmd, a.sessionExecCommand(), a.sessionRunCommand(), a.sessionShellCommand(),
		a.sessionEventsCommand(), a.sessionCloseCommand(), a.sessionListCommand())
	return cmd
}

// sessionFlags are the options of a new session.
func sessionFlags(cmd *cobra.Command, o *client.SessionOptions) {
	f := cmd.Flags()
	f.IntVar(&o.IdleTimeoutS, "idle", 0, "close the session after this many idle seconds (default 300, at most 1800)")
	f.IntVar(&o.MaxLifetimeS, "lifetime", 0, "close the session after this many seconds whatever happens (default 3600)")
	f.StringVar(&o.AuthProfile, "auth-profile", "", "start logged in with this auth profile of the key")
}

func (a *app) sessionExecCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "exec ID COMMAND [ARG…]",
		Short:   "Run one command in a session and print its reply (exit 1 when it failed)",
		Example: "  snapq session exec 5a6b… fill e3 'Ada Lovelace'",
		Args:    cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ok, err := a.execOne(cmd.Context(), args[0], args[1], args[2:])
			if err == nil && !ok {
				return failedError{}
			}
			return err
		},
	}
}

// execOne runs one command and prints its reply: the text to stdout, an error to stderr.
func (a *app) execOne(ctx context.Context, id, verb string, args []string) (bool, error) {
	r, err := a.c.Exec(ctx, id, verb, args...)
	if err != nil {
		return false, err
	}
	if a.json {
		return r.OK, a.printJSON(r)
	}
	if !r.OK {
		fmt.Fprintf(a.stderr, "error %s: %s\n", r.Error.Code, r.Error.Message)
		return false, nil
	}
	if r.Reply != "" {
		fmt.Fprintln(a.stdout, r.Reply)
	}
	for _, art := range r.Artifacts {
		fmt.Fprintf(a.stdout, "artifact %s %s\n", art.Name, art.URL)
	}
	return true, nil
}

func (a *app) sessionRunCommand() *cobra.Command {
	var o client.SessionOptions
	run := &cobra.Command{
		Use:   "run FILE|-",
		Short: "Open a session, run each line of FILE (or stdin) as a command, close it (exit 1 if one failed)",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			in := a.stdin
			if args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return err
				}
				defer f.Close()
				in = f
			}
			return a.runLines(cmd.Context(), "", o, in, false)
		},
	}
	sessionFlags(run, &o)
	return run
}

func (a *app) sessionShellCommand() *cobra.Command {
	var o client.SessionOptions
	shell := &cobra.Command{
		Use:   "shell [ID]",
		Short: "Read commands from stdin, one per line, and print each reply (a new session unless ID is given)",
		Long: `Reads one command per line from standard input ("open https://example.com",
"snapshot", "click e21", …; quote arguments with spaces) and prints each reply. Without an
ID a new session is opened and closed at the end of the input; with one, that session is
used and left open. A failed command prints its error and the shell goes on.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := ""
			if len(args) == 1 {
				id = args[0]
			}
			return a.runLines(cmd.Context(), id, o, a.stdin, true)
		},
	}
	sessionFlags(shell, &o)
	return shell
}

// runLines runs each line of in as a command in session id (a new one, closed at the end,
// when id is ""). With keepGoing a failed command does not change the exit status.
func (a *app) runLines(ctx context.Context, id string, o client.SessionOptions, in io.Reader, keepGoing bool) error {
	if id == "" {
		s, err := a.c.CreateSession(ctx, o)
		if err != nil {
			return err
		}
		id = s.ID
		fmt.Fprintln(a.stderr, "session", id)
		defer a.c.CloseSession(context.WithoutCancel(ctx), id) //nolint:errcheck
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	failed := 0
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		verb, args, err := client.ParseCommandLine(line)
		if err != nil {
			fmt.Fprintf(a.stderr, "error bad_args: %v\n", err)
			failed++
			continue
		}
		if !a.json {
			fmt.Fprintf(a.stdout, "> %s\n", line)
		}
		ok, err := a.execOne(ctx, id, verb, args)
		if err != nil {
			return err
		}
		if !ok {
			failed++
		}
		if verb == "close" && ok {
			break
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if failed > 0 && !keepGoing {
		return failedError{msg: fmt.Sprintf("%d command(s) failed", failed)}
	}
	return nil
}

func (a *app) sessionEventsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "events ID",
		Short: "Follow a session's feed: each command as it runs and ends, and the session's end",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.c.SessionEvents(cmd.Context(), args[0], func(e client.Event) bool {
				if a.json {
					fmt.Fprintf(a.stdout, "{\"type\":%q,\"data\":%s}\n", e.Type, e.Data)
					return true
				}
				fmt.Fprintln(a.stdout, feedLine(e))
				return true
			})
		},
	}
}

// feedLine renders one feed event as a line.
func feedLine(e client.Event) string {
	var d struct {
		Seq     int      `json:"seq"`
		Command string   `json:"command"`
		Args    []string `json:"args"`
		Status  string   `json:"status"`
		Reason  string   `json:"reason"`
		Excerpt string   `json:"excerpt"`
		Error   *struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(e.Data, &d)
	switch e.Type {
	case "command":
		line := fmt.Sprintf("#%d %s %s: %s", d.Seq, d.Command, strings.Join(d.Args, " "), d.Status)
		if d.Error != nil {
			line += " " + d.Error.Code
		}
		return line
	case "session":
		return strings.TrimSpace("session " + d.Status + " " + d.Reason)
	}
	return e.Type
}

func (a *app) sessionCloseCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "close ID",
		Short: "Close a session and free its tab",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := a.c.CloseSession(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(s)
			}
			fmt.Fprintf(a.stdout, "session %s %s (%s)\n", s.ID, s.Status, s.CloseReason)
			return nil
		},
	}
}

func (a *app) sessionListCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "ls",
		Short: "List the key's sessions, newest first",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			list, err := a.c.ListSessions(cmd.Context())
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(list)
			}
			rows := make([][]string, 0, len(list))
			for _, s := range list {
				rows = append(rows, []string{s.ID, s.Status, fmt.Sprint(s.Commands), when(&s.CreatedAt), s.CloseReason})
			}
			a.table([]string{"ID", "STATUS", "COMMANDS", "CREATED", "REASON"}, rows)
			return nil
		},
	}
}
