package capture

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/proto"
)

// Session is one tab held for an interactive session (package session drives it): its own
// browser context and egress proxy session, like a job's tab, but kept for the session's
// life instead of being reset and pooled. Sessions do not take the browser's capture slots:
// the caller caps how many it opens (the worker's session tabs). Calls run one at a time.
type Session struct {
	b    *Browser
	inst *instance
	t    *tab
	vp   Viewport
	emu  Emulate

	mu    sync.Mutex
	once  sync.Once
	pages map[proto.TargetTargetID]*rod.Page // attached pages other than the tab's own (popups)
	cur   proto.TargetTargetID               // "" is the tab's own page
	refs  refSet
}

// SessionOptions configure a session's tab.
type SessionOptions struct {
	Viewport Viewport
	Emulate  Emulate
	Block    Block
	State    *StorageState // an auth profile's logged-in state, seeded before the first page
}

// Session errors the caller maps to its codes.
var (
	// ErrStaleRef: the ref is not of the latest snapshot, or its element left the page.
	ErrStaleRef = errors.New("stale ref")
	// ErrNoSessions: sessions need a local browser (Config.RemoteURL runs none).
	ErrNoSessions = errors.New("sessions need a local browser, not a remote pool")
)

// Page waits of a session's navigations and actions.
const (
	sessionLoadWait = 10 * time.Second      // for the load event after a navigation
	navigationGrace = 80 * time.Millisecond // for an action to start a navigation
	findTimeout     = 5 * time.Second       // for a CSS selector to match
)

// NewUnstarted validates cfg and returns a Browser whose Chromium starts with its first use:
// the sessions' browser, which most workers never need. A remote pool is refused.
func NewUnstarted(cfg Config) (*Browser, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("capture config: %w", err)
	}
	if cfg.RemoteURL != "" {
		return nil, ErrNoSessions
	}
	return unstartedBrowser(cfg.withDefaults()), nil
}

// OpenSession opens a session's tab: a new browser context with its own egress proxy
// session, the viewport, emulation and blocking of o, and o.State seeded.
func (b *Browser) OpenSession(ctx context.Context, o SessionOptions) (*Session, error) {
	if b.pool != nil {
		return nil, ErrNoSessions
	}
	inst, err := b.instance(ctx, false)
	if err != nil {
		return nil, classify(ctx, ctx, phaseSlot, err)
	}
	octx, cancel := context.WithTimeout(ctx, b.cfg.CallTimeout)
	defer cancel()
	t, err := newTab(octx, inst)
	if err != nil {
		if t != nil {
			t.discard()
		}
		b.release(inst)
		return nil, classify(ctx, ctx, phaseSlot, fmt.Errorf("open tab: %w", err))
	}
	s := &Session{b: b, inst: inst, t: t, vp: o.Viewport, emu: o.Emulate, pages: map[proto.TargetTargetID]*rod.Page{}}
	if err := s.setup(octx, o); err != nil {
		s.Close()
		return nil, classify(ctx, ctx, phaseNavigate, err)
	}
	return s, nil
}

// setup applies o to the fresh tab.
func (s *Session) setup(ctx context.Context, o SessionOptions) error {
	p := s.t.page.Context(ctx)
	s.t.beginJob()
	if err := s.t.applyBlock(p, o.Block); err != nil {
		return err
	}
	req := Request{URL: "about:blank", Viewport: o.Viewport, Emulate: o.Emulate}
	res := &Result{Timings: map[string]int64{}}
	if err := s.t.applyEmulation(p, req, res); err != nil {
		return err
	}
	if _, err := s.t.seedState(p, o.State, res); err != nil {
		return err
	}
	s.t.private = o.State != nil
	return s.t.navigate(p, req)
}

// Done is closed when the tab is gone: the renderer crashed, the browser died or Close ran.
func (s *Session) Done() <-chan struct{} { return s.t.ctx.Done() }

// Err is why Done was closed.
func (s *Session) Err() error { return context.Cause(s.t.ctx) }

// Close throws the tab and its browser context away (once).
func (s *Session) Close() {
	s.once.Do(func() {
		s.t.discard()
		s.b.release(s.inst)
	})
}

// page is the current page bound to ctx; ctx also ends when the tab goes away.
func (s *Session) page(ctx context.Context) *rod.Page {
	if p, ok := s.pages[s.cur]; ok && s.cur != "" {
		return p.Context(ctx)
	}
	return s.t.page.Context(ctx)
}

// call runs fn on the current page under ctx, one call at a time, ending early when the
// tab goes away.
func (s *Session) call(ctx context.Context, fn func(ctx context.Context, p *rod.Page) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(s.t.ctx, func() { cancel(context.Cause(s.t.ctx)) })
	defer stop()
	return fn(ctx, s.page(ctx))
}

// Location is the current page's URL and title.
func (s *Session) Location(ctx context.Context) (u, title string) {
	_ = s.call(ctx, func(ctx context.Context, p *rod.Page) error {
		// A document that is being replaced cannot answer, and one still being parsed may not
		// have its title yet: ask again until it is past "loading" or ctx ends (then the last
		// answer stands).
		return poll(ctx, 20*time.Millisecond, func() (bool, error) {
			var loc struct{ URL, Title, State string }
			if err := evalJSON(p, `({URL: location.href, Title: document.title, State: document.readyState})`, &loc); err != nil {
				return false, nil
			}
			u, title = loc.URL, loc.Title
			return loc.State != "loading", nil
		})
	})
	return u, title
}

// Goto loads rawURL in the current page through the egress guard and waits (bounded) for
// its load event. A denied address fails with CodeBlockedAddress.
func (s *Session) Goto(ctx context.Context, rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return newError(CodeInvalidURL, false, nil, "want an absolute http or https URL, got %q", CapMessage(rawURL))
	}
	return s.call(ctx, func(ctx context.Context, p *rod.Page) error {
		s.refs.clear()
		if s.cur != "" {
			return s.gotoPopup(ctx, p, rawURL)
		}
		s.t.beginJob()
		if err := s.t.navigate(p, Request{URL: rawURL, Viewport: s.vp, Emulate: s.emu}); err != nil {
			if e := s.t.egressFailure(rawURL); e != nil {
				return e
			}
			return classify(ctx, ctx, phaseNavigate, err)
		}
		if st := s.t.document(ctx, rawURL); st.egress != "" {
			return egressError(st.egress, st.docURL)
		}
		waitLoaded(ctx, p)
		return nil
	})
}

// gotoPopup navigates a popup page (its events are not the tab's): the guard's record of
// the host explains a failure.
func (s *Session) gotoPopup(ctx context.Context, p *rod.Page, rawURL string) error {
	nav, err := proto.PageNavigate{URL: rawURL}.Call(p)
	if err == nil && nav.ErrorText != "" && !strings.Contains(nav.ErrorText, "ERR_HTTP_RESPONSE_CODE_FAILURE") {
		err = &rod.NavigationError{Reason: nav.ErrorText}
	}
	if err != nil {
		if u, perr := url.Parse(rawURL); perr == nil && s.t.egress != nil {
			if kind, ok := s.t.egress.Outcome(u.Hostname()); ok && kind != "allowed" {
				return egressError(kind, rawURL)
			}
		}
		return classify(ctx, ctx, phaseNavigate, fmt.Errorf("navigate %s: %w", rawURL, err))
	}
	waitLoaded(ctx, p)
	return nil
}

// waitLoaded waits up to sessionLoadWait for the document's load event; a page that never
// finishes loading is used as it is.
func waitLoaded(ctx context.Context, p *rod.Page) {
	lctx, cancel := context.WithTimeout(ctx, sessionLoadWait)
	defer cancel()
	_ = poll(lctx, 20*time.Millisecond, func() (bool, error) {
		var done bool
		err := evalJSON(p.Context(lctx), `document.readyState === "complete"`, &done)
		if err != nil && (navigatingError(err) || transientEvalError(err)) {
			return false, nil
		}
		return done, err
	})
}

// History moves through the current page's history: -1 back, +1 forward, 0 reload.
func (s *Session) History(ctx context.Context, delta int) error {
	return s.call(ctx, func(ctx context.Context, p *rod.Page) error {
		s.refs.clear()
		if delta == 0 {
			if err := (proto.PageReload{}).Call(p); err != nil {
				return fmt.Errorf("reload: %w", err)
			}
			waitLoaded(ctx, p)
			return nil
		}
		h, err := proto.PageGetNavigationHistory{}.Call(p)
		if err != nil {
			return fmt.Errorf("read history: %w", err)
		}
		i := h.CurrentIndex + delta
		if i < 0 || i >= len(h.Entries) {
			return newError(CodeActionFailed, false, nil, "no page to go %s to", map[int]string{-1: "back", 1: "forward"}[delta])
		}
		if err := (proto.PageNavigateToHistoryEntry{EntryID: h.Entries[i].ID}).Call(p); err != nil {
			return fmt.Errorf("go to history entry: %w", err)
		}
		waitLoaded(ctx, p)
		return nil
	})
}

// OpenPages counts the pages open in Chromium in the browser contexts this Browser made
// (its tabs and the popups they opened), asking Chromium itself; 0 while no browser runs.
// A closed session whose tab was left behind would still be counted.
func (b *Browser) OpenPages(ctx context.Context) (int, error) {
	b.mu.Lock()
	inst := b.inst
	b.mu.Unlock()
	if b.pool != nil || inst == nil || !inst.alive() {
		return 0, nil
	}
	rb := inst.rb.Context(ctx)
	made, err := proto.TargetGetBrowserContexts{}.Call(rb)
	if err != nil {
		return 0, fmt.Errorf("list browser contexts: %w", err)
	}
	targets, err := proto.TargetGetTargets{}.Call(rb)
	if err != nil {
		return 0, fmt.Errorf("list targets: %w", err)
	}
	ours := map[proto.BrowserBrowserContextID]bool{}
	for _, id := range made.BrowserContextIDs {
		ours[id] = true
	}
	n := 0
	for _, t := range targets.TargetInfos {
		if t.Type == proto.TargetTargetInfoTypePage && ours[t.BrowserContextID] {
			n++
		}
	}
	return n, nil
}
