package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// raw sends one request shaped like a browser's: its own Host header (only a
// header; the connection still goes to the stack's 127.0.0.1 port), content
// type, body and headers. It returns the status and the error code.
func (s *stack) raw(method, path, host, contentType, body string, headers map[string]string) (int, string) {
	s.t.Helper()
	req, err := http.NewRequest(method, s.api+path, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e errResp
	_ = json.Unmarshal(b, &e)
	return resp.StatusCode, e.Error.Code
}

// With SNAPQ_AUTH=off the real api refuses what a web page in the operator's
// browser could send: forms, text/plain, a rebound Host, cross-site fetches.
func TestAuthOffBrowserBoundary(t *testing.T) {
	t.Parallel()
	s := startStack(t, "SNAPQ_CORS_ORIGINS=https://dash.example")
	const batch = "/v1/batches/0190a0a0-0000-7000-8000-0000000000ff"
	port := s.api[strings.LastIndex(s.api, ":")+1:]
	tests := []struct {
		name, method, path, host, contentType, body string
		headers                                     map[string]string
		want                                        int
		code                                        string
	}{
		{name: "form POST", method: "POST", path: "/v1/batches", contentType: "application/x-www-form-urlencoded",
			body: "urls=https://a.example/", want: 415, code: "unsupported_media_type"},
		{name: "empty form POST to cancel", method: "POST", path: batch + "/cancel",
			contentType: "application/x-www-form-urlencoded", want: 415, code: "unsupported_media_type"},
		{name: "text/plain POST", method: "POST", path: "/v1/batches", contentType: "text/plain",
			body: `{"urls": ["https://a.example/"]}`, want: 415, code: "unsupported_media_type"},
		{name: "cancel without a body", method: "POST", path: batch + "/cancel", want: 404, code: "not_found"},
		{name: "rebound Host", method: "GET", path: "/v1/batches", host: "evil.example:" + port, want: 421, code: "invalid_host"},
		{name: "rebound Host on the dashboard", method: "GET", path: "/", host: "evil.example:" + port, want: 421, code: "invalid_host"},
		{name: "localhost", method: "GET", path: "/v1/batches", host: "localhost:" + port, want: 200},
		{name: "cross-site fetch", method: "GET", path: "/v1/batches",
			headers: map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}, want: 403, code: "cross_site_request"},
		{name: "cross-site write", method: "POST", path: "/v1/batches", contentType: "application/json",
			body: `{"urls": ["https://a.example/"]}`, headers: map[string]string{"Origin": "https://evil.example"}, want: 403, code: "cross_site_request"},
		{name: "configured origin", method: "GET", path: "/v1/batches",
			headers: map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://dash.example"}, want: 200},
	}
	for _, tt := range tests {
		if code, errCode := s.raw(tt.method, tt.path, tt.host, tt.contentType, tt.body, tt.headers); code != tt.want || errCode != tt.code {
			t.Errorf("%s: %s %s = %d %q, want %d %q", tt.name, tt.method, tt.path, code, errCode, tt.want, tt.code)
		}
	}
}

// Bad keys are limited per client address, on /v1 and the queue UI alike;
// past the limit even a valid key from that address waits.
func TestAuthFailureLimit(t *testing.T) {
	t.Parallel()
	s := startStack(t, "SNAPQ_AUTH=on", "SNAPQ_AUTH_FAILURE_BURST=3", "SNAPQ_AUTH_FAILURE_RATE=0.01")
	key := s.apiKey("ci")
	bad := map[string]string{"Authorization": "Bearer sq_" + strings.Repeat("x", 43)}
	for i, path := range []string{"/v1/batches", "/admin/queues/", "/v1/batches"} {
		if code, _ := s.raw("GET", path, "", "", "", bad); code != http.StatusUnauthorized {
			t.Fatalf("bad key %d on %s = %d, want 401", i+1, path, code)
		}
	}
	if code, errCode := s.raw("GET", "/v1/batches", "", "", "", bad); code != http.StatusTooManyRequests || errCode != "rate_limited" {
		t.Errorf("fourth bad key = %d %q, want 429 rate_limited", code, errCode)
	}
	if code, _ := s.raw("GET", "/v1/batches", "", "", "", map[string]string{"Authorization": "Bearer " + key}); code != http.StatusTooManyRequests {
		t.Errorf("valid key from the blocked address = %d, want 429", code)
	}
}
