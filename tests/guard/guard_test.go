// Package guard tests the egress guard and the capture package together, in
// process, with an injected resolver: rebinding and unresolvable names,
// without ever asking a real DNS server.
package guard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snapq/snapq/capture"
	"github.com/snapq/snapq/egress"
	"github.com/snapq/snapq/internal/testenv"
)

// resolver answers made-up names with loopback addresses only.
type resolver struct {
	mu      sync.Mutex
	rebinds int
	calls   map[string]int
}

func (r *resolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls[host]++
	switch host {
	case "site.test":
		return []netip.Addr{netip.MustParseAddr("127.0.0.2")}, nil
	case "rebind.test":
		// Allowed first, the canary on every later lookup.
		r.rebinds++
		if r.rebinds == 1 {
			return []netip.Addr{netip.MustParseAddr("127.0.0.2")}, nil
		}
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

type counter struct{ n atomic.Int64 }

func serve(t *testing.T, addr string, h http.Handler, c *counter) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		testenv.Unavailable(t, "a listener on "+addr, err)
	}
	srv := &http.Server{Handler: h, ConnState: func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew && c != nil {
			c.n.Add(1)
		}
	}}
	go srv.Serve(ln) //nolint:errcheck
	t.Cleanup(func() { srv.Close() })
	return ln
}

func TestGuardWithInjectedResolver(t *testing.T) {
	chrome := testenv.Getenv("SNAPQ_CHROME_BIN", "/usr/bin/chromium")
	if _, err := os.Stat(chrome); err != nil {
		testenv.Unavailable(t, "chromium", err)
	}
	var canary counter
	cln := serve(t, "127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "CANARY")
	}), &canary)
	_, port, _ := net.SplitHostPort(cln.Addr().String())
	// The allowed site listens on the canary's port on 127.0.0.2, so a request that
	// reached the wrong address would land on the canary.
	serve(t, "127.0.0.2:"+port, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			fmt.Fprint(w, "sub-resource")
			return
		}
		fmt.Fprint(w, `<!doctype html><title>site</title><h1>Allowed site</h1>
<img src="/pixel.png"><script>fetch("/again").catch(() => {});</script>`)
	}), nil)

	res := &resolver{calls: map[string]int{}}
	ecfg := egress.DefaultConfig()
	ecfg.Policy = egress.NewPolicy([]netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")})
	ecfg.Resolver = res
	guard := egress.New(ecfg)

	cfg := capture.DefaultConfig()
	cfg.ChromeBin = chrome
	cfg.Tabs = 1
	cfg.Egress = func() (capture.EgressSession, error) {
		s, err := guard.NewSession()
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	b, err := capture.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	capt := func(url string) (*capture.Result, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return b.Capture(ctx, capture.Request{URL: url, Name: "guard", Wait: capture.Wait{Delay: 300 * time.Millisecond}})
	}

	t.Run("allowed name", func(t *testing.T) {
		r, err := capt("http://site.test:" + port + "/")
		if err != nil || r.HTTPStatus != 200 || r.Title != "site" || r.BlockedRequests != 0 {
			t.Fatalf("site.test: %+v, %v", r, err)
		}
	})
	t.Run("name that does not resolve", func(t *testing.T) {
		_, err := capt("http://nx.test:" + port + "/")
		var ce *capture.Error
		if !errors.As(err, &ce) || ce.Code != capture.CodeDNSFailure || ce.Retryable {
			t.Fatalf("nx.test: %v; want dns_failure, not retryable", err)
		}
	})
	t.Run("rebinding", func(t *testing.T) {
		r, err := capt("http://rebind.test:" + port + "/")
		if err != nil {
			t.Fatalf("rebind.test: %v", err)
		}
		if r.Title != "site" || r.BlockedRequests < 1 {
			t.Errorf("rebind.test: title %q, %d blocked requests; want the allowed page with its later requests blocked", r.Title, r.BlockedRequests)
		}
	})
	if n := canary.n.Load(); n != 0 {
		t.Fatalf("the canary accepted %d connections", n)
	}
	res.mu.Lock()
	defer res.mu.Unlock()
	if res.calls["rebind.test"] < 2 {
		t.Errorf("rebind.test resolved %d times; the test did not exercise rebinding", res.calls["rebind.test"])
	}
}
