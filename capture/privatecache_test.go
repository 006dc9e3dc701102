package capture

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// A logged-in job's cacheable private response must not outlive its clean slate: the next
// job on the same tab (here: a page it opens, which DevTools' cache switch does not cover)
// gets the response from the server again, not from the logged-in job's HTTP cache.
func TestLoggedInCacheClearedForNextJob(t *testing.T) {
	needChromium(t)
	var (
		mu      sync.Mutex
		served  int
		beacons []string
	)
	mux := http.NewServeMux()
	mux.HandleFunc("/private", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		served++
		n := served
		mu.Unlock()
		w.Header().Set("Cache-Control", "private, max-age=3600")
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!doctype html><title>private %d</title><p>account of alice</p><script>
fetch('/beacon?n=%d', {cache: 'no-store'}).then(() => new BroadcastChannel('c').postMessage('done'));</script>`, n, n)
	})
	mux.HandleFunc("/beacon", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		beacons = append(beacons, r.URL.Query().Get("n"))
		mu.Unlock()
		w.Header().Set("Cache-Control", "no-store")
	})
	mux.HandleFunc("/opener", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<!doctype html><title>opener</title><a id="open" href="/private" target="_blank">open</a><script>
new BroadcastChannel('c').onmessage = () => { const p = document.createElement('p'); p.id = 'done'; p.textContent = 'done'; document.body.append(p); };</script>`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	b := newBrowser(t, Config{Tabs: 1, Logger: testLogger()})
	host := strings.TrimPrefix(srv.URL, "http://")
	host = host[:strings.IndexByte(host, ':')]
	mustCapture(t, b, Request{URL: srv.URL + "/private", Name: "private",
		State: &StorageState{Cookies: []StateCookie{{Name: "sid", Value: "alice", Domain: host, Path: "/", Expires: -1}}}})
	mustCapture(t, b, Request{URL: srv.URL + "/opener", Name: "opener", Actions: []Action{
		{Type: ActionClick, Selector: "#open"},
		{Type: ActionWaitForSelector, Selector: "#done", Timeout: 15 * time.Second},
	}})
	mu.Lock()
	defer mu.Unlock()
	if len(beacons) != 2 {
		t.Fatalf("beacons %v: want one per load of /private", beacons)
	}
	if served != 2 || beacons[1] != "2" {
		t.Fatalf("the second job's page got the logged-in job's cached response (served %d times, beacons %v)", served, beacons)
	}
}

// A secret is typed only into a document of one of the action's origins; refused, the action
// fails with SecretOriginRefused, nothing reaches the page, and no message quotes the secret.
func TestSecretTypedOnlyOnItsOrigins(t *testing.T) {
	needChromium(t)
	var (
		mu    sync.Mutex
		typed []string
	)
	mux := http.NewServeMux()
	mux.HandleFunc("/form", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<!doctype html><title>form</title><input id="pw" type="password"
onchange="fetch('/typed?v=' + encodeURIComponent(this.value))"><button id="go" onclick="this.textContent='ok'">go</button>`)
	})
	mux.HandleFunc("/typed", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		typed = append(typed, r.URL.Query().Get("v"))
		mu.Unlock()
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	const secret = "s3cret value+/="
	b := sharedBrowser(t)
	steps := func(origins ...string) []Action {
		return []Action{{Type: ActionType, Selector: "#pw", Text: secret, Secret: true, Origins: origins},
			{Type: ActionClick, Selector: "#go"}, {Type: ActionWaitForSelector, Selector: "#go", Timeout: time.Second}}
	}
	_, err := capture(t, b, Request{URL: srv.URL + "/form", Name: "refused", Actions: steps("http://127.0.0.1:1")})
	ce := wantCode(t, err, SecretOriginRefused, false)
	if strings.Contains(ce.Message, "s3cret") || ce.Result == nil || !strings.Contains(ce.Message, srv.URL) {
		t.Fatalf("refusal: %q", ce.Message)
	}
	for _, e := range ce.Result.Log {
		if strings.Contains(e.Error+e.Excerpt+e.Target, "s3cret") {
			t.Fatalf("log entry quotes the secret: %+v", e)
		}
	}
	if _, err := capture(t, b, Request{URL: srv.URL + "/form", Name: "none", Actions: steps()}); err == nil {
		t.Fatal("a secret action without origins typed")
	}
	mustCapture(t, b, Request{URL: srv.URL + "/form", Name: "allowed", Actions: steps(srv.URL)})
	mu.Lock()
	defer mu.Unlock()
	if len(typed) != 1 || typed[0] != secret {
		t.Fatalf("the page received %q, want the secret once (on its own origin)", typed)
	}
}
