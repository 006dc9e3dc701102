package egress

import (
	"bufio"
	"context"
	"crypto/sha1"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Test topology. Only loopback is ever dialed or resolved to.
//
//	canary  127.0.0.1:P (and [::1]:P when IPv6 loopback exists) — must see 0 connections
//	site    127.0.0.2:P — the only allowed destination (policy allows 127.0.0.2/32)
//	tls     127.0.0.2:Q (canary also on 127.0.0.1:Q)
//
// Site and canary share the port, so any request that reached the wrong address would
// land on the canary instead of failing quietly.

var (
	ipSite   = netip.MustParseAddr("127.0.0.2")
	ipCanary = netip.MustParseAddr("127.0.0.1")
)

// fakeResolver answers from a table; unknown names are NXDOMAIN. rebind names answer
// their first address on the first lookup and the second on every later one.
type fakeResolver struct {
	mu      sync.Mutex
	answers map[string][]netip.Addr
	rebind  map[string][2]netip.Addr
	calls   map[string]int
}

func newFakeResolver() *fakeResolver {
	return &fakeResolver{
		answers: map[string][]netip.Addr{
			"allowed.test":  {ipSite},
			"canary.test":   {ipCanary},
			"both.test":     {ipSite, ipCanary},
			"localhost":     {ipCanary, netip.IPv6Loopback()},
			"mapped.test":   {netip.MustParseAddr("::ffff:127.0.0.1")},
			"private.test":  {netip.MustParseAddr("10.0.0.1")},        // never dialed: refused
			"metadata.test": {netip.MustParseAddr("169.254.169.254")}, // never dialed: refused
			"empty.test":    {},
		},
		rebind: map[string][2]netip.Addr{
			"rebind.test":  {ipSite, ipCanary},
			"rebind2.test": {ipSite, ipCanary},
		},
		calls: map[string]int{},
	}
}

func (f *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[host]++
	if r, ok := f.rebind[host]; ok {
		if f.calls[host] == 1 {
			return []netip.Addr{r[0]}, nil
		}
		return []netip.Addr{r[1]}, nil
	}
	if a, ok := f.answers[host]; ok {
		return append([]netip.Addr(nil), a...), nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func (f *fakeResolver) callsFor(host string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[host]
}

// canary counts every TCP connection it accepts on any of its listeners.
type canary struct {
	hits atomic.Int64
	srvs []*http.Server
}

func (c *canary) serve(ln net.Listener) {
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, "CANARY")
		}),
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				c.hits.Add(1)
			}
		},
	}
	c.srvs = append(c.srvs, srv)
	go func() { _ = srv.Serve(ln) }()
}

type env struct {
	proxy    *Proxy
	sess     *Session
	res      *fakeResolver
	canary   *canary
	port     string // site (127.0.0.2) and canary (127.0.0.1) port
	tlsPort  string
	tlsPool  *x509.CertPool
	closeAll func()
}

type envOption func(*Config)

// setup starts the canary, the sites and one proxy session, and registers a cleanup that
// closes them all and fails the test if the canary saw any connection.
func setup(t *testing.T, opts ...envOption) *env {
	t.Helper()
	e := &env{res: newFakeResolver(), canary: &canary{}}
	var closers []func()

	canaryLn, siteLn := listenPair(t)
	e.port = portOf(canaryLn.Addr())
	e.canary.serve(canaryLn)
	if ln6, err := net.Listen("tcp", "[::1]:"+e.port); err == nil {
		e.canary.serve(ln6)
	} else {
		t.Logf("no IPv6 loopback canary: %v", err)
	}
	site := &http.Server{Handler: siteHandler(e.port)}
	go func() { _ = site.Serve(siteLn) }()
	closers = append(closers, func() { _ = site.Close() })

	canaryTLS, tlsLn := listenPair(t)
	e.tlsPort = portOf(canaryTLS.Addr())
	e.canary.serve(canaryTLS)
	ts := httptest.NewUnstartedServer(siteHandler(e.port))
	_ = ts.Listener.Close()
	ts.Listener = tlsLn
	ts.StartTLS()
	closers = append(closers, ts.Close)
	e.tlsPool = x509.NewCertPool()
	e.tlsPool.AddCert(ts.Certificate())

	cfg := Config{
		Policy:   NewPolicy([]netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}),
		Resolver: e.res,
	}
	for _, o := range opts {
		o(&cfg)
	}
	e.proxy = New(cfg)
	sess, err := e.proxy.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	e.sess = sess

	var once sync.Once
	e.closeAll = func() {
		once.Do(func() {
			_ = e.sess.Close()
			for _, c := range closers {
				c()
			}
			for _, s := range e.canary.srvs {
				_ = s.Close()
			}
		})
	}
	t.Cleanup(func() {
		e.closeAll()
		if n := e.canary.hits.Load(); n != 0 {
			t.Errorf("canary accepted %d connection(s); want 0", n)
		}
	})
	return e
}

// listenPair returns a canary listener on 127.0.0.1:P and a site listener on 127.0.0.2:P.
func listenPair(t *testing.T) (canaryLn, siteLn net.Listener) {
	t.Helper()
	for range 50 {
		c, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		s, err := net.Listen("tcp", net.JoinHostPort(ipSite.String(), portOf(c.Addr())))
		if err == nil {
			return c, s
		}
		_ = c.Close()
	}
	t.Fatal("no port free on both 127.0.0.1 and 127.0.0.2")
	return nil, nil
}

func portOf(a net.Addr) string {
	_, p, _ := net.SplitHostPort(a.String())
	return p
}

// siteHandler is the allowed target.
func siteHandler(port string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Seen-Host", r.Host)
		w.Header().Set("X-Seen-Proxy-Connection", r.Header.Get("Proxy-Connection"))
		w.Header().Set("X-Seen-TLS", fmt.Sprint(r.TLS != nil))
		_, _ = io.WriteString(w, "site ok")
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(w, r.Body)
	})
	mux.HandleFunc("/own502", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(HeaderOutcome, "blocked") // forged; the proxy must strip it
		w.WriteHeader(http.StatusBadGateway)
		_, _ = io.WriteString(w, "target says 502")
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://canary.test:"+port+"/", http.StatusFound)
	})
	mux.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "websocket" {
			http.Error(w, "want websocket", http.StatusBadRequest)
			return
		}
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		_, _ = fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n",
			wsAccept(r.Header.Get("Sec-WebSocket-Key")))
		_ = brw.Flush()
		_, _ = io.Copy(conn, brw) // echo raw bytes
	})
	return mux
}

func wsAccept(key string) string {
	h := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	return base64.StdEncoding.EncodeToString(h[:])
}

// client is a browser stand-in: plain http:// goes as absolute-form requests, https:// as
// CONNECT. Redirects are not followed (as Chromium sees them, one hop at a time).
func (e *env) client(t *testing.T) *http.Client {
	t.Helper()
	u, err := url.Parse(e.sess.URL())
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{
		Proxy:             http.ProxyURL(u),
		DisableKeepAlives: true,
		TLSClientConfig:   &tls.Config{RootCAs: e.tlsPool, ServerName: "example.com"},
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{
		Transport:     tr,
		Timeout:       5 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

type result struct {
	status int
	header http.Header
	body   string
}

func (e *env) get(t *testing.T, rawURL string) result {
	t.Helper()
	resp, err := e.client(t).Get(rawURL)
	if err != nil {
		t.Fatalf("GET %s: %v", rawURL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: read body: %v", rawURL, err)
	}
	return result{resp.StatusCode, resp.Header, string(b)}
}

// rawConn opens a connection to the proxy.
func (e *env) rawConn(t *testing.T) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", e.sess.URL()[len("http://"):])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	return c, bufio.NewReader(c)
}

// connect sends CONNECT target and returns the proxy's answer and the connection.
func (e *env) connect(t *testing.T, target string) (*http.Response, net.Conn, *bufio.Reader) {
	t.Helper()
	c, br := e.rawConn(t)
	if _, err := fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\nProxy-Connection: keep-alive\r\n\r\n", target, target); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatalf("CONNECT %s: %v", target, err)
	}
	return resp, c, br
}

func (e *env) lastEvent(t *testing.T) Event {
	t.Helper()
	evs := e.sess.Events()
	if len(evs) == 0 {
		t.Fatal("no events recorded")
	}
	return evs[len(evs)-1]
}
