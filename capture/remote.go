package capture

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Remote browser pools (Config.RemoteURL).
//
// With RemoteURL the Browser launches nothing: each of its Config.Tabs capture slots is a
// member with its own CDP connection to one endpoint, slot i to endpoint i mod n, and one
// tab (in its own browser context) on that connection. A connection per slot, not one per
// endpoint shared by its slots, because a pool behind one URL (a load balancer, a
// Browserless-style service) may hand each connection a different browser: a slot's
// connection is then also its browser, its egress check (checkRemoteEgress runs on every
// connection, before it gets a job) and its failure domain. When the connection drops,
// the job on it fails with CodeBrowserCrashed (retryable) and the slot reconnects for its
// next job; while the endpoint refuses or answers 429/502/503/504, jobs fail with
// CodeBrowserUnavailable, which wraps ErrUnavailable, before anything of theirs ran (the
// worker retries those without counting a failure). A slot prefers a member whose
// endpoint is not cooling down after such an answer.

// remoteHTTP asks endpoints for their WebSocket URL. Its timeout keeps a stuck pool from
// holding a slot: the job's context bounds it too.
var remoteHTTP = &http.Client{Timeout: 10 * time.Second}

// Cool-down of an endpoint after it was unavailable: doubled per failure in a row.
const (
	minCooldown = time.Second
	maxCooldown = 30 * time.Second
)

// statusError is a /json/version answer other than 200.
type statusError struct {
	url, status string
	code        int
}

func (e *statusError) Error() string { return "GET " + e.url + ": " + e.status }

// markUnavailable wraps ErrUnavailable around errors that say the endpoint is down or
// overloaded rather than wrong: a transport failure (refused, reset, timeout) or 429,
// 502, 503, 504. Anything else (404, a body that is not /json/version's) is returned
// as it is.
func markUnavailable(err error) error {
	var se *statusError
	if errors.As(err, &se) {
		switch se.code {
		case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		return err
	}
	var ue *url.Error
	var ne net.Error
	if errors.As(err, &ue) || errors.As(err, &ne) {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}

// unavailableReason is the last part of an ErrUnavailable chain, for messages.
func unavailableReason(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, ErrUnavailable.Error()+": "); i >= 0 {
		msg = msg[i+len(ErrUnavailable.Error())+2:]
	}
	return msg
}

// remoteEndpoints splits Config.RemoteURL: comma-separated, blanks ignored.
func remoteEndpoints(raw string) []string {
	var eps []string
	for _, ep := range strings.Split(raw, ",") {
		if ep = strings.TrimSpace(ep); ep != "" {
			eps = append(eps, ep)
		}
	}
	return eps
}

// validateEndpoint checks one RemoteURL entry's form.
func validateEndpoint(ep string) error {
	u, err := url.Parse(ep)
	if err != nil {
		return fmt.Errorf("remote browser URL %q: %w", ep, err)
	}
	switch u.Scheme {
	case "ws", "wss", "http", "https":
	default:
		return fmt.Errorf("remote browser URL %q: scheme %q, want ws, wss, http or https", ep, u.Scheme)
	}
	if u.Host == "" {
		return fmt.Errorf("remote browser URL %q: no host", ep)
	}
	return nil
}

// remotePool is the Browser of a RemoteURL configuration: one single-slot member per slot.
type remotePool struct {
	log   *slog.Logger
	slots chan struct{} // one token per free member

	mu      sync.Mutex
	members []*member
}

type member struct {
	b        *Browser // Tabs: 1, RemoteURL: one endpoint
	endpoint string
	busy     bool
	down     time.Time // cooling down until
	failures int       // unavailable answers in a row
}

// newRemotePool connects every slot. Slots whose endpoint is unavailable connect later,
// for a job; at least one must connect now, so the egress check has run on a browser of
// the pool before the worker takes jobs. Any other failure (an endpoint whose browser
// fails the egress check, a malformed answer) fails the start.
func newRemotePool(ctx context.Context, cfg Config) (*remotePool, error) {
	eps := remoteEndpoints(cfg.RemoteURL)
	p := &remotePool{log: cfg.Logger, slots: make(chan struct{}, cfg.Tabs)}
	errs := make([]error, cfg.Tabs)
	var wg sync.WaitGroup
	for i := range cfg.Tabs {
		mcfg := cfg
		mcfg.RemoteURL = eps[i%len(eps)]
		mcfg.Tabs = 1
		mcfg.Logger = cfg.Logger.With("slot", i, "endpoint", mcfg.RemoteURL)
		m := &member{endpoint: mcfg.RemoteURL, b: unstartedBrowser(mcfg)}
		p.members = append(p.members, m)
		p.slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			inst, err := startInstance(ctx, mcfg, false)
			if err != nil {
				errs[i] = fmt.Errorf("slot %d (%s): %w", i, mcfg.RemoteURL, err)
				return
			}
			m.b.inst = inst
		}()
	}
	wg.Wait()
	connected, fatal := 0, []error(nil)
	for i, err := range errs {
		switch {
		case err == nil:
			connected++
		case errors.Is(err, ErrUnavailable):
			p.log.Warn("remote browser unavailable; the slot connects for its first job", "slot", i, "err", err)
		default:
			fatal = append(fatal, err)
		}
	}
	if len(fatal) == 0 && connected == 0 {
		fatal = errs
	}
	if len(fatal) > 0 {
		p.close()
		return nil, errors.Join(fatal...)
	}
	p.log.Info("remote browser pool connected", "endpoints", len(eps), "slots", cfg.Tabs, "connected", connected)
	return p, nil
}

// take returns a free member, preferring one whose endpoint is not cooling down (with
// upOnly, only such a one, or nil). The caller holds a slot token, so one is free.
func (p *remotePool) take(skip *member, upOnly bool) *member {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	var pick *member
	for _, m := range p.members {
		if m.busy || m == skip || (upOnly && m.down.After(now)) {
			continue
		}
		if pick == nil || (pick.down.After(now) && !m.down.After(now)) {
			pick = m
		}
	}
	if pick != nil {
		pick.busy = true
	}
	return pick
}

// put frees m after a job; an unavailable answer starts or lengthens its cool-down.
func (p *remotePool) put(m *member, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	m.busy = false
	if errors.Is(err, ErrUnavailable) {
		m.failures++
		m.down = time.Now().Add(min(minCooldown<<min(m.failures-1, 5), maxCooldown))
	} else if err == nil {
		m.failures, m.down = 0, time.Time{}
	}
}

// capture runs req on a free member. A member that finds its endpoint unavailable hands
// the job once to another idle member whose endpoint is not cooling down, if there is one.
func (p *remotePool) capture(ctx context.Context, req Request) (*Result, error) {
	select {
	case <-p.slots:
	case <-ctx.Done():
		return nil, classify(ctx, ctx, phaseSlot, ctx.Err())
	}
	defer func() { p.slots <- struct{}{} }()
	m := p.take(nil, false)
	res, err := m.b.Capture(ctx, req)
	p.put(m, err)
	if !errors.Is(err, ErrUnavailable) {
		return res, err
	}
	select {
	case <-p.slots:
	default:
		return res, err
	}
	defer func() { p.slots <- struct{}{} }()
	o := p.take(m, true)
	if o == nil {
		return res, err
	}
	res, err = o.b.Capture(ctx, req)
	p.put(o, err)
	return res, err
}

// ping succeeds when any member's browser answers.
func (p *remotePool) ping(ctx context.Context) error {
	var errs []error
	for _, m := range p.members {
		if err := m.b.Ping(ctx); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", m.endpoint, err))
			continue
		}
		return nil
	}
	return errors.Join(errs...)
}

func (p *remotePool) close() {
	var wg sync.WaitGroup
	for _, m := range p.members {
		wg.Add(1)
		go func() { defer wg.Done(); _ = m.b.Close() }()
	}
	wg.Wait()
}
