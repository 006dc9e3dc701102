package capture

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Egress starts a proxy session for one browser context, so that everything a job's page
// loads — navigations, redirects, sub-resources, workers, WebSockets — goes through a guard
// that resolves each host once, refuses denied addresses and dials the address it checked.
// *egress.Session implements EgressSession (wired in cmd/worker); capture needs only this.
type Egress func() (EgressSession, error)

// EgressSession is one browser context's proxy.
type EgressSession interface {
	// URL is the proxy's address for Chromium, e.g. "http://127.0.0.1:41234".
	URL() string
	// Outcome is the latest outcome for host in this session: "allowed", "blocked",
	// "dns_failure" or "connection_failed"; ok=false if host was never requested.
	Outcome(host string) (kind string, ok bool)
	// Blocked is the number of requests refused since the last Reset.
	Blocked() int
	// Reset forgets outcomes and counters before the next job.
	Reset()
	Close() error
}

// Outcomes an EgressSession reports, and the header its generated responses carry.
const (
	egressBlocked       = "blocked"
	egressDNSFailure    = "dns_failure"
	egressConnectFailed = "connection_failed"
	egressHeader        = "x-snapq-egress"
)

// proxyBypassList makes Chromium send loopback and link-local destinations through the proxy
// too: by default it bypasses proxies for localhost, 127/8, [::1] and 169.254/16.
const proxyBypassList = "<-loopback>"

// egressFlags are added to Chromium's command line when an Egress is configured. WebRTC may
// only use UDP through the proxy, which offers none, so it cannot reach anything.
func egressFlags() map[string]string {
	return map[string]string{
		"proxy-bypass-list":               proxyBypassList,
		"webrtc-ip-handling-policy":       "disable_non_proxied_udp",
		"force-webrtc-ip-handling-policy": "disable_non_proxied_udp",
	}
}

// egressError turns a proxy outcome for the top-level document into a job failure.
func egressError(kind, rawURL string) *Error {
	host := rawURL
	if u, err := url.Parse(rawURL); err == nil && u.Host != "" {
		host = u.Host
	}
	switch kind {
	case egressBlocked:
		return newError(CodeBlockedAddress, false, nil,
			"%s resolves to an address the egress policy denies (private, loopback, link-local or reserved); nothing was captured", host)
	case egressDNSFailure:
		return newError(CodeDNSFailure, false, nil, "the host name %s could not be resolved", hostOnly(host))
	case egressConnectFailed:
		return newError(CodeConnectionFailed, true, nil, "could not connect to %s", host)
	}
	return nil
}

func hostOnly(hostport string) string {
	if i := strings.LastIndexByte(hostport, ':'); i > 0 && !strings.HasSuffix(hostport, "]") {
		return hostport[:i]
	}
	return hostport
}

// refuseProxy is the browser-wide proxy: no job uses the default browser
// context (each tab has its own, with its own guarded proxy), so everything
// that reaches this one is Chromium's own background traffic (update checks,
// sign-in, autofill). It answers 403 at once, without resolving or dialing
// anything, so no hostname of Chromium's leaves the machine even as a DNS query.
type refuseProxy struct {
	ln  net.Listener
	srv *http.Server
}

var _ EgressSession = (*refuseProxy)(nil)

func newRefuseProxy() (*refuseProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen for the browser-wide proxy: %w", err)
	}
	p := &refuseProxy{ln: ln, srv: &http.Server{ReadHeaderTimeout: 5 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Connection", "close")
			http.Error(w, "snapq: the browser's own traffic is not allowed", http.StatusForbidden)
		})}}
	go p.srv.Serve(ln) //nolint:errcheck // ends with Close
	return p, nil
}

func (p *refuseProxy) URL() string                   { return "http://" + p.ln.Addr().String() }
func (p *refuseProxy) Outcome(string) (string, bool) { return "", false }
func (p *refuseProxy) Blocked() int                  { return 0 }
func (p *refuseProxy) Reset()                        {}
func (p *refuseProxy) Close() error                  { return p.srv.Close() }
