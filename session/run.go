package session

import (
	"context"
	"time"
)

// RunConfig bounds the commands a worker runs.
type RunConfig struct {
	// ReplyBytes caps a reply (default DefaultReplyBytes, SNAPQ_SESSION_REPLY_BYTES).
	ReplyBytes int
	// CommandTimeout bounds one command (default DefaultCommandTimeout).
	CommandTimeout time.Duration
	// Mask removes secrets from replies and the feed (the hook for an auth profile's, once
	// sessions can start logged in); nil: none.
	Mask func(string) string
}

// locationWait bounds reading the page's URL and title after a command (a document that is
// still replacing the old one answers once it can; a loaded machine can take seconds).
const locationWait = 5 * time.Second

// DefaultCommandTimeout bounds a command on the worker (SNAPQ_SESSION_COMMAND_TIMEOUT).
const DefaultCommandTimeout = 45 * time.Second

func (c RunConfig) withDefaults() RunConfig {
	if c.ReplyBytes <= 0 {
		c.ReplyBytes = DefaultReplyBytes
	}
	if c.CommandTimeout <= 0 {
		c.CommandTimeout = DefaultCommandTimeout
	}
	if c.Mask == nil {
		c.Mask = func(s string) string { return s }
	}
	return c
}

// run dispatches cmd on tab through the verb table: the reply (capped, masked, with the
// page's URL and title) and the files to store. close and help are answered here too.
func run(ctx context.Context, tab Tab, seq int, cmd Command, cfg RunConfig) (Reply, []file) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, cfg.CommandTimeout)
	defer cancel()
	c := &call{tab: tab, args: cmd.Args, seq: seq, cfg: cfg}
	var text string
	err := Validate(cmd)
	if err == nil {
		v, _ := byName(cmd.Command)
		c.verb = v
		switch v.Name {
		case "help":
			text, err = Help(firstArg(cmd.Args))
		case "close":
			text = "closed"
		default:
			text, err = v.run(ctx, c)
		}
	}
	r := Reply{OK: err == nil, Seq: seq}
	if err != nil {
		r.Error = errorInfo(ctx, err)
		r.Error.Message = cfg.Mask(r.Error.Message)
		text = r.Error.Message
	}
	r.Reply, r.Truncated = capReply(cfg.Mask(text), cfg.ReplyBytes)
	lctx, lcancel := context.WithTimeout(context.WithoutCancel(ctx), locationWait)
	r.URL, r.Title = tab.Location(lctx)
	lcancel()
	r.URL, r.Title = cfg.Mask(r.URL), cfg.Mask(r.Title)
	r.MS = time.Since(start).Milliseconds()
	return r, c.files
}

func firstArg(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}
