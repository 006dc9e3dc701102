package egress

import (
	"context"
	"net"
	"net/http"
	"time"
)

// HTTPClient returns a client for Go-side requests to user-chosen destinations (webhook
// deliveries) with the same guard as the browser proxy: every new connection resolves the
// host once with the Proxy's Resolver, refuses it if any answer is denied, and dials a
// checked address. Refusals surface as errors matching ErrBlocked, ErrDNSFailure or
// ErrConnectFailed (errors.Is) inside the *url.Error.
//
// Choices worth knowing:
//   - Redirects are NOT followed: CheckRedirect returns http.ErrUseLastResponse, so a 3xx
//     comes back as the response. A caller that wants to follow one must issue a new
//     request through this client, which checks the new destination again.
//   - Proxy environment variables (HTTP_PROXY, …) are ignored; the client dials directly.
//   - Kept-alive connections are reused for the same host:port; they were checked when
//     dialed, so reuse never reaches an unchecked address.
//   - timeout is the whole request's http.Client.Timeout (0 means none: pass a context).
//
// Connections are not recorded in any Session; refusals are logged on the Proxy's logger.
func (p *Proxy) HTTPClient(timeout time.Duration) *http.Client {
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           p.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          32,
		IdleConnTimeout:       p.cfg.IdleTimeout,
		TLSHandshakeTimeout:   p.cfg.DialTimeout,
		ResponseHeaderTimeout: p.cfg.HeaderTimeout,
		ExpectContinueTimeout: time.Second,
	}
	return &http.Client{
		Transport: tr,
		Timeout:   timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// DialContext connects to addr ("host:port") with the guard: the host is resolved once,
// refused if any answer is denied, and a checked address is dialed (TCP; network is
// ignored). It has net.Dialer.DialContext's signature for use in custom transports.
// Errors are *DialError.
func (p *Proxy) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, &DialError{Kind: KindBlocked, Host: addr, Reason: "address has no port", Err: err}
	}
	conn, ev, err := p.dial(ctx, host, port)
	if err != nil {
		if ev.Kind == KindBlocked {
			p.log.InfoContext(ctx, "egress blocked", "host", ev.Host, "port", ev.Port, "ip", ev.IP, "reason", ev.Reason)
		} else {
			p.log.DebugContext(ctx, "egress "+ev.Kind, "host", ev.Host, "port", ev.Port, "ip", ev.IP, "reason", ev.Reason)
		}
		return nil, err
	}
	return conn, nil
}
