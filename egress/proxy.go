package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Resolver looks up the addresses of a host name. *net.Resolver satisfies it; tests inject
// fakes. The proxy calls it at most once per request and dials only what it returned.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

var _ Resolver = (*net.Resolver)(nil)

// Defaults for Config.
const (
	DefaultDialTimeout   = 10 * time.Second
	DefaultHeaderTimeout = 30 * time.Second
	DefaultIdleTimeout   = 90 * time.Second
	DefaultMaxEvents     = 1000
	// DefaultListen is where sessions listen: the worker's loopback, a kernel-chosen port.
	DefaultListen = "127.0.0.1:0"
)

// Config configures a Proxy. Zero values take the documented defaults.
type Config struct {
	// Policy decides which addresses may be dialed. Default: NewPolicy(nil), every
	// non-public range refused.
	Policy *Policy
	// Resolver resolves host names, once per request. Default: net.DefaultResolver.
	Resolver Resolver
	// DialTimeout bounds the name lookup, and separately each TCP connect attempt to one
	// checked address (default 10s).
	DialTimeout time.Duration
	// HeaderTimeout bounds reading a request head from the browser and waiting for a
	// target's response head on plain HTTP (default 30s). Bodies and tunnels have no
	// deadline of their own: they end when either side closes or the session is closed.
	HeaderTimeout time.Duration
	// IdleTimeout closes a kept-alive browser→proxy connection idle this long (default 90s).
	IdleTimeout time.Duration
	// MaxEvents is how many outcome events a Session keeps, oldest dropped first
	// (default 1,000). Stats count every request regardless.
	MaxEvents int
	// Listen is the address each Session's listener binds (SNAPQ_EGRESS_PROXY_LISTEN,
	// default 127.0.0.1:0). The port must be 0: every session gets its own port. A browser
	// in another network namespace (SNAPQ_CHROME_URL pointing at another pod) needs an
	// address it can reach, e.g. 0.0.0.0:0 or the pod's own IP.
	Listen string
	// Advertise is the host put in Session.URL for the browser to dial
	// (SNAPQ_EGRESS_PROXY_ADVERTISE). Default: the host the listener bound (127.0.0.1);
	// required when Listen's host is unspecified (0.0.0.0, [::]).
	Advertise string
	// Logger receives refusals (Info) and other outcomes (Debug). Default: discard.
	Logger *slog.Logger
}

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		DialTimeout:   DefaultDialTimeout,
		HeaderTimeout: DefaultHeaderTimeout,
		IdleTimeout:   DefaultIdleTimeout,
		MaxEvents:     DefaultMaxEvents,
	}
}

// Validate reports settings New would have to ignore.
func (c Config) Validate() error {
	var errs []error
	if c.DialTimeout < 0 {
		errs = append(errs, fmt.Errorf("egress: DialTimeout %s is negative", c.DialTimeout))
	}
	if c.HeaderTimeout < 0 {
		errs = append(errs, fmt.Errorf("egress: HeaderTimeout %s is negative", c.HeaderTimeout))
	}
	if c.IdleTimeout < 0 {
		errs = append(errs, fmt.Errorf("egress: IdleTimeout %s is negative", c.IdleTimeout))
	}
	if c.MaxEvents < 0 {
		errs = append(errs, fmt.Errorf("egress: MaxEvents %d is negative", c.MaxEvents))
	}
	if err := validateListen(c.Listen, c.Advertise); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// withDefaults fills zero (and invalid negative) values with the defaults.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Policy == nil {
		c.Policy = NewPolicy(nil)
	}
	if c.Resolver == nil {
		c.Resolver = net.DefaultResolver
	}
	if c.DialTimeout <= 0 {
		c.DialTimeout = d.DialTimeout
	}
	if c.HeaderTimeout <= 0 {
		c.HeaderTimeout = d.HeaderTimeout
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = d.IdleTimeout
	}
	if c.MaxEvents <= 0 {
		c.MaxEvents = d.MaxEvents
	}
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return c
}

// Proxy is the egress guard: it resolves each destination once, refuses it if any answer
// is denied by the Policy, and dials exactly one of the checked addresses. It serves
// browsers through Sessions and Go code through HTTPClient. Safe for concurrent use.
type Proxy struct {
	cfg Config
	log *slog.Logger
}

// New returns a Proxy. Call cfg.Validate first to reject negative settings; New replaces
// them with defaults.
func New(cfg Config) *Proxy {
	cfg = cfg.withDefaults()
	return &Proxy{cfg: cfg, log: cfg.Logger}
}

// dial resolves host (an IP literal or a name) once, checks every address against the
// policy and connects to the first checked address that accepts. The returned Event
// describes the outcome in every case; err is a *DialError when conn is nil.
func (p *Proxy) dial(ctx context.Context, host, port string) (net.Conn, Event, error) {
	host = normalizeHost(host)
	ev := Event{Host: host, Port: port, At: time.Now()}
	fail := func(kind string, ip netip.Addr, reason string, cause error) (net.Conn, Event, error) {
		ev.Kind, ev.IP, ev.Reason = kind, ip, reason
		return nil, ev, &DialError{Kind: kind, Host: host, Port: port, IP: ip, Reason: reason, Err: cause}
	}

	portNum, err := parsePort(port)
	if err != nil {
		return fail(KindBlocked, netip.Addr{}, err.Error(), nil)
	}
	addrs, de := p.resolve(ctx, host)
	if de != nil {
		return fail(de.Kind, de.IP, de.Reason, de.Err)
	}

	var lastErr error
	var lastIP netip.Addr
	for _, ip := range addrs {
		d := net.Dialer{Timeout: p.cfg.DialTimeout, Control: p.control(ip)}
		conn, err := d.DialContext(ctx, "tcp", netip.AddrPortFrom(ip, portNum).String())
		if err == nil {
			ev.Kind, ev.IP, ev.Reason = KindAllowed, ip, "connected"
			return conn, ev, nil
		}
		var blocked *DialError
		if errors.As(err, &blocked) {
			// The Control re-check refused the socket: the pre-check and the dial disagree,
			// which must never happen. Fail closed, do not try other addresses.
			return fail(KindBlocked, ip, blocked.Reason, err)
		}
		lastErr, lastIP = err, ip
		if ctx.Err() != nil {
			break
		}
	}
	return fail(KindConnectFailed, lastIP, connectReason(lastErr), lastErr)
}

// resolve returns the checked addresses for host, or a *DialError (blocked or DNS failure).
// A name is looked up exactly once; if any answer is denied the whole name is refused,
// because a name mapping to both public and private addresses is hostile.
func (p *Proxy) resolve(ctx context.Context, host string) ([]netip.Addr, *DialError) {
	if host == "" {
		return nil, &DialError{Kind: KindBlocked, Reason: "empty host"}
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		ip = ip.Unmap().WithZone("")
		if ok, reason := p.cfg.Policy.Allowed(ip); !ok {
			return nil, &DialError{Kind: KindBlocked, IP: ip, Reason: ip.String() + " is " + reason}
		}
		return []netip.Addr{ip}, nil
	}
	// Anything else is a name, including numeric-looking hosts netip rejects (2130706433,
	// 0x7f.1, 0177.0.0.1): whatever the resolver makes of them is checked below, so an odd
	// spelling can fail (DNS error) or be refused, never bypass the policy.
	if len(host) > 253 {
		return nil, &DialError{Kind: KindDNSFailure, Reason: "host name longer than 253 characters"}
	}
	lctx, cancel := context.WithTimeout(ctx, p.cfg.DialTimeout)
	defer cancel()
	answers, err := p.cfg.Resolver.LookupNetIP(lctx, "ip", host)
	if err != nil {
		return nil, &DialError{Kind: KindDNSFailure, Reason: "lookup: " + err.Error(), Err: err}
	}
	addrs := make([]netip.Addr, 0, len(answers))
	seen := make(map[netip.Addr]bool, len(answers))
	for _, a := range answers {
		a = a.Unmap().WithZone("")
		if ok, reason := p.cfg.Policy.Allowed(a); !ok {
			return nil, &DialError{Kind: KindBlocked, IP: a,
				Reason: fmt.Sprintf("%s resolves to %s, which is %s", host, a, reason)}
		}
		if !seen[a] {
			seen[a] = true
			addrs = append(addrs, a)
		}
	}
	if len(addrs) == 0 {
		return nil, &DialError{Kind: KindDNSFailure, Reason: "lookup: no addresses for " + host}
	}
	return addrs, nil
}

// control returns a net.Dialer.Control hook that re-checks, on the socket about to
// connect, that the address is the one that was checked and is still allowed. It is a
// second line of defence; resolve has already refused anything it would refuse.
func (p *Proxy) control(want netip.Addr) func(network, address string, _ syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return &DialError{Kind: KindBlocked, Reason: "dial address " + address + " does not parse", Err: err}
		}
		got := ap.Addr().Unmap().WithZone("")
		if got != want {
			return &DialError{Kind: KindBlocked, IP: got,
				Reason: fmt.Sprintf("dialing %s, but %s was checked", got, want)}
		}
		if ok, reason := p.cfg.Policy.Allowed(got); !ok {
			return &DialError{Kind: KindBlocked, IP: got, Reason: got.String() + " is " + reason}
		}
		return nil
	}
}

// connectReason turns a dial error into a short reason.
func connectReason(err error) string {
	switch {
	case err == nil:
		return "no address to dial"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "unreachable"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	return err.Error()
}

// normalizeHost lower-cases host and strips IPv6 brackets, the form events are keyed by.
func normalizeHost(host string) string {
	host = strings.ToLower(host)
	if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	}
	return host
}

// parsePort accepts a decimal port 1–65535.
func parsePort(port string) (uint16, error) {
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("invalid port %q", port)
	}
	return uint16(n), nil
}
