package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/snapq/snapq/capture"
)

// Tab is the browser side of a session (capture.Session).
type Tab interface {
	Goto(ctx context.Context, url string) error
	History(ctx context.Context, delta int) error
	Snapshot(ctx context.Context) (string, error)
	Click(ctx context.Context, target string, double bool) error
	Hover(ctx context.Context, target string) error
	Fill(ctx context.Context, target, text string) error
	Type(ctx context.Context, target, text string) error
	Press(ctx context.Context, key string) error
	Select(ctx context.Context, target, choice string) error
	Check(ctx context.Context, target string, on bool) error
	Scroll(ctx context.Context, how string) error
	WaitFor(ctx context.Context, kind, arg string, timeout time.Duration) error
	Screenshot(ctx context.Context, name, mode string, maxSegments int) ([]capture.Image, capture.Segments, error)
	PDF(ctx context.Context, name string) (capture.File, error)
	Read(ctx context.Context, output string) (string, error)
	Eval(ctx context.Context, expr string, limit int) (json.RawMessage, error)
	Tabs(ctx context.Context) ([]capture.TabInfo, error)
	SelectTab(ctx context.Context, i int) error
	CloseTab(ctx context.Context, i int) error
	PageCount(ctx context.Context) int
	Location(ctx context.Context) (url, title string)
	// Sensitive reports whether the field (TARGET, or "" for the focused one) holds a secret.
	Sensitive(ctx context.Context, target string) bool
}

var _ Tab = (*capture.Session)(nil)

// Bounds of commands.
const (
	MaxWait         = 30 * time.Second // wait_for's bound
	DefaultWait     = 10 * time.Second
	MaxArgs         = 16
	MaxArgBytes     = 16 << 10
	MaxCommandBytes = 64 << 10
)

// file is an output a command stores as an artifact.
type file struct {
	name, kind, contentType string
	data                    []byte
}

// call is one command being run: the tab, its arguments and what it produced.
type call struct {
	tab   Tab
	args  []string
	seq   int
	files []file
	cfg   RunConfig
	verb  *Verb
}

// Verb is one row of the verb table: the dispatcher runs it, `help` prints it.
type Verb struct {
	Name    string
	Aliases []string
	Usage   string // the arguments, e.g. "TARGET TEXT"
	Help    string
	Min     int // arguments at least
	Max     int // at most; -1: any
	run     func(ctx context.Context, c *call) (string, error)
}

// verbs is the table. TARGET is a ref from the latest snapshot (e21) or a CSS selector.
var verbs = []Verb{
	{Name: "open", Aliases: []string{"goto"}, Usage: "URL", Min: 1, Max: 1, run: runOpen,
		Help: "load URL (http or https) in the current tab; refs of the old page go stale"},
	{Name: "snapshot", Max: 0, run: runSnapshot,
		Help: "the page's accessibility tree with a ref (e21) per interactive or named element; refs are valid until the next navigation or snapshot"},
	{Name: "click", Usage: "TARGET", Min: 1, Max: 1, run: func(ctx context.Context, c *call) (string, error) {
		return c.after(ctx, "clicked "+c.args[0], c.tab.Click(ctx, c.args[0], false))
	}, Help: "click the element (TARGET: a ref such as e21, or a CSS selector)"},
	{Name: "dblclick", Usage: "TARGET", Min: 1, Max: 1, run: func(ctx context.Context, c *call) (string, error) {
		return c.after(ctx, "double-clicked "+c.args[0], c.tab.Click(ctx, c.args[0], true))
	}, Help: "double-click the element"},
	{Name: "hover", Usage: "TARGET", Min: 1, Max: 1, run: func(ctx context.Context, c *call) (string, error) {
		return "hovering over " + c.args[0], c.tab.Hover(ctx, c.args[0])
	}, Help: "move the mouse over the element"},
	{Name: "fill", Usage: "TARGET TEXT", Min: 2, Max: -1, run: func(ctx context.Context, c *call) (string, error) {
		return "filled " + c.args[0], c.tab.Fill(ctx, c.args[0], strings.Join(c.args[1:], " "))
	}, Help: "replace the field's value with TEXT"},
	{Name: "type", Usage: "[TARGET] TEXT", Min: 1, Max: 2, run: runType,
		Help: "type TEXT key by key into the element, or into the focused one"},
	{Name: "press", Usage: "KEY", Min: 1, Max: 1, run: func(ctx context.Context, c *call) (string, error) {
		return c.after(ctx, "pressed "+c.args[0], c.tab.Press(ctx, c.args[0]))
	}, Help: "press a key: " + strings.Join(capture.PressKeys(), ", ") + ", or one printable character"},
	{Name: "select", Usage: "TARGET VALUE", Min: 2, Max: 2, run: func(ctx context.Context, c *call) (string, error) {
		return "selected " + c.args[1], c.tab.Select(ctx, c.args[0], c.args[1])
	}, Help: "choose the <select>'s option by value or visible text"},
	{Name: "check", Usage: "TARGET", Min: 1, Max: 1, run: func(ctx context.Context, c *call) (string, error) {
		return "checked " + c.args[0], c.tab.Check(ctx, c.args[0], true)
	}, Help: "tick a checkbox or radio button (nothing when it already is)"},
	{Name: "uncheck", Usage: "TARGET", Min: 1, Max: 1, run: func(ctx context.Context, c *call) (string, error) {
		return "unchecked " + c.args[0], c.tab.Check(ctx, c.args[0], false)
	}, Help: "untick a checkbox"},
	{Name: "scroll", Usage: "[down|up|top|bottom|PIXELS|TARGET]", Max: 1, run: runScroll,
		Help: "scroll by a screen (default down), to an end, by pixels, or the element into view"},
	{Name: "wait_for", Usage: "text TEXT | selector CSS | MS", Min: 1, Max: 2, run: runWaitFor,
		Help: fmt.Sprintf("wait until TEXT appears or CSS matches a visible element (up to %s), or MS milliseconds", DefaultWait)},
	{Name: "screenshot", Usage: "[segments|viewport|full] [MAX_SEGMENTS]", Max: 2, run: runScreenshot,
		Help: "store a screenshot: viewport-high segments without scrolling (default, at most 10, never above 50), the first screen, or the whole page"},
	{Name: "pdf", Max: 0, run: runPDF, Help: "store the page printed as PDF (A4)"},
	{Name: "markdown", Max: 0, run: func(ctx context.Context, c *call) (string, error) {
		return c.tab.Read(ctx, capture.OutputMarkdown)
	}, Help: "the page as Markdown (the main content, as a job's markdown output)"},
	{Name: "text", Max: 0, run: func(ctx context.Context, c *call) (string, error) {
		return c.tab.Read(ctx, capture.OutputText)
	}, Help: "the page's visible text"},
	{Name: "eval", Usage: "EXPRESSION", Min: 1, Max: -1, run: runEval,
		Help: "evaluate a JavaScript expression in the page; the JSON value, capped"},
	{Name: "back", Max: 0, run: func(ctx context.Context, c *call) (string, error) {
		return "went back", c.tab.History(ctx, -1)
	}, Help: "go back in the tab's history"},
	{Name: "forward", Max: 0, run: func(ctx context.Context, c *call) (string, error) {
		return "went forward", c.tab.History(ctx, 1)
	}, Help: "go forward in the tab's history"},
	{Name: "reload", Max: 0, run: func(ctx context.Context, c *call) (string, error) {
		return "reloaded", c.tab.History(ctx, 0)
	}, Help: "reload the page"},
	{Name: "tabs", Usage: "[list | select N | close N]", Max: 2, run: runTabs,
		Help: "list the session's tabs (0 is its own, then popups the page opened), switch to one, or close a popup"},
	{Name: "close", Max: 0, Help: "end the session and free its tab"},
	{Name: "help", Usage: "[VERB]", Max: 1, Help: "this reference, or one verb's"},
}

// byName finds a verb by name or alias.
func byName(name string) (*Verb, bool) {
	for i := range verbs {
		v := &verbs[i]
		if v.Name == name || contains(v.Aliases, name) {
			return v, true
		}
	}
	return nil, false
}

// Verbs lists the verb names, aliases included, sorted.
func Verbs() []string {
	var out []string
	for _, v := range verbs {
		out = append(out, v.Name)
		out = append(out, v.Aliases...)
	}
	sort.Strings(out)
	return out
}

// VerbInfo is a verb's row as the API shows it (GET /v1/session-verbs).
type VerbInfo struct {
	Name    string   `json:"name"`
	Aliases []string `json:"aliases"`
	Usage   string   `json:"usage"`
	Help    string   `json:"help"`
}

// VerbInfos is the verb table's rows, in the table's order; with verb, only its row (false
// when it is no verb).
func VerbInfos(verb string) ([]VerbInfo, bool) {
	out := []VerbInfo{}
	for _, v := range verbs {
		if verb != "" && v.Name != verb && !contains(v.Aliases, verb) {
			continue
		}
		out = append(out, VerbInfo{Name: v.Name, Aliases: append([]string{}, v.Aliases...), Usage: v.Usage, Help: v.Help})
	}
	return out, len(out) > 0
}

// Help is the reference generated from the verb table: every verb, or one.
func Help(verb string) (string, error) {
	var b strings.Builder
	if verb == "" {
		b.WriteString("Commands (TARGET is a ref from the latest snapshot, such as e21, or a CSS selector):\n")
	}
	for _, v := range verbs {
		if verb != "" && v.Name != verb && !contains(v.Aliases, verb) {
			continue
		}
		name := v.Name
		if len(v.Aliases) > 0 {
			name += "|" + strings.Join(v.Aliases, "|")
		}
		fmt.Fprintf(&b, "  %s — %s\n", strings.TrimSpace(name+" "+v.Usage), v.Help)
	}
	if b.Len() == 0 {
		return "", unknownVerb(verb)
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// VerbTable renders the table as Markdown (docs/sessions.md holds the same rows; a test
// compares them).
func VerbTable() string {
	var b strings.Builder
	b.WriteString("| verb | arguments | what it does |\n| --- | --- | --- |\n")
	for _, v := range verbs {
		name := "`" + v.Name + "`"
		for _, a := range v.Aliases {
			name += ", `" + a + "`"
		}
		usage := ""
		if v.Usage != "" {
			usage = "`" + v.Usage + "`"
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", name, strings.ReplaceAll(usage, "|", "\\|"), strings.ReplaceAll(v.Help, "|", "\\|"))
	}
	return b.String()
}

// commandError is a failure with a stable code, before or while a verb runs.
type commandError struct {
	code, msg string
}

func (e *commandError) Error() string { return e.msg }

func badArgs(v *Verb, msg string) error {
	return &commandError{"bad_args", fmt.Sprintf("%s; usage: %s %s", msg, v.Name, v.Usage)}
}

func unknownVerb(name string) error {
	return &commandError{"unknown_command", fmt.Sprintf("unknown command %q; commands: %s (try `help`)", name, strings.Join(Verbs(), ", "))}
}

// Validate checks a command's verb and argument count before it is sent to the worker.
func Validate(cmd Command) error {
	v, ok := byName(cmd.Command)
	if !ok {
		return unknownVerb(cmd.Command)
	}
	if len(cmd.Args) > MaxArgs {
		return badArgs(v, fmt.Sprintf("at most %d arguments", MaxArgs))
	}
	for _, a := range cmd.Args {
		if len(a) > MaxArgBytes {
			return badArgs(v, fmt.Sprintf("an argument is over %d bytes", MaxArgBytes))
		}
	}
	if len(cmd.Args) < v.Min || (v.Max >= 0 && len(cmd.Args) > v.Max) {
		return badArgs(v, fmt.Sprintf("%d arguments given", len(cmd.Args)))
	}
	return nil
}

// after finishes an action's reply, noting a tab the action opened.
func (c *call) after(ctx context.Context, msg string, err error) (string, error) {
	if err != nil {
		return "", err
	}
	if n := c.tab.PageCount(ctx); n > 1 {
		msg += fmt.Sprintf("\n(the session has %d tabs; `tabs` lists them, `tabs select N` switches)", n)
	}
	return msg, nil
}

func runOpen(ctx context.Context, c *call) (string, error) {
	if err := c.tab.Goto(ctx, c.args[0]); err != nil {
		return "", err
	}
	return "opened " + c.args[0], nil
}

func runSnapshot(ctx context.Context, c *call) (string, error) {
	return c.tab.Snapshot(ctx)
}

func runType(ctx context.Context, c *call) (string, error) {
	target, text := "", c.args[0]
	if len(c.args) == 2 {
		target, text = c.args[0], c.args[1]
	}
	return c.after(ctx, fmt.Sprintf("typed %d characters", len([]rune(text))), c.tab.Type(ctx, target, text))
}

func runScroll(ctx context.Context, c *call) (string, error) {
	how := "down"
	if len(c.args) == 1 {
		how = c.args[0]
	}
	return "scrolled " + how, c.tab.Scroll(ctx, how)
}

func runWaitFor(ctx context.Context, c *call) (string, error) {
	kind, arg := c.args[0], ""
	if len(c.args) == 2 {
		arg = c.args[1]
	}
	v := c.verb
	switch {
	case (kind == "text" || kind == "selector") && arg != "":
		return kind + " found", c.tab.WaitFor(ctx, kind, arg, DefaultWait)
	case len(c.args) == 1 || kind == "ms" || kind == "time":
		ms, err := strconv.Atoi(c.args[len(c.args)-1])
		if err != nil || ms < 0 || time.Duration(ms)*time.Millisecond > MaxWait {
			return "", badArgs(v, fmt.Sprintf("milliseconds from 0 to %d", MaxWait.Milliseconds()))
		}
		return fmt.Sprintf("waited %d ms", ms), c.tab.WaitFor(ctx, "time", "", time.Duration(ms)*time.Millisecond)
	}
	return "", badArgs(v, "want text TEXT, selector CSS or MS")
}

func runScreenshot(ctx context.Context, c *call) (string, error) {
	mode, maxSeg := capture.ModeSegments, capture.DefaultMaxSegments
	v := c.verb
	if len(c.args) > 0 {
		mode = c.args[0]
		if mode != capture.ModeSegments && mode != capture.ModeViewport && mode != capture.ModeFull {
			return "", badArgs(v, "mode is segments, viewport or full")
		}
	}
	if len(c.args) == 2 {
		n, err := strconv.Atoi(c.args[1])
		if err != nil {
			return "", badArgs(v, "MAX_SEGMENTS is a number")
		}
		maxSeg = n
	}
	name := fmt.Sprintf("shot-%d", c.seq)
	imgs, segs, err := c.tab.Screenshot(ctx, name, mode, maxSeg)
	if err != nil {
		return "", err
	}
	var names []string
	for _, img := range imgs {
		c.files = append(c.files, file{name: img.Name, kind: "screenshot", contentType: img.ContentType, data: img.Data})
		names = append(names, fmt.Sprintf("%s (%dx%d)", img.Name, img.Width, img.Height))
	}
	msg := fmt.Sprintf("%d image(s): %s", len(imgs), strings.Join(names, ", "))
	if segs.Truncated {
		msg += fmt.Sprintf("\ntruncated: the page needs %d segments, %d were taken", segs.Total, segs.Captured)
	}
	return msg, nil
}

func runPDF(ctx context.Context, c *call) (string, error) {
	f, err := c.tab.PDF(ctx, fmt.Sprintf("page-%d", c.seq))
	if err != nil {
		return "", err
	}
	c.files = append(c.files, file{name: f.Name, kind: "pdf", contentType: "application/pdf", data: f.Data})
	return fmt.Sprintf("%s (%d bytes)", f.Name, len(f.Data)), nil
}

func runEval(ctx context.Context, c *call) (string, error) {
	v, err := c.tab.Eval(ctx, strings.Join(c.args, " "), c.cfg.ReplyBytes)
	return string(v), err
}

func runTabs(ctx context.Context, c *call) (string, error) {
	v := c.verb
	op := "list"
	if len(c.args) > 0 {
		op = c.args[0]
	}
	if op == "list" && len(c.args) <= 1 {
		tabs, err := c.tab.Tabs(ctx)
		return capture.FormatTabs(tabs), err
	}
	if len(c.args) != 2 {
		return "", badArgs(v, "select and close take a tab number")
	}
	n, err := strconv.Atoi(c.args[1])
	if err != nil {
		return "", badArgs(v, "the tab is a number from `tabs`")
	}
	switch op {
	case "select":
		if err := c.tab.SelectTab(ctx, n); err != nil {
			return "", err
		}
		u, title := c.tab.Location(ctx)
		return fmt.Sprintf("tab %d: %q %s", n, title, u), nil
	case "close":
		return fmt.Sprintf("closed tab %d", n), c.tab.CloseTab(ctx, n)
	}
	return "", badArgs(v, "list, select N or close N")
}

// errorInfo gives err a stable code: the verb's, the browser's (blocked_address, …),
// stale_ref, command_timeout, session_lost.
func errorInfo(ctx context.Context, err error) *ErrorInfo {
	var ce *commandError
	var cap *capture.Error
	switch {
	case errors.As(err, &ce):
		return &ErrorInfo{Code: ce.code, Message: ce.msg}
	case errors.Is(err, capture.ErrStaleRef):
		return &ErrorInfo{Code: "stale_ref", Message: err.Error() + "; take a new snapshot and use its refs"}
	case errors.As(err, &cap):
		return &ErrorInfo{Code: cap.Code, Message: cap.Message}
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return &ErrorInfo{Code: "command_timeout", Message: "the command did not finish in time: " + capture.CapMessage(err.Error())}
	}
	return &ErrorInfo{Code: "action_failed", Message: capture.CapMessage(err.Error())}
}
