package e2e

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snapq/snapq/internal/fixtures"
	"github.com/snapq/snapq/internal/testenv"
)

// canary is an HTTP server on 127.0.0.1 that counts every connection it
// accepts. The guard must keep every one of them from happening.
type canary struct {
	conns atomic.Int64
	port  string
	srv   *http.Server
}

func startCanary(t *testing.T) *canary {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &canary{}
	_, c.port, _ = net.SplitHostPort(ln.Addr().String())
	c.srv = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "<h1>CANARY SECRET</h1>") }),
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				c.conns.Add(1)
			}
		},
	}
	go c.srv.Serve(ln) //nolint:errcheck
	t.Cleanup(func() { c.srv.Close() })
	return c
}

// guardSite serves the fixture site plus pages that try to reach the canary,
// on 127.0.0.2 (the only address the test allows).
func guardSite(t *testing.T, canaryURL string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		testenv.Unavailable(t, "a listener on "+"127.0.0.2", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/", fixtures.Handler())
	mux.HandleFunc("/redirect-canary", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, canaryURL, http.StatusFound)
	})
	mux.HandleFunc("/js-canary", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, `<!doctype html><title>js</title><script>location.href = %q;</script><h1>leaving</h1>`, canaryURL)
	})
	mux.HandleFunc("/embed-canary", func(w http.ResponseWriter, _ *http.Request) {
		ws := strings.Replace(canaryURL, "http://", "ws://", 1)
		fmt.Fprintf(w, `<!doctype html><title>embeds</title><h1>Embeds</h1>
<img src="%[1]s/img.png"><iframe src="%[1]s/frame"></iframe>
<script>
fetch(%[1]q + "/fetch").catch(() => {});
try { new WebSocket(%[2]q + "/ws"); } catch (e) {}
window.open(%[1]q + "/popup");
if (navigator.serviceWorker) navigator.serviceWorker.register("/sw.js").catch(() => {});
</script>`, canaryURL, ws)
	})
	mux.HandleFunc("/sw.js", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		fmt.Fprintf(w, `self.addEventListener("install", () => { fetch(%q + "/from-sw").catch(() => {}); });`, canaryURL)
	})
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: mux}}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

// The egress guard: nothing a job loads may reach a denied address, however
// the URL is spelled and however the page gets there.
func TestEgressGuard(t *testing.T) {
	t.Parallel()
	c := startCanary(t)
	canaryURL := "http://127.0.0.1:" + c.port
	site := guardSite(t, canaryURL)
	s := startStack(t, "SNAPQ_EGRESS_ALLOW_CIDRS=127.0.0.2/32")

	p := c.port
	blocked := []string{
		"http://127.0.0.1:" + p + "/",
		"http://2130706433:" + p + "/",
		"http://0x7f.1:" + p + "/",
		"http://0177.0.0.1:" + p + "/",
		"http://[::1]:" + p + "/",
		"http://[::ffff:127.0.0.1]:" + p + "/",
		"http://localhost:" + p + "/",
		"https://127.0.0.1:" + p + "/",
		site + "/redirect-canary",
	}
	var targets []map[string]any
	for i, u := range blocked {
		targets = append(targets, map[string]any{"url": u, "name": fmt.Sprintf("blocked-%d", i)})
	}
	targets = append(targets,
		map[string]any{"url": site + "/js-canary", "name": "js"},
		map[string]any{"url": site + "/embed-canary", "name": "embeds", "options": map[string]any{"wait": map[string]any{"delay_ms": 500}}},
		map[string]any{"url": site + "/short", "name": "allowed"},
	)
	var b batchResp
	if code := s.do("POST", "/v1/batches", map[string]any{"targets": targets}, &b); code != http.StatusAccepted {
		t.Fatalf("submit: %d", code)
	}
	s.waitBatch(b.ID, 3*time.Minute)
	for _, j := range b.Jobs {
		var got jobResp
		s.do("GET", "/v1/jobs/"+j.ID, nil, &got)
		switch {
		case strings.HasPrefix(j.Name, "blocked-"):
			if got.Status != "failed" || got.Error == nil || got.Error.Code != "blocked_address" || len(got.Artifacts) != 0 || got.Attempts != 1 {
				t.Errorf("%s (%s): status %s attempts %d error %+v artifacts %d; want failed blocked_address on the first attempt, nothing stored",
					j.Name, j.URL, got.Status, got.Attempts, got.Error, len(got.Artifacts))
			}
		case j.Name == "js":
			// Either the script's navigation was caught (blocked_address) or the page was
			// captured before it left; the canary count below is what matters.
			if got.Status == "failed" && (got.Error == nil || got.Error.Code != "blocked_address") {
				t.Errorf("js: error %+v", got.Error)
			}
			t.Logf("js redirect: status %s error %+v", got.Status, got.Error)
		case j.Name == "embeds":
			if got.Status != "succeeded" || got.Result == nil || got.Result.BlockedRequests < 3 {
				t.Errorf("embeds: status %s result %+v error %+v; want succeeded with at least 3 blocked requests (img, iframe, fetch)", got.Status, got.Result, got.Error)
			}
		case j.Name == "allowed":
			if got.Status != "succeeded" || len(got.Artifacts) != 1 {
				t.Errorf("allowed page: status %s error %+v", got.Status, got.Error)
			}
		}
	}
	time.Sleep(500 * time.Millisecond) // late requests (service worker, popup) would have landed by now
	if n := c.conns.Load(); n != 0 {
		t.Fatalf("the canary on 127.0.0.1 accepted %d connections; the guard let traffic through", n)
	}
}

// A target that refuses the connection still fails with its own code through
// the guard, never as a captured proxy error page; a target's own 502 is a
// result. (Names that do not resolve are tested in tests/guard with an
// injected resolver: no test may send a query to a real DNS server.)
func TestEgressKeepsErrorsDistinct(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		testenv.Unavailable(t, "a listener on "+"127.0.0.2", err)
	}
	closed := "http://" + ln.Addr().String() + "/"
	ln.Close()
	site := guardSite(t, "http://127.0.0.1:9")
	s := startStack(t, "SNAPQ_EGRESS_ALLOW_CIDRS=127.0.0.2/32", "SNAPQ_MAX_RETRY=0")
	var b batchResp
	s.do("POST", "/v1/batches", map[string]any{"targets": []map[string]any{
		{"url": closed, "name": "refused"},
		{"url": site + "/empty/502", "name": "own-502"},
	}}, &b)
	s.waitBatch(b.ID, 2*time.Minute)
	want := map[string]string{"refused": "connection_failed"}
	for _, j := range b.Jobs {
		var got jobResp
		s.do("GET", "/v1/jobs/"+j.ID, nil, &got)
		if code, ok := want[j.Name]; ok {
			if got.Status != "failed" || got.Error == nil || got.Error.Code != code {
				t.Errorf("%s: status %s error %+v, want failed %s", j.Name, got.Status, got.Error, code)
			}
			continue
		}
		if got.Status != "succeeded" || got.Result == nil || got.Result.HTTPStatus != 502 {
			t.Errorf("own-502: status %s result %+v error %+v; a target's own 502 is a result", got.Status, got.Result, got.Error)
		}
	}
}
