package egress

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestProxyHTTPAllowed(t *testing.T) {
	t.Parallel()
	e := setup(t)
	tests := []struct {
		name, url, wantHost string
	}{
		{"name", "http://allowed.test:" + e.port + "/", "allowed.test:" + e.port},
		{"name upper case", "http://ALLOWED.test:" + e.port + "/", "ALLOWED.test:" + e.port},
		{"ip literal", "http://127.0.0.2:" + e.port + "/", "127.0.0.2:" + e.port},
		{"mapped ip literal", "http://[::ffff:127.0.0.2]:" + e.port + "/", "[::ffff:127.0.0.2]:" + e.port},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := e.get(t, tt.url)
			if got.status != http.StatusOK || got.body != "site ok" {
				t.Fatalf("status %d body %q; want 200 \"site ok\"", got.status, got.body)
			}
			if h := got.header.Get("X-Seen-Host"); h != tt.wantHost {
				t.Errorf("target saw Host %q, want %q", h, tt.wantHost)
			}
			if h := got.header.Get("X-Seen-Proxy-Connection"); h != "" {
				t.Errorf("hop-by-hop Proxy-Connection forwarded: %q", h)
			}
			if h := got.header.Get(HeaderOutcome); h != "" {
				t.Errorf("%s = %q on a target response", HeaderOutcome, h)
			}
			ev := e.lastEvent(t)
			if ev.Kind != KindAllowed || ev.IP != ipSite || ev.Port != e.port {
				t.Errorf("event = %+v; want allowed to %s:%s", ev, ipSite, e.port)
			}
		})
	}

	t.Run("request bodies", func(t *testing.T) {
		c := e.client(t)
		for _, tt := range []struct {
			name string
			body io.Reader
			want string
		}{
			{"content-length", strings.NewReader("fixed length"), "fixed length"},
			{"chunked", io.MultiReader(strings.NewReader("chunked body")), "chunked body"},
		} {
			req, _ := http.NewRequest(http.MethodPost, "http://allowed.test:"+e.port+"/echo", tt.body)
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || string(b) != tt.want {
				t.Errorf("POST %s: %d %q, want 200 %q", tt.name, resp.StatusCode, b, tt.want)
			}
		}
	})
}

func TestProxyHTTPBlocked(t *testing.T) {
	t.Parallel()
	e := setup(t)
	p := e.port
	tests := []struct {
		name, url, reason string
	}{
		{"loopback literal", "http://127.0.0.1:" + p + "/", "loopback"},
		{"other loopback not allow-listed", "http://127.0.0.3:" + p + "/", "loopback"},
		{"ipv6 loopback", "http://[::1]:" + p + "/", "loopback"},
		{"mapped loopback", "http://[::ffff:127.0.0.1]:" + p + "/", "loopback"},
		{"mapped loopback hex", "http://[::ffff:7f00:1]:" + p + "/", "loopback"},
		{"ipv4-compatible loopback", "http://[::127.0.0.1]:" + p + "/", "IPv4-compatible"},
		{"nat64 loopback", "http://[64:ff9b::7f00:1]:" + p + "/", "NAT64"},
		{"6to4 loopback", "http://[2002:7f00:1::]:" + p + "/", "6to4"},
		{"unspecified", "http://0.0.0.0:" + p + "/", "unspecified"},
		{"unspecified v6", "http://[::]:" + p + "/", "unspecified"},
		{"metadata literal", "http://169.254.169.254/latest/meta-data/", "link-local"},
		{"ula literal", "http://[fd00::1]:" + p + "/", "unique-local"},
		{"cgnat literal", "http://100.64.0.1/", "CGNAT"},
		{"name to loopback", "http://canary.test:" + p + "/", "loopback"},
		{"name upper case", "http://CANARY.TEST:" + p + "/", "loopback"},
		{"name to mapped loopback", "http://mapped.test:" + p + "/", "loopback"},
		{"name with public and private answers", "http://both.test:" + p + "/", "loopback"},
		{"localhost", "http://localhost:" + p + "/", "loopback"},
		{"name to private", "http://private.test/", "private (RFC 1918)"},
		{"name to metadata", "http://metadata.test/", "link-local"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := e.get(t, tt.url)
			if got.status != http.StatusForbidden || got.header.Get(HeaderOutcome) != KindBlocked {
				t.Fatalf("status %d %s=%q body %q; want 403 blocked", got.status, HeaderOutcome, got.header.Get(HeaderOutcome), got.body)
			}
			if got.body != "snapq egress: blocked\n" {
				t.Errorf("body %q leaks more than the outcome", got.body)
			}
			ev := e.lastEvent(t)
			if ev.Kind != KindBlocked || !strings.Contains(ev.Reason, tt.reason) {
				t.Errorf("event = %+v; want blocked, reason containing %q", ev, tt.reason)
			}
		})
	}
	if n := e.canary.hits.Load(); n != 0 {
		t.Fatalf("canary hit %d times", n)
	}
}

func TestProxyDNSFailure(t *testing.T) {
	t.Parallel()
	e := setup(t)
	p := e.port
	// Odd IPv4 spellings netip rejects are names; the fake resolver fails them, as a real
	// one should. Whatever a resolver made of them would be checked like any answer.
	for _, host := range []string{"nx.test", "empty.test", "2130706433", "0x7f.1", "0177.0.0.1", "127.1"} {
		t.Run(host, func(t *testing.T) {
			got := e.get(t, "http://"+host+":"+p+"/")
			if got.status != http.StatusBadGateway || got.header.Get(HeaderOutcome) != KindDNSFailure {
				t.Fatalf("status %d %s=%q; want 502 dns_failure", got.status, HeaderOutcome, got.header.Get(HeaderOutcome))
			}
			if ev, ok := e.sess.Lookup(host); !ok || ev.Kind != KindDNSFailure || ev.IP.IsValid() {
				t.Errorf("Lookup(%q) = %+v, %v", host, ev, ok)
			}
			if n := e.res.callsFor(host); n != 1 {
				t.Errorf("resolver called %d times for %q, want 1", n, host)
			}
		})
	}
}

func TestProxyConnectionFailed(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := portOf(ln.Addr())
	_ = ln.Close()

	got := e.get(t, "http://allowed.test:"+closed+"/")
	if got.status != http.StatusBadGateway || got.header.Get(HeaderOutcome) != KindConnectFailed {
		t.Fatalf("http: status %d %s=%q; want 502 connection_failed", got.status, HeaderOutcome, got.header.Get(HeaderOutcome))
	}
	ev := e.lastEvent(t)
	if ev.Kind != KindConnectFailed || ev.IP != ipSite || ev.Reason != "connection refused" {
		t.Errorf("event = %+v", ev)
	}

	resp, _, _ := e.connect(t, "allowed.test:"+closed)
	if resp.StatusCode != http.StatusBadGateway || resp.Header.Get(HeaderOutcome) != KindConnectFailed {
		t.Errorf("CONNECT: status %d %s=%q; want 502 connection_failed", resp.StatusCode, HeaderOutcome, resp.Header.Get(HeaderOutcome))
	}
}

// A target that accepts the connection, reads the request and resets it before answering
// is reported as a reset (issue 26.8: it was "connection_failed", which capture words as
// "could not connect"), and one that closes it cleanly as no response.
func TestProxyTargetResetsAfterConnect(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		reset bool
		want  string
	}{{"reset", true, KindConnectionReset}, {"close", false, KindNoResponse}} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			ln, err := net.Listen("tcp", "127.0.0.2:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					_, _ = http.ReadRequest(bufio.NewReader(c))
					if tt.reset {
						_ = c.(*net.TCPConn).SetLinger(0)
					}
					_ = c.Close()
				}
			}()
			got := e.get(t, "http://allowed.test:"+portOf(ln.Addr())+"/")
			if got.status != http.StatusBadGateway || got.header.Get(HeaderOutcome) != tt.want {
				t.Fatalf("status %d %s=%q; want 502 %s", got.status, HeaderOutcome, got.header.Get(HeaderOutcome), tt.want)
			}
			if ev := e.lastEvent(t); ev.Kind != tt.want || ev.Reason == "" {
				t.Errorf("event %+v, want kind %s with a reason", ev, tt.want)
			}
		})
	}
}

// A target that accepts and never answers is cut at HeaderTimeout with a 502.
func TestProxyTargetHeaderTimeout(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *Config) { c.HeaderTimeout = 300 * time.Millisecond })
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // hold it open, say nothing
		}
	}()
	start := time.Now()
	got := e.get(t, "http://allowed.test:"+portOf(ln.Addr())+"/")
	if got.status != http.StatusBadGateway || got.header.Get(HeaderOutcome) != KindNoResponse {
		t.Fatalf("status %d %s=%q; want 502 no_response", got.status, HeaderOutcome, got.header.Get(HeaderOutcome))
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("took %s", d)
	}
	if ev := e.lastEvent(t); !strings.Contains(ev.Reason, "timeout") {
		t.Errorf("reason %q, want a timeout", ev.Reason)
	}
}

// A browser that never finishes its request head is disconnected at HeaderTimeout.
func TestProxyClientHeaderTimeout(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *Config) { c.HeaderTimeout = 300 * time.Millisecond })
	c, br := e.rawConn(t)
	_, _ = io.WriteString(c, "GET http://allowed.test:"+e.port+"/ HTTP/1.1\r\nHost: allowed") // never finished
	start := time.Now()
	_, _ = io.Copy(io.Discard, br) // returns when the proxy closes the connection
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("connection held %s, want ≈300ms", d)
	}
	if s := e.sess.Stats(); s != (Stats{}) {
		t.Errorf("stats %+v; an unfinished request must not be proxied", s)
	}
}

func TestProxyTargetOwn502PassesThrough(t *testing.T) {
	t.Parallel()
	e := setup(t)
	got := e.get(t, "http://allowed.test:"+e.port+"/own502")
	if got.status != http.StatusBadGateway || got.body != "target says 502" {
		t.Fatalf("status %d body %q; want the target's own 502", got.status, got.body)
	}
	if h := got.header.Get(HeaderOutcome); h != "" {
		t.Errorf("%s = %q; a target's response must not carry it (even forged)", HeaderOutcome, h)
	}
	if ev := e.lastEvent(t); ev.Kind != KindAllowed {
		t.Errorf("event %+v, want allowed", ev)
	}
}

func TestProxyRedirectNotFollowed(t *testing.T) {
	t.Parallel()
	e := setup(t)
	got := e.get(t, "http://allowed.test:"+e.port+"/redirect")
	wantLoc := "http://canary.test:" + e.port + "/"
	if got.status != http.StatusFound || got.header.Get("Location") != wantLoc {
		t.Fatalf("status %d Location %q; want 302 to %s", got.status, got.header.Get("Location"), wantLoc)
	}
	// The browser's next hop comes back through the proxy and is refused.
	if got := e.get(t, wantLoc); got.status != http.StatusForbidden || got.header.Get(HeaderOutcome) != KindBlocked {
		t.Errorf("follow-up: status %d; want 403 blocked", got.status)
	}
	// A client that follows redirects itself ends on the proxy's 403, not the canary.
	c := e.client(t)
	c.CheckRedirect = nil
	resp, err := c.Get("http://allowed.test:" + e.port + "/redirect")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("followed chain ended with %d, want 403", resp.StatusCode)
	}
	if s := e.sess.Stats(); s.Allowed != 2 || s.Blocked != 2 {
		t.Errorf("stats %+v, want 2 allowed, 2 blocked", s)
	}
}

// The rebinding resolver answers 127.0.0.2 first and 127.0.0.1 afterwards. One lookup per
// request and dialing the checked address mean the first request reaches the site, the
// second is refused, and the canary (same port on 127.0.0.1) never sees a connection.
func TestProxyDNSRebinding(t *testing.T) {
	t.Parallel()
	e := setup(t)

	t.Run("plain http", func(t *testing.T) {
		u := "http://rebind.test:" + e.port + "/"
		if got := e.get(t, u); got.status != 200 || got.body != "site ok" {
			t.Fatalf("first request: %d %q; want the site", got.status, got.body)
		}
		if n := e.res.callsFor("rebind.test"); n != 1 {
			t.Fatalf("resolver called %d times for one request, want 1", n)
		}
		if ev, _ := e.sess.Lookup("rebind.test"); ev.Kind != KindAllowed || ev.IP != ipSite {
			t.Errorf("event %+v; want allowed, dialed %s", ev, ipSite)
		}
		if got := e.get(t, u); got.status != http.StatusForbidden {
			t.Fatalf("second request: %d; want 403", got.status)
		}
		if n := e.res.callsFor("rebind.test"); n != 2 {
			t.Errorf("resolver called %d times for two requests, want 2", n)
		}
	})

	t.Run("connect", func(t *testing.T) {
		resp, c, br := e.connect(t, "rebind2.test:"+e.port)
		if resp.StatusCode != 200 {
			t.Fatalf("CONNECT: %d", resp.StatusCode)
		}
		if n := e.res.callsFor("rebind2.test"); n != 1 {
			t.Fatalf("resolver called %d times, want 1", n)
		}
		// Speak HTTP through the tunnel: it is the site, not the canary.
		fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: rebind2.test\r\nConnection: close\r\n\r\n")
		r, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(r.Body)
		if string(b) != "site ok" {
			t.Errorf("tunnel reached %q, want the site", b)
		}
		resp2, _, _ := e.connect(t, "rebind2.test:"+e.port)
		if resp2.StatusCode != http.StatusForbidden {
			t.Errorf("second CONNECT: %d, want 403", resp2.StatusCode)
		}
		if n := e.res.callsFor("rebind2.test"); n != 2 {
			t.Errorf("resolver called %d times for two CONNECTs, want 2", n)
		}
	})
}

func TestProxyConnect(t *testing.T) {
	t.Parallel()
	e := setup(t)

	t.Run("tls end to end", func(t *testing.T) {
		got := e.get(t, "https://allowed.test:"+e.tlsPort+"/")
		if got.status != 200 || got.body != "site ok" || got.header.Get("X-Seen-TLS") != "true" {
			t.Fatalf("https via CONNECT: %d %q TLS=%s", got.status, got.body, got.header.Get("X-Seen-TLS"))
		}
		if ev, _ := e.sess.Lookup("allowed.test"); ev.Kind != KindAllowed || ev.Port != e.tlsPort {
			t.Errorf("event %+v", ev)
		}
	})

	t.Run("ip literal tunnel", func(t *testing.T) {
		resp, c, br := e.connect(t, "127.0.0.2:"+e.port)
		if resp.StatusCode != 200 {
			t.Fatalf("CONNECT: %d", resp.StatusCode)
		}
		fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		r, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(r.Body)
		if string(b) != "site ok" {
			t.Errorf("tunnel: %q", b)
		}
	})

	refused := []struct {
		target string
		status int
		kind   string
	}{
		{"127.0.0.1:" + e.port, 403, KindBlocked},
		{"[::1]:" + e.port, 403, KindBlocked},
		{"[::ffff:127.0.0.1]:" + e.port, 403, KindBlocked},
		{"canary.test:" + e.port, 403, KindBlocked},
		{"both.test:" + e.port, 403, KindBlocked},
		{"localhost:" + e.port, 403, KindBlocked},
		{"169.254.169.254:443", 403, KindBlocked},
		{"2130706433:" + e.port, 502, KindDNSFailure},
		{"nx.test:443", 502, KindDNSFailure},
		{"127.0.0.1", 400, "bad_request"},
		{"allowed.test:0", 400, "bad_request"},
		{"allowed.test:99999", 400, "bad_request"},
	}
	for _, tt := range refused {
		t.Run("refuse "+tt.target, func(t *testing.T) {
			resp, _, _ := e.connect(t, tt.target)
			if resp.StatusCode != tt.status || resp.Header.Get(HeaderOutcome) != tt.kind {
				t.Errorf("CONNECT %s: %d %s=%q; want %d %s", tt.target, resp.StatusCode, HeaderOutcome,
					resp.Header.Get(HeaderOutcome), tt.status, tt.kind)
			}
		})
	}
}

// Chromium keeps proxy connections alive across hosts; every request is checked.
func TestProxyKeepAliveChecksEachRequest(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c, br := e.rawConn(t)
	for _, tt := range []struct {
		host   string
		status int
	}{
		{"allowed.test", 200}, {"canary.test", 403}, {"allowed.test", 200}, {"127.0.0.1", 403},
	} {
		req := fmt.Sprintf("GET http://%s:%s/ HTTP/1.1\r\nHost: %s:%s\r\nProxy-Connection: keep-alive\r\n\r\n", tt.host, e.port, tt.host, e.port)
		if _, err := io.WriteString(c, req); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%s: %v", tt.host, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.status {
			t.Errorf("%s on a kept-alive connection: %d, want %d", tt.host, resp.StatusCode, tt.status)
		}
	}
}

func TestProxyWebSocketUpgrade(t *testing.T) {
	t.Parallel()
	e := setup(t)
	upgrade := func(t *testing.T, host string) (*http.Response, net.Conn, *bufio.Reader) {
		c, br := e.rawConn(t)
		key := "dGhlIHNhbXBsZSBub25jZQ=="
		fmt.Fprintf(c, "GET http://%s:%s/ws HTTP/1.1\r\nHost: %s:%s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
			"Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\nProxy-Connection: keep-alive\r\n\r\n", host, e.port, host, e.port, key)
		resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodGet})
		if err != nil {
			t.Fatal(err)
		}
		return resp, c, br
	}

	t.Run("allowed", func(t *testing.T) {
		resp, c, br := upgrade(t, "allowed.test")
		if resp.StatusCode != http.StatusSwitchingProtocols {
			t.Fatalf("status %d, want 101", resp.StatusCode)
		}
		if got, want := resp.Header.Get("Sec-WebSocket-Accept"), wsAccept("dGhlIHNhbXBsZSBub25jZQ=="); got != want {
			t.Errorf("Sec-WebSocket-Accept %q, want %q", got, want)
		}
		if !strings.EqualFold(resp.Header.Get("Upgrade"), "websocket") {
			t.Errorf("Upgrade %q", resp.Header.Get("Upgrade"))
		}
		msg := "ping through the tunnel"
		if _, err := io.WriteString(c, msg); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, len(msg))
		if _, err := io.ReadFull(br, buf); err != nil || string(buf) != msg {
			t.Fatalf("echo %q, %v", buf, err)
		}
	})

	t.Run("canary refused", func(t *testing.T) {
		resp, _, _ := upgrade(t, "canary.test")
		if resp.StatusCode != http.StatusForbidden || resp.Header.Get(HeaderOutcome) != KindBlocked {
			t.Errorf("status %d, want 403 blocked", resp.StatusCode)
		}
	})
}

func TestProxyRejectsOtherRequests(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for _, line := range []string{
		"GET / HTTP/1.1", // origin-form: not a proxy request
		"GET https://allowed.test:" + e.port + "/ HTTP/1.1", // https must use CONNECT
		"GET ftp://allowed.test/ HTTP/1.1",
	} {
		t.Run(line, func(t *testing.T) {
			c, br := e.rawConn(t)
			fmt.Fprintf(c, "%s\r\nHost: allowed.test\r\n\r\n", line)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusBadRequest || resp.Header.Get(HeaderOutcome) != "bad_request" {
				t.Errorf("%d %q; want 400 bad_request", resp.StatusCode, resp.Header.Get(HeaderOutcome))
			}
		})
	}
}

func TestSessionEventsStatsReset(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *Config) { c.MaxEvents = 3 })
	p := e.port
	e.get(t, "http://allowed.test:"+p+"/")
	e.get(t, "http://canary.test:"+p+"/")
	e.get(t, "http://nx.test:"+p+"/")
	e.get(t, "http://127.0.0.2:1/") // nothing listens on port 1
	e.get(t, "http://[::1]:"+p+"/")

	if got, want := e.sess.Stats(), (Stats{Allowed: 1, Blocked: 2, DNSFailures: 1, ConnectFailures: 1}); got != want {
		t.Errorf("Stats() = %+v, want %+v", got, want)
	}
	evs := e.sess.Events()
	var hosts []string
	for _, ev := range evs {
		hosts = append(hosts, ev.Host+"/"+ev.Kind)
	}
	if want := "nx.test/dns_failure 127.0.0.2/connection_failed ::1/blocked"; strings.Join(hosts, " ") != want {
		t.Errorf("Events() = %v; want the 3 newest, oldest first: %s", hosts, want)
	}
	for i := 1; i < len(evs); i++ {
		if evs[i].At.Before(evs[i-1].At) {
			t.Errorf("events out of order")
		}
	}
	if ev, ok := e.sess.Lookup("[::1]"); !ok || ev.Kind != KindBlocked || ev.IP != netip.IPv6Loopback() || ev.Reason != "::1 is loopback" {
		t.Errorf("Lookup([::1]) = %+v, %v", ev, ok)
	}
	if _, ok := e.sess.Lookup("allowed.test"); ok {
		t.Errorf("Lookup found an event that should have been dropped")
	}

	e.sess.Reset()
	if s := e.sess.Stats(); s != (Stats{}) {
		t.Errorf("after Reset: %+v", s)
	}
	if n := len(e.sess.Events()); n != 0 {
		t.Errorf("after Reset: %d events", n)
	}
	e.get(t, "http://allowed.test:"+p+"/") // the session still works
	if ev, ok := e.sess.Lookup("ALLOWED.test"); !ok || ev.Kind != KindAllowed {
		t.Errorf("after Reset, Lookup = %+v, %v", ev, ok)
	}
}

func TestHTTPClient(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.proxy.HTTPClient(5 * time.Second)
	defer c.CloseIdleConnections()

	resp, err := c.Get("http://allowed.test:" + e.port + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "site ok" {
		t.Errorf("allowed: %d %q", resp.StatusCode, b)
	}

	resp, err = c.Get("http://allowed.test:" + e.port + "/redirect")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Errorf("redirect: %d, want 302 returned, not followed", resp.StatusCode)
	}

	for _, tt := range []struct {
		url  string
		want error
	}{
		{"http://canary.test:" + e.port + "/", ErrBlocked},
		{"http://127.0.0.1:" + e.port + "/", ErrBlocked},
		{"http://both.test:" + e.port + "/", ErrBlocked},
		{"http://rebind.test:" + e.port + "/x", nil}, // first answer allowed …
		{"http://nx.test:" + e.port + "/", ErrDNSFailure},
		{"http://127.0.0.2:1/", ErrConnectFailed},
	} {
		resp, err := c.Get(tt.url)
		if resp != nil {
			resp.Body.Close()
		}
		if !errors.Is(err, tt.want) && !(tt.want == nil && err == nil) {
			t.Errorf("GET %s: err %v, want %v", tt.url, err, tt.want)
		}
	}
	var de *DialError
	_, err = c.Get("http://canary.test:" + e.port + "/")
	if !errors.As(err, &de) || de.IP != ipCanary || de.Reason != "canary.test resolves to 127.0.0.1, which is loopback" {
		t.Errorf("DialError = %+v (%v)", de, err)
	}
}

// net.Dialer.Control re-checks the socket address; exercised directly because the
// pre-check already refuses everything it would refuse.
func TestDialControlRechecks(t *testing.T) {
	t.Parallel()
	p := New(Config{Policy: NewPolicy([]netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")})})
	tests := []struct {
		name    string
		want    netip.Addr
		address string
		ok      bool
	}{
		{"checked and allowed", ipSite, "127.0.0.2:80", true},
		{"checked mapped form", ipSite, "[::ffff:127.0.0.2]:80", true},
		{"different address", ipSite, "127.0.0.3:80", false},
		{"denied even if it was 'checked'", ipCanary, "127.0.0.1:80", false},
		{"garbage", ipSite, "nope", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := p.control(tt.want)("tcp4", tt.address, nil)
			if tt.ok != (err == nil) || (err != nil && !errors.Is(err, ErrBlocked)) {
				t.Errorf("control(%s)(%s) = %v", tt.want, tt.address, err)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("zero Config: %v", err)
	}
	err := Config{DialTimeout: -1, MaxEvents: -1}.Validate()
	if err == nil || !strings.Contains(err.Error(), "DialTimeout") || !strings.Contains(err.Error(), "MaxEvents") {
		t.Errorf("negative settings: %v", err)
	}
	p := New(Config{DialTimeout: -1})
	if p.cfg.DialTimeout != DefaultDialTimeout || p.cfg.MaxEvents != DefaultMaxEvents || p.cfg.Policy == nil {
		t.Errorf("defaults not applied: %+v", p.cfg)
	}
}
