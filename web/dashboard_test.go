package web

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/snapq/snapq/jobs"
)

// fakeKeys knows one key.
type fakeKeys struct {
	sum string
}

var _ KeyReader = (*fakeKeys)(nil)

func (f *fakeKeys) KeyBySHA256(_ context.Context, sum string) (*jobs.APIKey, error) {
	if sum != f.sum {
		return nil, jobs.ErrNotFound
	}
	return &jobs.APIKey{ID: "k1", Prefix: "sq_test"}, nil
}

func (f *fakeKeys) TouchKey(context.Context, string) error { return nil }

// dashboardSetup builds a router with auth on or off and a stand-in queue UI
// that answers 200 "queues".
func dashboardSetup(t *testing.T, auth bool) (http.Handler, string) {
	t.Helper()
	secret, _, err := jobs.NewAPIKey("test")
	if err != nil {
		t.Fatal(err)
	}
	repo := &fakeRepo{} // every artifact is missing: past authentication 404, before it 401
	queues := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("queues " + r.URL.Path)) })
	s := &Server{Service: &jobs.Service{Repo: repo, Queue: &fakeQueue{}}, Batches: repo, Keys: &fakeKeys{sum: jobs.HashKey(secret)},
		Queues: queues, Config: Config{Auth: auth, AllowedHosts: testHosts, AdminToken: testAdminToken}}
	return s.Handler(), secret
}

// testAdminToken is SNAPQ_ADMIN_TOKEN in the router tests.
const testAdminToken = "admin-token-of-the-router-tests-0123456789"

func get(h http.Handler, path string, mod func(*http.Request)) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	if mod != nil {
		mod(req)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestDashboardServed(t *testing.T) {
	t.Parallel()
	h, _ := dashboardSetup(t, true) // the page is public even with keys on
	rec := get(h, "/", nil)
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("GET / = %d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	body := rec.Body.String()
	if !strings.Contains(body, `<script type="module" src="/assets/app.js"></script>`) || !strings.Contains(body, `id="key-dialog"`) {
		t.Errorf("GET / does not load the app: %.300s", body)
	}
	if cc := rec.Header().Get("Cache-Control"); cc != "no-cache" {
		t.Errorf("GET / Cache-Control = %q, want no-cache (revalidate: file names are not hashed)", cc)
	}
	if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("GET / CSP = %q", csp)
	}
	if rec := get(h, "/v1/batches", nil); rec.Code != http.StatusUnauthorized {
		t.Errorf("GET /v1/batches without key = %d, want 401 (data still needs the key)", rec.Code)
	}
}

func TestDashboardAssets(t *testing.T) {
	t.Parallel()
	h, _ := dashboardSetup(t, true)
	tests := []struct {
		path, contentType string
	}{
		{"/assets/app.js", "text/javascript; charset=utf-8"},
		{"/assets/batch.js", "text/javascript; charset=utf-8"},
		{"/assets/regression.js", "text/javascript; charset=utf-8"},
		{"/assets/groups.js", "text/javascript; charset=utf-8"},
		{"/assets/run.js", "text/javascript; charset=utf-8"},
		{"/assets/app.css", "text/css; charset=utf-8"},
		{"/assets/favicon.svg", "image/svg+xml"},
	}
	for _, tt := range tests {
		rec := get(h, tt.path, nil)
		want, err := dashboardFiles.ReadFile("dashboard" + tt.path)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != tt.contentType || rec.Body.String() != string(want) {
			t.Errorf("GET %s = %d %q, %d bytes; want 200 %q, %d bytes", tt.path, rec.Code, rec.Header().Get("Content-Type"),
				rec.Body.Len(), tt.contentType, len(want))
			continue
		}
		if rec.Header().Get("X-Content-Type-Options") != "nosniff" || rec.Header().Get("Cache-Control") != "no-cache" {
			t.Errorf("GET %s headers: %v", tt.path, rec.Header())
		}
		etag := rec.Header().Get("ETag")
		again := get(h, tt.path, func(r *http.Request) { r.Header.Set("If-None-Match", etag) })
		if etag == "" || again.Code != http.StatusNotModified || again.Body.Len() != 0 {
			t.Errorf("GET %s with If-None-Match %q = %d, %d bytes; want 304, empty", tt.path, etag, again.Code, again.Body.Len())
		}
	}
	for _, p := range []string{"/assets/nope.js", "/assets/", "/assets/../router.go", "/index.html"} {
		if rec := get(h, p, nil); rec.Code != http.StatusNotFound {
			t.Errorf("GET %s = %d, want 404", p, rec.Code)
		}
	}
}

func TestQueuesProtected(t *testing.T) {
	t.Parallel()
	h, secret := dashboardSetup(t, true)
	tests := []struct {
		name string
		mod  func(*http.Request)
		want int
	}{
		{"no key", nil, http.StatusUnauthorized},
		{"basic with a wrong key", func(r *http.Request) { r.SetBasicAuth("admin", "sq_"+strings.Repeat("x", 43)) }, http.StatusUnauthorized},
		{"basic with a wrong token", func(r *http.Request) { r.SetBasicAuth("admin", testAdminToken+"x") }, http.StatusUnauthorized},
		// An ordinary key sees every tenant's tasks nowhere (issue 12): 403.
		{"basic with an api key", func(r *http.Request) { r.SetBasicAuth("admin", secret) }, http.StatusForbidden},
		{"bearer api key", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+secret) }, http.StatusForbidden},
		{"dashboard cookie with an api key", func(r *http.Request) { r.AddCookie(&http.Cookie{Name: KeyCookie, Value: secret}) }, http.StatusForbidden},
		{"basic with the admin token", func(r *http.Request) { r.SetBasicAuth("admin", testAdminToken) }, http.StatusOK},
		{"bearer admin token", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+testAdminToken) }, http.StatusOK},
	}
	for _, tt := range tests {
		for _, p := range []string{QueuesPath, QueuesPath + "/", QueuesPath + "/api/queues"} {
			rec := get(h, p, tt.mod)
			if rec.Code != tt.want {
				t.Errorf("%s: GET %s = %d, want %d", tt.name, p, rec.Code, tt.want)
			}
			if tt.want == http.StatusUnauthorized && !strings.HasPrefix(rec.Header().Get("WWW-Authenticate"), "Basic ") {
				t.Errorf("%s: GET %s WWW-Authenticate = %q, want a Basic challenge", tt.name, p, rec.Header().Get("WWW-Authenticate"))
			}
			if tt.want == http.StatusForbidden && !strings.Contains(rec.Body.String(), `"admin_required"`) {
				t.Errorf("%s: GET %s = %s, want admin_required", tt.name, p, rec.Body)
			}
			if tt.want == http.StatusOK && rec.Body.String() != "queues "+p {
				t.Errorf("%s: GET %s reached %q", tt.name, p, rec.Body.String())
			}
		}
	}

	// A cross-site page cannot make a browser change queues with its cached credentials.
	for _, hdr := range [][2]string{{"Origin", "https://evil.example"}, {"Sec-Fetch-Site", "cross-site"}} {
		req := httptest.NewRequest(http.MethodPost, QueuesPath+"/api/queues/capture:pause", nil)
		req.SetBasicAuth("admin", testAdminToken)
		req.Header.Set(hdr[0], hdr[1])
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusForbidden {
			t.Errorf("POST with %s: %s = %d, want 403", hdr[0], hdr[1], rec.Code)
		}
	}
	req := httptest.NewRequest(http.MethodPost, QueuesPath+"/api/queues/capture:pause", nil)
	req.SetBasicAuth("admin", testAdminToken)
	req.Header.Set("Origin", "http://example.com") // httptest's Host
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Errorf("same-origin POST = %d, want 200", rec.Code)
	}

	open, _ := dashboardSetup(t, false)
	if rec := get(open, QueuesPath+"/", nil); rec.Code != http.StatusOK {
		t.Errorf("auth off: GET %s/ = %d, want 200", QueuesPath, rec.Code)
	}
}

// The key cookie authenticates artifact downloads (images, links) and nothing else.
func TestKeyCookieOnlyForArtifacts(t *testing.T) {
	t.Parallel()
	h, secret := dashboardSetup(t, true)
	cookie := func(r *http.Request) { r.AddCookie(&http.Cookie{Name: KeyCookie, Value: secret}) }
	const art = "/v1/artifacts/0190a0a0-0000-7000-8000-0000000000ff"
	if rec := get(h, art, cookie); rec.Code != http.StatusNotFound {
		t.Errorf("GET artifact with the key cookie = %d, want 404 (authenticated, no such artifact)", rec.Code)
	}
	if rec := get(h, art, nil); rec.Code != http.StatusUnauthorized {
		t.Errorf("GET artifact without key = %d, want 401", rec.Code)
	}
	if rec := get(h, "/v1/batches", cookie); rec.Code != http.StatusUnauthorized {
		t.Errorf("GET /v1/batches with only the key cookie = %d, want 401", rec.Code)
	}
	req := httptest.NewRequest(http.MethodPost, "/v1/batches", strings.NewReader(`{"urls":["https://a.example/"]}`))
	req.Header.Set("Content-Type", "application/json")
	cookie(req)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusUnauthorized {
		t.Errorf("POST /v1/batches with only the key cookie = %d, want 401", rec.Code)
	}
}
