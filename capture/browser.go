package capture

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/go-rod/rod/lib/proto"
)

// Browser captures pages with one Chromium. It is safe for concurrent use: up to Config.Tabs
// captures run at once, further callers wait for a free slot (or for their ctx to end).
//
// The browser is restarted when its connection drops or the renderer process tree dies, and
// after Config.BrowserRecycleAfter jobs (slots are drained first).
type Browser struct {
	cfg   Config
	log   *slog.Logger
	slots chan struct{} // one token per running capture
	batch chan struct{} // one token per running non-interactive capture (lane.go); nil: none reserved

	// pool, with Config.RemoteURL, runs every capture on one of its single-slot members
	// (remote.go); the fields below are then unused.
	pool *remotePool

	mu       sync.Mutex
	closed   bool
	inst     *instance     // current browser; nil until (re)started
	starting chan struct{} // non-nil while a goroutine starts a browser
	draining *instance     // retiring browser; no new jobs until it is closed
	bg       sync.WaitGroup

	// devtoolsPort launches Chromium with a DevTools port instead of its pipe: set only by
	// tests and measurements, before the first browser starts (useDevtoolsPort).
	devtoolsPort bool
}

// New validates cfg, starts the browser and returns a Browser ready to capture. ctx bounds
// the start only.
func New(ctx context.Context, cfg Config) (*Browser, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("capture config: %w", err)
	}
	cfg = cfg.withDefaults()
	b := unstartedBrowser(cfg)
	if cfg.RemoteURL != "" {
		pool, err := newRemotePool(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("connect to the remote browsers: %w", err)
		}
		b.pool = pool
		return b, nil
	}
	inst, err := startInstance(ctx, cfg, b.devtoolsPort)
	if err != nil {
		return nil, fmt.Errorf("start browser: %w", err)
	}
	b.inst = inst
	return b, nil
}

// unstartedBrowser returns a Browser with no browser started yet.
func unstartedBrowser(cfg Config) *Browser {
	return &Browser{cfg: cfg, log: cfg.Logger, slots: make(chan struct{}, cfg.Tabs), batch: batchSlots(cfg)}
}

// Ping checks that the browser answers, starting it if it is down. With RemoteURL, one
// answering browser of the pool is enough.
func (b *Browser) Ping(ctx context.Context) error {
	if b.pool != nil {
		return b.pool.ping(ctx)
	}
	inst, err := b.instance(ctx, false)
	if err != nil {
		return err
	}
	defer b.release(inst)
	if _, err := (proto.BrowserGetVersion{}).Call(inst.rb.Context(ctx)); err != nil {
		return fmt.Errorf("browser version: %w", err)
	}
	return nil
}

// Close stops the browser and removes its temporary profile. Captures still running fail
// with CodeCanceled; later calls return an error. Close waits for background shutdowns.
func (b *Browser) Close() error {
	if b.pool != nil {
		b.mu.Lock()
		closed := b.closed
		b.closed = true
		b.mu.Unlock()
		if !closed {
			b.pool.close()
		}
		return nil
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	insts := []*instance{b.inst, b.draining}
	b.inst = nil
	starting := b.starting
	b.mu.Unlock()
	if starting != nil {
		<-starting // the starter sees closed and shuts its browser down in the background
	}
	for _, inst := range insts {
		if inst != nil {
			inst.close(errBrowserClosed)
		}
	}
	b.bg.Wait()
	return nil
}

// Capture loads req.URL in a clean tab and returns its screenshots. Failures are *Error with
// a stable Code; a target's own HTTP error status is a result, not a failure.
//
// Result.Timings gets, besides the phases of the job (job.go), "slot" (waiting for a lane
// token and a slot), "tab" (the browser and a clean tab) and "reset" (the clean slate
// restored after the job, before Capture returns; an interactive capture restores it after).
func (b *Browser) Capture(ctx context.Context, req Request) (res *Result, err error) {
	start := time.Now()
	req, err = normalizeRequest(req)
	if err != nil {
		return nil, err
	}
	if b.pool != nil {
		return b.pool.capture(ctx, req)
	}
	leave, err := b.takeSlot(ctx)
	if err != nil {
		return nil, err
	}
	handedOff := false // the slot and instance are given back by giveBack's goroutine
	defer func() {
		if !handedOff {
			leave()
		}
	}()
	slotted := time.Now()

	inst, err := b.instance(ctx, true)
	if err != nil {
		return nil, classify(ctx, ctx, phaseSlot, err)
	}
	defer func() {
		if !handedOff {
			b.release(inst)
		}
	}()

	t, err := b.openTab(ctx, inst)
	if err != nil {
		return nil, err
	}
	tabbed := time.Now()
	ok := false
	defer func() {
		if res != nil {
			res.Timings["slot"] = slotted.Sub(start).Milliseconds()
			res.Timings["tab"] = tabbed.Sub(slotted).Milliseconds()
		}
		reset := time.Now()
		handedOff = b.giveBack(ctx, inst, t, ok, leave)
		if res != nil && !handedOff { // an interactive capture's clean slate runs after it returns
			res.Timings["reset"] = time.Since(reset).Milliseconds()
		}
	}()
	res, ok, err = b.runTab(ctx, t, req)
	if err != nil {
		return nil, err
	}
	res.Timings["total"] = time.Since(start).Milliseconds()
	return res, nil
}

// runTab runs req in t within its budget (timeout_ms, and the grace past it for the
// capture's own cleanup). ok: the tab may serve the next job after its clean slate — a
// logged-out page is an answer, not a broken tab (the job's retry logs in again).
func (b *Browser) runTab(ctx context.Context, t *tab, req Request) (res *Result, ok bool, err error) {
	var budget time.Time
	if req.Timeout > 0 {
		budget = time.Now().Add(req.Timeout)
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout+CaptureGrace(req.Timeout))
		defer cancel()
	}
	res, err = t.run(ctx, req, b.cfg, budget)
	if err != nil {
		var ce *Error
		return nil, errors.As(err, &ce) && ce.Code == CodeLoggedOut, err
	}
	return res, true, nil
}

// giveBack returns t to inst after a capture (its clean slate, putTab). An
// interactive capture's caller is waiting for the result: the clean slate
// then runs after Capture returned, still holding the capture's slot (and
// the instance), which it gives back when the tab is clean, so the next
// capture on that slot still starts on a clean tab. It reports whether it
// did so (the caller must not give them back itself).
func (b *Browser) giveBack(ctx context.Context, inst *instance, t *tab, ok bool, leave func()) bool {
	if !Interactive(ctx) {
		inst.putTab(t, ok)
		return false
	}
	b.mu.Lock()
	closed := b.closed
	if !closed {
		b.bg.Add(1)
	}
	b.mu.Unlock()
	if closed {
		inst.putTab(t, ok)
		return false
	}
	go func() {
		defer b.bg.Done()
		inst.putTab(t, ok)
		b.release(inst)
		leave()
	}()
	return true
}

// openTab takes a tab of inst. Opening a tab is a few CDP calls, bounded like one: a browser
// that does not answer them within CallTimeout is wedged (after a renderer is killed,
// Page.enable on a new target can go unanswered and hold rod's target lock) and is replaced,
// not waited on until the task's deadline by every job after this one.
func (b *Browser) openTab(ctx context.Context, inst *instance) (*tab, error) {
	openCtx, cancelOpen := context.WithTimeout(ctx, b.cfg.CallTimeout)
	t, err := inst.takeTab(openCtx)
	cancelOpen()
	if err == nil {
		return t, nil
	}
	if cause := context.Cause(inst.ctx); cause != nil {
		// The browser went away (shut down, crashed, recycled) while the tab opened: the
		// job fails for that reason, not for the broken connection it left behind.
		err = fmt.Errorf("%w: %w", cause, err)
	} else if ctx.Err() == nil {
		// A browser that cannot open a tab is not worth keeping.
		inst.cancel(fmt.Errorf("%w: open tab: %w", errBrowserGone, err))
	}
	return nil, classify(ctx, ctx, phaseSlot, fmt.Errorf("open tab: %w", err))
}

// takeSlot waits for the capture's lane token (lane.go) and a slot; the
// returned func gives both back.
func (b *Browser) takeSlot(ctx context.Context) (func(), error) {
	leave, err := b.enterLane(ctx)
	if err != nil {
		return nil, err
	}
	select {
	case b.slots <- struct{}{}:
	case <-ctx.Done():
		leave()
		return nil, classify(ctx, ctx, phaseSlot, ctx.Err())
	}
	return func() { <-b.slots; leave() }, nil
}

// Bounds of CaptureGrace.
const (
	MinCaptureGrace = 2 * time.Second
	MaxCaptureGrace = 15 * time.Second
)

// CaptureGrace is the time a job gets, after its Request.Timeout ran out in a wait, to take
// its outputs of what has rendered: a quarter of the timeout, within MinCaptureGrace and
// MaxCaptureGrace. A job therefore ends within Timeout + CaptureGrace(Timeout).
func CaptureGrace(timeout time.Duration) time.Duration {
	return min(max(timeout/4, MinCaptureGrace), MaxCaptureGrace)
}

// instance returns the running browser, starting one if there is none or it died, and
// counts the caller in. Every successful call must be paired with release.
func (b *Browser) instance(ctx context.Context, job bool) (*instance, error) {
	for {
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			return nil, errBrowserClosed
		}
		if wait := b.waitFor(); wait != nil {
			b.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if b.inst != nil && !b.inst.alive() {
			dead := b.inst
			b.inst = nil
			b.log.Warn("browser died; restarting", "cause", context.Cause(dead.ctx))
			b.bg.Add(1)
			go func() { defer b.bg.Done(); dead.close(errBrowserGone) }()
		}
		if b.inst == nil {
			started := make(chan struct{})
			b.starting = started
			b.mu.Unlock()

			inst, err := startInstance(ctx, b.cfg, b.devtoolsPort)

			b.mu.Lock()
			b.starting = nil
			close(started)
			if err == nil && b.closed {
				err = errBrowserClosed
				b.bg.Add(1)
				go func() { defer b.bg.Done(); inst.close(errBrowserClosed) }()
			} else if err == nil {
				b.inst = inst
			}
			b.mu.Unlock()
			if err != nil {
				return nil, fmt.Errorf("start browser: %w", err)
			}
			continue
		}
		inst := b.inst
		inst.inflight++
		if job {
			inst.jobs++
			if inst.jobs >= b.cfg.BrowserRecycleAfter {
				// This is the instance's last job: later callers wait for it to drain.
				b.inst = nil
				b.draining = inst
			}
		}
		b.mu.Unlock()
		return inst, nil
	}
}

// waitFor returns a channel to wait on before a browser can be handed out, or nil. b.mu held.
func (b *Browser) waitFor() <-chan struct{} {
	if b.starting != nil {
		return b.starting
	}
	if b.draining != nil {
		return b.draining.drained
	}
	return nil
}

// release undoes instance; the last job of a retiring browser closes it.
func (b *Browser) release(inst *instance) {
	b.mu.Lock()
	inst.inflight--
	last := inst.inflight == 0 && b.draining == inst
	b.mu.Unlock()
	if !last {
		return
	}
	b.bg.Add(1)
	go func() {
		defer b.bg.Done()
		inst.close(errors.New("recycled after BrowserRecycleAfter jobs"))
		b.mu.Lock()
		b.draining = nil
		close(inst.drained)
		b.mu.Unlock()
	}()
}
