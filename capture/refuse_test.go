package capture

import (
	"net"
	"net/http"
	"net/url"
	"testing"
)

// The browser-wide proxy answers 403 to plain and CONNECT requests without
// dialing: a listener on the target address sees no connection.
func TestRefuseProxy(t *testing.T) {
	t.Parallel()
	target := newCountingListener(t)
	p, err := newRefuseProxy()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	pu, _ := url.Parse(p.URL())
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu)}}
	resp, err := client.Get("http://" + target.addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("plain request through the browser-wide proxy: %d, want 403", resp.StatusCode)
	}
	if _, err := client.Get("https://" + target.addr + "/"); err == nil {
		t.Fatal("CONNECT through the browser-wide proxy succeeded")
	}
	if n := target.count(); n != 0 {
		t.Fatalf("target saw %d connections, want 0", n)
	}
}

type countingListener struct {
	addr string
	n    chan struct{}
}

// newCountingListener accepts connections on a loopback port and counts them.
func newCountingListener(t *testing.T) *countingListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	c := &countingListener{addr: ln.Addr().String(), n: make(chan struct{}, 100)}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			c.n <- struct{}{}
			conn.Close()
		}
	}()
	return c
}

func (c *countingListener) count() int { return len(c.n) }
