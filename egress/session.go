package egress

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"
)

// Event is the outcome of one proxied request (one CONNECT or one plain HTTP request).
type Event struct {
	Host   string     // lower-cased, without IPv6 brackets
	Port   string     //
	Kind   string     // KindAllowed, KindBlocked, KindDNSFailure, KindConnectFailed, KindNoResponse or KindConnectionReset
	Reason string     // "connected", "127.0.0.1 is loopback", "lookup: …", "connection refused"
	IP     netip.Addr // dialed, refused or last tried address; invalid for DNS failures
	At     time.Time
}

// Stats counts outcomes since the session started or was last Reset. Unlike Events they
// are never dropped. ConnectFailures counts KindConnectFailed, KindNoResponse and
// KindConnectionReset.
type Stats struct {
	Allowed, Blocked, DNSFailures, ConnectFailures int
}

// Session is one proxy listener (on 127.0.0.1 unless Config.Listen says otherwise)
// serving one browser context, so every request it sees belongs to one capture job. It
// records each request's outcome so the capture side can tell why a navigation failed.
// Safe for concurrent use.
type Session struct {
	p   *Proxy
	ln  net.Listener
	srv *http.Server
	url string
	log *slog.Logger

	ctx    context.Context // parent of every request context; canceled by Close
	cancel context.CancelFunc

	mu        sync.Mutex
	closed    bool
	conns     map[net.Conn]struct{} // browser-side and target-side connections
	handlers  sync.WaitGroup        // running handlers (and their tunnel copies)
	serveDone chan struct{}

	rec recorder
}

// NewSession starts a proxy listener on Config.Listen (127.0.0.1 by default) with a
// kernel-chosen port. Pass
// Session.URL() to Chromium as the proxy of one browser context and Close the session
// with the context.
func (p *Proxy) NewSession() (*Session, error) {
	ln, err := net.Listen("tcp", p.cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("egress: listen on %s: %w", p.cfg.Listen, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Session{
		p:         p,
		ln:        ln,
		url:       ProxyURL(ln.Addr(), p.cfg.Advertise),
		log:       p.log.With("egress_proxy", ln.Addr().String()),
		ctx:       ctx,
		cancel:    cancel,
		conns:     make(map[net.Conn]struct{}),
		serveDone: make(chan struct{}),
		rec:       recorder{max: p.cfg.MaxEvents},
	}
	s.srv = &http.Server{
		Handler:           http.HandlerFunc(s.serve),
		ReadHeaderTimeout: p.cfg.HeaderTimeout,
		IdleTimeout:       p.cfg.IdleTimeout,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ConnState:         s.connState,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	go func() {
		defer close(s.serveDone)
		_ = s.srv.Serve(ln) // returns ErrServerClosed on Close
	}()
	return s, nil
}

// URL is the proxy address for Chromium, "http://127.0.0.1:PORT" (the advertised host
// with Config.Advertise).
func (s *Session) URL() string { return s.url }

// Close stops the listener, closes every live connection (kept-alive requests, tunnels,
// WebSockets, in-flight dials are canceled) and waits for the session's handlers to
// return. It is safe to call more than once.
func (s *Session) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()

	s.cancel()
	err := s.srv.Close() // listener and non-hijacked connections
	s.mu.Lock()
	for c := range s.conns {
		_ = c.Close()
	}
	clear(s.conns)
	s.mu.Unlock()
	s.handlers.Wait()
	<-s.serveDone
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// Events returns the recorded outcomes, oldest first (at most Config.MaxEvents).
func (s *Session) Events() []Event { return s.rec.events() }

// Lookup returns the most recent event for host (case-insensitive; IPv6 with or without
// brackets), e.g. the top-level navigation's host after Chromium reported a failure.
func (s *Session) Lookup(host string) (Event, bool) { return s.rec.lookup(normalizeHost(host)) }

// Outcome is the kind of the latest event for host ("allowed", "blocked", "dns_failure",
// "connection_failed"); ok=false when host was never requested in this session.
func (s *Session) Outcome(host string) (kind string, ok bool) {
	ev, ok := s.Lookup(host)
	return ev.Kind, ok
}

// Blocked is the number of requests refused since the last Reset.
func (s *Session) Blocked() int { return s.Stats().Blocked }

// Stats returns outcome counters.
func (s *Session) Stats() Stats { return s.rec.stats() }

// Reset clears events and counters, for reuse of the session by the next job. It does not
// close live connections; close the previous job's browser context first.
func (s *Session) Reset() { s.rec.reset() }

// record stores ev and logs it.
func (s *Session) record(ev Event) {
	s.rec.add(ev)
	level := slog.LevelDebug
	if ev.Kind == KindBlocked {
		level = slog.LevelInfo
	}
	s.log.Log(s.ctx, level, "egress "+ev.Kind, "host", ev.Host, "port", ev.Port, "ip", ev.IP, "reason", ev.Reason)
}

// enter registers a running handler; false once the session is closed.
func (s *Session) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.handlers.Add(1)
	return true
}

// track registers a connection to close on Close; false (and the connection closed) if
// the session is already closed.
func (s *Session) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = c.Close()
		return false
	}
	s.conns[c] = struct{}{}
	return true
}

// release closes c and forgets it.
func (s *Session) release(c net.Conn) {
	_ = c.Close()
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// connState tracks browser-side connections. Hijacked ones stay tracked until the handler
// that took them releases them.
func (s *Session) connState(c net.Conn, state http.ConnState) {
	switch state {
	case http.StateNew:
		s.track(c)
	case http.StateClosed:
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
	}
}

// recorder is a bounded ring of events plus counters.
type recorder struct {
	mu    sync.Mutex
	max   int
	buf   []Event // ring once len(buf) == max
	next  int     // index of the oldest event once full
	count Stats
}

func (r *recorder) add(ev Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch ev.Kind {
	case KindAllowed:
		r.count.Allowed++
	case KindBlocked:
		r.count.Blocked++
	case KindDNSFailure:
		r.count.DNSFailures++
	case KindConnectFailed, KindNoResponse, KindConnectionReset:
		r.count.ConnectFailures++
	}
	if len(r.buf) < r.max {
		r.buf = append(r.buf, ev)
		return
	}
	r.buf[r.next] = ev
	r.next = (r.next + 1) % r.max
}

func (r *recorder) events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Event, 0, len(r.buf))
	out = append(out, r.buf[r.next:]...)
	return append(out, r.buf[:r.next]...)
}

func (r *recorder) lookup(host string) (Event, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(r.buf)
	for i := 1; i <= n; i++ {
		ev := r.buf[(r.next-i+n)%n]
		if ev.Host == host {
			return ev, true
		}
	}
	return Event{}, false
}

func (r *recorder) stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.count
}

func (r *recorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf, r.next, r.count = nil, 0, Stats{}
}
