package capture

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/proto"
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
	// "dns_failure", "connection_failed", "no_response" or "connection_reset"; ok=false if
	// host was never requested.
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
	egressNoResponse    = "no_response"      // connected, then closed or silent before answering
	egressReset         = "connection_reset" // connected, then reset before answering
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
	case egressReset:
		return newError(CodeConnectionFailed, true, nil, "the connection to %s was reset after it was made, before the server answered", host)
	case egressNoResponse:
		return newError(CodeConnectionFailed, true, nil,
			"%s accepted the connection, then closed it or stayed silent without answering", host)
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
	ln       net.Listener
	url      string
	srv      *http.Server
	requests atomic.Int64 // requests refused
}

var _ EgressSession = (*refuseProxy)(nil)

func newRefuseProxy() (*refuseProxy, error) { return newRefuseProxyAt("127.0.0.1", "") }

// newRefuseProxyAt listens on host (an IP) and advertises advertise (default: the address
// it bound).
func newRefuseProxyAt(host, advertise string) (*refuseProxy, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, fmt.Errorf("listen for the browser-wide proxy: %w", err)
	}
	p := &refuseProxy{ln: ln, url: "http://" + advertised(ln.Addr(), advertise)}
	p.srv = &http.Server{ReadHeaderTimeout: 5 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			p.requests.Add(1)
			w.Header().Set("Connection", "close")
			http.Error(w, "snapq: the browser's own traffic is not allowed", http.StatusForbidden)
		})}
	go p.srv.Serve(ln) //nolint:errcheck // ends with Close
	return p, nil
}

func (p *refuseProxy) URL() string                   { return p.url }
func (p *refuseProxy) Outcome(string) (string, bool) { return "", false }
func (p *refuseProxy) Blocked() int                  { return 0 }
func (p *refuseProxy) Reset()                        {}
func (p *refuseProxy) Close() error                  { return p.srv.Close() }

// errRemoteEgress is why a remote browser is refused with Config.Egress: its contexts
// cannot be pinned to the guard.
var errRemoteEgress = errors.New("the remote browser's contexts cannot be pinned to the egress guard")

// remoteProbeTimeout bounds checkRemoteEgress's wait for WebRTC to gather its candidates.
const remoteProbeTimeout = 3 * time.Second

// checkRemoteEgress proves, before a remote browser connection gets any job, that what
// local launch enforces with flags holds there too. A remote browser was launched by
// someone else: this package cannot give it the WebRTC policy or the browser-wide refusing
// proxy, and CDP has no per-context WebRTC setting. So a throwaway context, proxied like a
// job's (a proxy on cfg.EgressListen, dialed at cfg.EgressAdvertise), tries to reach a
// probe listening on the same address by navigation and by WebRTC (STUN over UDP, TURN
// over TCP); the browser is refused unless the navigation reached the context's proxy
// (the guard is reachable from the browser) and nothing reached the probe directly (the
// browser cannot go around the guard to this worker). Chromium's own background traffic
// outside the job contexts stays the remote operator's to govern.
func checkRemoteEgress(ctx context.Context, rb *rod.Browser, cfg Config) (err error) {
	host, err := probeListen(cfg)
	if err != nil {
		return err
	}
	proxy, err := newRefuseProxyAt(host, cfg.EgressAdvertise)
	if err != nil {
		return fmt.Errorf("start probe proxy: %w", err)
	}
	defer func() { _ = proxy.Close() }()
	probe, err := newLoopbackProbe(host, cfg.EgressAdvertise)
	if err != nil {
		return err
	}
	defer probe.close()

	page, dispose, err := probePage(ctx, rb, proxy)
	if err != nil {
		return err
	}
	defer dispose()
	if err := probeNavigation(page, probe, proxy); err != nil {
		return err
	}
	return probeWebRTC(page, probe)
}

// probePage opens a page in a new browser context proxied through proxy; dispose removes the
// context.
func probePage(ctx context.Context, rb *rod.Browser, proxy *refuseProxy) (page *rod.Page, dispose func(), err error) {
	rb = rb.Context(ctx)
	bc, err := proto.TargetCreateBrowserContext{DisposeOnDetach: true,
		ProxyServer: proxy.URL(), ProxyBypassList: proxyBypassList}.Call(rb)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: create a proxied browser context: %w", errRemoteEgress, err)
	}
	dispose = func() {
		cctx, cancel := context.WithTimeout(context.Background(), cleanTimeout)
		defer cancel()
		_ = proto.TargetDisposeBrowserContext{BrowserContextID: bc.BrowserContextID}.Call(rb.Context(cctx))
	}
	target, err := proto.TargetCreateTarget{URL: "about:blank", BrowserContextID: bc.BrowserContextID}.Call(rb)
	if err != nil {
		dispose()
		return nil, nil, fmt.Errorf("create probe target: %w", err)
	}
	page, err = rb.PageFromTarget(target.TargetID)
	if err != nil {
		dispose()
		return nil, nil, fmt.Errorf("attach to probe target: %w", err)
	}
	return page.Context(ctx), dispose, nil
}

// probeNavigation navigates the probe page to the loopback probe: the proxy answers it with
// its 403 page, which commits; the probe must see nothing, the proxy the request.
func probeNavigation(page *rod.Page, probe *loopbackProbe, proxy *refuseProxy) error {
	if _, err := (proto.PageNavigate{URL: "http://" + probe.addr + "/"}).Call(page); err != nil {
		return fmt.Errorf("probe navigation: %w", err)
	}
	if probe.hits.Load() != 0 {
		return fmt.Errorf("%w: a navigation to %s went around the context's proxy", errRemoteEgress, probe.addr)
	}
	if proxy.requests.Load() == 0 {
		return fmt.Errorf("%w: the browser did not reach the egress proxy at %s (set SNAPQ_EGRESS_PROXY_LISTEN and "+
			"SNAPQ_EGRESS_PROXY_ADVERTISE to an address it can reach)", errRemoteEgress, proxy.URL())
	}
	return nil
}

// probeWebRTC gathers ICE candidates towards the loopback probe: WebRTC must not reach it
// around the proxy.
func probeWebRTC(page *rod.Page, probe *loopbackProbe) error {
	js := fmt.Sprintf(`new Promise(done => {
  if (typeof RTCPeerConnection !== "function") return done("no webrtc");
  const pc = new RTCPeerConnection({iceServers: [{urls: "stun:%[1]s"},
    {urls: "turn:%[1]s?transport=tcp", username: "snapq", credential: "probe"}]});
  pc.createDataChannel("probe");
  const end = why => { try { pc.close(); } catch (e) {} done(why); };
  pc.onicegatheringstatechange = () => { if (pc.iceGatheringState === "complete") end("complete"); };
  setTimeout(() => end("timeout"), %[2]d);
  pc.createOffer().then(o => pc.setLocalDescription(o)).catch(e => end("error " + e));
})`, probe.addr, remoteProbeTimeout.Milliseconds())
	res, err := proto.RuntimeEvaluate{Expression: js, AwaitPromise: true, ReturnByValue: true}.Call(page)
	if err != nil {
		return fmt.Errorf("probe WebRTC: %w", err)
	}
	if res.ExceptionDetails != nil {
		return fmt.Errorf("probe WebRTC: %s", res.ExceptionDetails.Text)
	}
	outcome := res.Result.Value.Str()
	time.Sleep(100 * time.Millisecond) // let a datagram sent at the end arrive
	if n := probe.hits.Load(); n != 0 {
		return fmt.Errorf("%w: WebRTC reached a loopback address directly (%d packets or connections, gathering %s); "+
			"launch it with --force-webrtc-ip-handling-policy=disable_non_proxied_udp", errRemoteEgress, n, outcome)
	}
	return nil
}

// probeListen is the IP the remote egress check's proxy and probe bind: the host of
// cfg.EgressListen (127.0.0.1 by default). An unspecified host needs EgressAdvertise.
func probeListen(cfg Config) (string, error) {
	listen := cfg.EgressListen
	if listen == "" {
		return "127.0.0.1", nil
	}
	host, port, err := net.SplitHostPort(listen)
	if err != nil || port != "0" {
		return "", fmt.Errorf("egress listen address %q: want ip:0", listen)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return "", fmt.Errorf("egress listen address %q: the host must be an IP address", listen)
	}
	if ip.IsUnspecified() && cfg.EgressAdvertise == "" {
		return "", fmt.Errorf("egress listen address %q binds every interface: set the advertised host", listen)
	}
	return host, nil
}

// advertised is addr with its host replaced by advertise, if set.
func advertised(addr net.Addr, advertise string) string {
	if advertise == "" {
		return addr.String()
	}
	_, port, _ := net.SplitHostPort(addr.String())
	return net.JoinHostPort(strings.Trim(advertise, "[]"), port)
}

// loopbackProbe listens on one IP (the worker's 127.0.0.1 by default), TCP and UDP on one
// port, and counts the connections and datagrams that arrive. addr is the address a
// browser dials to reach it.
type loopbackProbe struct {
	addr string
	tcp  net.Listener
	udp  net.PacketConn
	hits atomic.Int64
}

func newLoopbackProbe(host, advertise string) (*loopbackProbe, error) {
	var lastErr error
	for range 10 { // the UDP port may be taken; try another
		tcp, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return nil, fmt.Errorf("listen for the egress probe: %w", err)
		}
		udp, err := net.ListenPacket("udp", tcp.Addr().String())
		if err != nil {
			_ = tcp.Close()
			lastErr = err
			continue
		}
		p := &loopbackProbe{addr: advertised(tcp.Addr(), advertise), tcp: tcp, udp: udp}
		go func() {
			for {
				c, err := tcp.Accept()
				if err != nil {
					return
				}
				p.hits.Add(1)
				_ = c.Close()
			}
		}()
		go func() {
			buf := make([]byte, 1500)
			for {
				if _, _, err := udp.ReadFrom(buf); err != nil {
					return
				}
				p.hits.Add(1)
			}
		}()
		return p, nil
	}
	return nil, fmt.Errorf("listen for the egress probe (udp): %w", lastErr)
}

func (p *loopbackProbe) close() {
	_ = p.tcp.Close()
	_ = p.udp.Close()
}
