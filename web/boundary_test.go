package web

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/snapq/snapq/jobs"
)

const absentBatch = "/v1/batches/0190a0a0-0000-7000-8000-0000000000ff"

// boundarySetup is an api listening on 127.0.0.1:8080 with cfg (ListenAddr
// is set here), and a stand-in queue UI.
func boundarySetup(t *testing.T, cfg Config) (http.Handler, string) {
	t.Helper()
	secret, _, err := jobs.NewAPIKey("test")
	if err != nil {
		t.Fatal(err)
	}
	cfg.ListenAddr = "127.0.0.1:8080"
	repo := &fakeRepo{}
	queues := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("queues")) })
	s := &Server{Service: &jobs.Service{Repo: repo, Queue: &fakeQueue{}}, Batches: repo, Keys: &fakeKeys{sum: jobs.HashKey(secret)},
		Queues: queues, Config: cfg}
	return s.Handler(), secret
}

// request is one browser-shaped request: Host 127.0.0.1:8080 unless host is set.
type request struct {
	method, path, host, contentType, body string
	headers                               map[string]string
}

func (r request) send(h http.Handler) (int, errBody) {
	req := httptest.NewRequest(r.method, r.path, strings.NewReader(r.body))
	req.Host = "127.0.0.1:8080"
	if r.host != "" {
		req.Host = r.host
	}
	if r.contentType != "" {
		req.Header.Set("Content-Type", r.contentType)
	}
	for k, v := range r.headers {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var e errBody
	_ = json.Unmarshal(rec.Body.Bytes(), &e)
	return rec.Code, e
}

// With SNAPQ_AUTH=off on loopback, a web page the operator visits must not be
// able to write (form or text/plain POSTs need no CORS preflight), nor read
// through a rebound DNS name, nor call the API cross-site at all.
func TestBrowserBoundaryAuthOff(t *testing.T) {
	t.Parallel()
	const batch = `{"urls": ["https://a.example/"]}`
	tests := []struct {
		name string
		req  request
		want int
		code string
	}{
		// Writes carry JSON or nothing.
		{name: "form POST of a batch", req: request{method: "POST", path: "/v1/batches",
			contentType: "application/x-www-form-urlencoded", body: "urls=x"}, want: 415, code: "unsupported_media_type"},
		{name: "empty form POST to cancel", req: request{method: "POST", path: absentBatch + "/cancel",
			contentType: "application/x-www-form-urlencoded"}, want: 415, code: "unsupported_media_type"},
		{name: "multipart POST to cancel", req: request{method: "POST", path: absentBatch + "/cancel",
			contentType: "multipart/form-data; boundary=x", body: "--x--\r\n"}, want: 415, code: "unsupported_media_type"},
		{name: "text/plain POST to cancel", req: request{method: "POST", path: absentBatch + "/cancel",
			contentType: "text/plain", body: "x"}, want: 415, code: "unsupported_media_type"},
		{name: "body without a content type", req: request{method: "POST", path: absentBatch + "/cancel",
			body: "x"}, want: 415, code: "unsupported_media_type"},
		{name: "text/plain DELETE", req: request{method: "DELETE", path: "/v1/suites/0190a0a0-0000-7000-8000-0000000000ff",
			contentType: "text/plain", body: "x"}, want: 415, code: "unsupported_media_type"},
		{name: "form POST to the queue UI", req: request{method: "POST", path: QueuesPath + "/api/queues/capture:pause",
			contentType: "application/x-www-form-urlencoded"}, want: 415, code: "unsupported_media_type"},
		{name: "cancel without a body", req: request{method: "POST", path: absentBatch + "/cancel"}, want: 404, code: "not_found"},
		{name: "cancel with JSON", req: request{method: "POST", path: absentBatch + "/cancel",
			contentType: "application/json; charset=utf-8"}, want: 404, code: "not_found"},
		{name: "JSON batch", req: request{method: "POST", path: "/v1/batches", contentType: "application/json", body: batch}, want: 202},

		// Host names what the api listens on.
		{name: "rebound host", req: request{method: "GET", path: "/v1/batches", host: "evil.example:8080"}, want: 421, code: "invalid_host"},
		{name: "rebound host on the dashboard", req: request{method: "GET", path: "/", host: "evil.example:8080"}, want: 421, code: "invalid_host"},
		{name: "rebound host on the queue UI", req: request{method: "GET", path: QueuesPath + "/", host: "evil.example:8080"}, want: 421, code: "invalid_host"},
		{name: "rebound host without a port", req: request{method: "GET", path: "/v1/batches", host: "evil.example"}, want: 421, code: "invalid_host"},
		{name: "loopback name on another port", req: request{method: "GET", path: "/v1/batches", host: "localhost:9999"}, want: 421, code: "invalid_host"},
		{name: "localhost", req: request{method: "GET", path: "/v1/batches", host: "localhost:8080"}, want: 200},
		{name: "IPv6 loopback", req: request{method: "GET", path: "/v1/batches", host: "[::1]:8080"}, want: 200},
		{name: "probes answer any host", req: request{method: "GET", path: "/healthz", host: "10.0.0.7:8080"}, want: 200},

		// Cross-site requests are refused.
		{name: "cross-site fetch", req: request{method: "GET", path: "/v1/batches",
			headers: map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}}, want: 403, code: "cross_site_request"},
		{name: "cross-site fetch of the queue UI", req: request{method: "GET", path: QueuesPath + "/",
			headers: map[string]string{"Sec-Fetch-Site": "cross-site"}}, want: 403, code: "cross_site_request"},
		{name: "same-site fetch", req: request{method: "GET", path: "/v1/batches",
			headers: map[string]string{"Sec-Fetch-Site": "same-site", "Origin": "http://127.0.0.1:9999"}}, want: 403, code: "cross_site_request"},
		{name: "cross-site write by Origin alone", req: request{method: "POST", path: "/v1/batches", contentType: "application/json", body: batch,
			headers: map[string]string{"Origin": "https://evil.example"}}, want: 403, code: "cross_site_request"},
		{name: "opaque origin write", req: request{method: "POST", path: "/v1/batches", contentType: "application/json", body: batch,
			headers: map[string]string{"Origin": "null"}}, want: 403, code: "cross_site_request"},
		{name: "same-origin write", req: request{method: "POST", path: "/v1/batches", contentType: "application/json", body: batch,
			headers: map[string]string{"Origin": "http://127.0.0.1:8080", "Sec-Fetch-Site": "same-origin"}}, want: 202},
		{name: "configured origin, cross-site", req: request{method: "POST", path: "/v1/batches", contentType: "application/json", body: batch,
			headers: map[string]string{"Origin": "https://dash.example", "Sec-Fetch-Site": "cross-site"}}, want: 202},
		{name: "link to the dashboard from another site", req: request{method: "GET", path: "/",
			headers: map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}}, want: 200},
		{name: "typed into the address bar", req: request{method: "GET", path: "/v1/batches",
			headers: map[string]string{"Sec-Fetch-Site": "none"}}, want: 200},
	}
	h, _ := boundarySetup(t, Config{CORSOrigins: []string{"https://dash.example"}})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, e := tt.req.send(h)
			if code != tt.want || e.Error.Code != tt.code {
				t.Errorf("%s %s = %d %+v, want %d %q", tt.req.method, tt.req.path, code, e.Error, tt.want, tt.code)
			}
		})
	}
}

// With auth on, the Host check applies only when SNAPQ_ALLOWED_HOSTS is set;
// SNAPQ_PUBLIC_URL's host is then allowed too.
func TestHostCheckAuthOn(t *testing.T) {
	t.Parallel()
	open, _ := boundarySetup(t, Config{Auth: true})
	if code, e := (request{method: "GET", path: "/v1/batches", host: "api.example.com"}).send(open); code != 401 {
		t.Errorf("auth on, no allowed hosts: any host = %d %+v, want 401", code, e.Error)
	}
	h, secret := boundarySetup(t, Config{Auth: true, AllowedHosts: []string{"api.example.com", "Other.Example:8443"},
		PublicURL: "https://snapq.example.com/base"})
	key := map[string]string{"Authorization": "Bearer " + secret}
	tests := []struct {
		host string
		want int
	}{
		{"api.example.com", 200},
		{"API.example.com:443", 200},
		{"other.example:8443", 200},
		{"other.example:8444", 421},
		{"snapq.example.com", 200},
		{"127.0.0.1:8080", 200},
		{"evil.example", 421},
		{"api.example.com.evil.example", 421},
	}
	for _, tt := range tests {
		code, e := (request{method: "GET", path: "/v1/batches", host: tt.host, headers: key}).send(h)
		if code != tt.want {
			t.Errorf("Host %s = %d %+v, want %d", tt.host, code, e.Error, tt.want)
		}
	}
}
