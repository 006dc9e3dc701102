package session

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/snapq/snapq/artifacts"
	"github.com/snapq/snapq/capture"
	"github.com/snapq/snapq/events"
)

// Liveness: a worker holding sessions refreshes its key every BeatInterval with BeatTTL;
// the api's reaper, checking every ReapInterval, ends the sessions of a worker whose key
// expired. A killed worker's sessions are thus lost within BeatTTL + ReapInterval (4 s).
const (
	BeatInterval = time.Second
	BeatTTL      = 3 * time.Second
	ReapInterval = time.Second
)

// Host is the worker's side: it takes opens while it has a free session tab, runs each
// session's commands in order, expires idle and old sessions and closes them all on drain.
type Host struct {
	Worker  string // this worker's id, unique per process
	Tabs    int    // session tabs this worker holds at most (SNAPQ_SESSION_TABS)
	Browser Browser
	Repo    Repo
	Bus     Bus
	Feed    Feed
	Objects Objects
	Run     RunConfig
	Logger  *slog.Logger

	wg   sync.WaitGroup
	open chan struct{} // one token per held session
	held atomic.Int64  // sessions whose tab is open
}

// Held is how many sessions this worker holds a tab for now.
func (h *Host) Held() int { return int(h.held.Load()) }

// Serve takes sessions until ctx ends, then closes every held session with
// ReasonShutdown and returns when they are closed.
func (h *Host) Serve(ctx context.Context) {
	if h.Tabs <= 0 {
		return
	}
	h.open = make(chan struct{}, h.Tabs)
	h.Run = h.Run.withDefaults()
	bctx, stopBeat := context.WithCancel(context.WithoutCancel(ctx))
	go h.beat(bctx)
	for ctx.Err() == nil {
		select {
		case h.open <- struct{}{}:
		case <-ctx.Done():
			continue
		}
		id, err := h.Bus.PopOpen(ctx, time.Second)
		if err != nil || id == "" {
			<-h.open
			if err != nil && ctx.Err() == nil {
				h.log().Warn("take a session to open", "err", err)
				_ = sleepCtx(ctx, time.Second)
			}
			continue
		}
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			defer func() { <-h.open }()
			h.serve(ctx, id)
		}()
	}
	h.wg.Wait()
	stopBeat()
}

// beat keeps this worker's liveness key until ctx ends.
func (h *Host) beat(ctx context.Context) {
	t := time.NewTicker(BeatInterval)
	defer t.Stop()
	for {
		if err := h.Bus.Beat(ctx, h.Worker, BeatTTL); err != nil && ctx.Err() == nil {
			h.log().Warn("session heartbeat", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// live is one held session.
type live struct {
	s    *Session
	tab  *capture.Session
	cfg  RunConfig
	seq  int
	last time.Time
}

// serve opens session id's tab, answers its open, then runs its commands until it ends.
func (h *Host) serve(ctx context.Context, id string) {
	bg := context.WithoutCancel(ctx)
	l, err := h.openTab(ctx, id)
	if err != nil {
		h.log().Warn("open session", "session_id", id, "err", err)
		if ended, _ := h.Repo.EndSession(bg, id, StatusFailed, capture.CapMessage(err.Error())); ended {
			publishEnd(bg, h.Feed, id, StatusFailed, capture.CapMessage(err.Error()))
		}
		_ = h.Bus.PushReply(bg, id, OpenReply, Reply{Error: &ErrorInfo{Code: "session_open_failed", Message: capture.CapMessage(err.Error())}})
		return
	}
	if l == nil {
		return // not opening any more (ended while it waited)
	}
	h.held.Add(1)
	defer h.held.Add(-1)
	defer l.tab.Close()
	h.Feed.Publish(bg, Stream(id), false, events.Event{Type: EventSession,
		Data: SessionEvent{SessionID: id, Status: StatusOpen, At: time.Now().UTC()}})
	_ = h.Bus.PushReply(bg, id, OpenReply, Reply{OK: true, Reply: "opened"})
	status, reason := h.loop(ctx, l)
	if ended, err := h.Repo.EndSession(bg, id, status, reason); err != nil {
		h.log().Warn("end session", "session_id", id, "err", err)
	} else if ended {
		publishEnd(bg, h.Feed, id, status, reason)
	}
	_ = h.Bus.Drop(bg, id)
}

// OpenReply is the reply id of a session's open.
const OpenReply = "open"

// openTab opens the tab of session id if it is still opening; nil when it is not.
func (h *Host) openTab(ctx context.Context, id string) (*live, error) {
	s, err := h.Repo.GetSession(ctx, id)
	if err != nil || s.Status != StatusOpening {
		return nil, err
	}
	o := s.Options.captureOptions()
	cfg := h.Run
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	tab, err := h.Browser.OpenSession(octx, o)
	if err != nil {
		return nil, err
	}
	ok, err := h.Repo.MarkSessionOpen(ctx, id, h.Worker)
	if err != nil || !ok {
		tab.Close()
		return nil, err
	}
	s.Status, s.WorkerID = StatusOpen, h.Worker
	return &live{s: s, tab: tab, cfg: cfg, last: time.Now()}, nil
}

// loop runs l's commands in order until the session ends, and says how it ended.
func (h *Host) loop(ctx context.Context, l *live) (status, reason string) {
	idle := time.Duration(l.s.Options.IdleTimeoutS) * time.Second
	for {
		switch {
		case ctx.Err() != nil:
			return StatusClosed, ReasonShutdown
		case l.tab.Err() != nil:
			return StatusLost, ReasonCrashed
		case time.Since(l.last) > idle:
			return StatusClosed, ReasonIdle
		case time.Now().After(l.s.ExpiresAt):
			return StatusClosed, ReasonLifetime
		}
		cmd, err := h.Bus.PopCommand(ctx, l.s.ID, time.Second)
		if err != nil || cmd == nil {
			if err != nil && ctx.Err() == nil {
				_ = sleepCtx(ctx, 200*time.Millisecond)
			}
			continue
		}
		l.last = time.Now()
		if h.exec(ctx, l, *cmd) {
			return StatusClosed, ReasonClient
		}
	}
}

// exec runs one command with its feed rows and reply; true when it closed the session.
func (h *Host) exec(ctx context.Context, l *live, cmd Command) bool {
	bg := context.WithoutCancel(ctx)
	l.seq++
	row := CommandEvent{SessionID: l.s.ID, Seq: l.seq, Command: cmd.Command, Args: feedArgs(ctx, l.tab, cmd, l.cfg.Mask),
		Status: "running", At: time.Now().UTC()}
	h.Feed.Publish(bg, Stream(l.s.ID), false, events.Event{Type: EventCommand, Data: row})
	r, files := run(ctx, l.tab, l.seq, cmd, l.cfg)
	if r.OK {
		r.Artifacts = h.store(bg, l.s.ID, files, &r)
	}
	row.Status, row.Excerpt, row.Error, row.URL, row.Title = "ok", excerpt(r.Reply, ExcerptBytes), r.Error, r.URL, r.Title
	row.Artifacts, row.MS, row.At = r.Artifacts, r.MS, time.Now().UTC()
	if !r.OK {
		row.Status = "error"
	}
	h.Feed.Publish(bg, Stream(l.s.ID), false, events.Event{Type: EventCommand, Data: row})
	if err := h.Repo.TouchSession(bg, l.s.ID); err != nil {
		h.log().Warn("record session activity", "session_id", l.s.ID, "err", err)
	}
	if err := h.Bus.PushReply(bg, l.s.ID, cmd.ID, r); err != nil {
		h.log().Warn("send a session reply", "session_id", l.s.ID, "err", err)
	}
	return r.OK && cmd.Command == "close"
}

// store uploads a command's files; a failed upload fails the reply.
func (h *Host) store(ctx context.Context, id string, files []file, r *Reply) []Artifact {
	var out []Artifact
	for _, f := range files {
		key := "sessions/" + id + "/" + f.name
		obj, err := h.Objects.Put(ctx, key, f.data, f.contentType, artifacts.PutOptions{})
		if err == nil {
			a := Artifact{Name: f.name, Kind: f.kind, ContentType: f.contentType, Size: obj.Bytes, Key: key}
			if err = h.Repo.AddSessionArtifact(ctx, id, a); err == nil {
				out = append(out, a)
				continue
			}
		}
		r.OK, r.Error = false, &ErrorInfo{Code: "upload_failed", Message: capture.CapMessage(err.Error())}
		r.Reply = r.Error.Message
		return nil
	}
	return out
}

// feedArgs are cmd's arguments as the feed shows them: masked (the auth profile's secrets),
// cut, and — for the text of fill and type — replaced by MaskedText when it looks like a
// secret or goes into a field that holds one (a password, a one-time code, a card number).
func feedArgs(ctx context.Context, tab Tab, cmd Command, mask func(string) string) []string {
	args := maskArgs(cmd.Args, mask)
	from, target, ok := secretText(cmd)
	if ok && (looksSecret(strings.Join(cmd.Args[from:], " ")) || tab.Sensitive(ctx, target)) {
		for i := from; i < len(args); i++ {
			args[i] = MaskedText
		}
	}
	return args
}

// MaskedText stands for a secret typed or filled, in the feed.
const MaskedText = "[masked]"

// secretText finds the text argument of fill and type: its index and the field it goes into
// ("" for the focused one).
func secretText(cmd Command) (from int, target string, ok bool) {
	v, found := byName(cmd.Command)
	switch {
	case !found || Validate(cmd) != nil:
		return 0, "", false
	case v.Name == "fill":
		return 1, cmd.Args[0], true
	case v.Name == "type" && len(cmd.Args) == 2:
		return 1, cmd.Args[0], true
	case v.Name == "type":
		return 0, "", true
	}
	return 0, "", false
}

// secretPrefixes start well-known kinds of credentials.
var secretPrefixes = []string{"sk-", "sk_", "pk_live_", "rk_live_", "ghp_", "gho_", "ghs_", "github_pat_", "glpat-", "xox",
	"AKIA", "ASIA", "AIza", "eyJ", "-----BEGIN"}

// looksSecret is true for text shaped like a credential whatever the field: a known prefix,
// or 16+ characters that mix letters with digits or symbols (not words, an email, a URL).
func looksSecret(text string) bool {
	for _, p := range secretPrefixes {
		if strings.HasPrefix(text, p) {
			return true
		}
	}
	if len(text) < 16 || strings.ContainsAny(text, " \t\n@") || strings.Contains(text, "://") { // not words, emails or URLs
		return false
	}
	var letters, others bool
	for _, r := range text {
		if unicode.IsLetter(r) {
			letters = true
		} else {
			others = true
		}
	}
	return letters && others
}

func maskArgs(args []string, mask func(string) string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = excerpt(mask(a), 200)
	}
	return out
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (h *Host) log() *slog.Logger {
	if h.Logger == nil {
		return slog.Default()
	}
	return h.Logger
}
