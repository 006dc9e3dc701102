package contract_test

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/snapq/snapq/internal/contract"
	"github.com/snapq/snapq/web"
)

const batchJSON = `{"id":"0193a5b2-7c1e-7d3f-9a41-2b6c8e0f1a2d","status":"running","total":2,
	"counts":{"queued":1,"running":1,"succeeded":0,"failed":0,"canceled":0},"labels":{},
	"created_at":"2026-12-01T15:00:00Z","finished_at":null}`

// loadDoc loads web/openapi.json once for every test.
var loadDoc = sync.OnceValues(func() (*contract.Validator, error) { return contract.Load(web.OpenAPI) })

const batchPath = "/v1/batches/0193a5b2-7c1e-7d3f-9a41-2b6c8e0f1a2d"

// setup serves answers from routes (path -> status and body) behind a
// checking Transport.
func setup(t *testing.T, handler http.HandlerFunc) (*http.Client, *contract.Transport, string) {
	t.Helper()
	v, err := loadDoc()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	tr := &contract.Transport{Validator: v, Host: strings.TrimPrefix(srv.URL, "http://"), Undocumented: []string{"/", "/assets/*"}}
	return &http.Client{Transport: tr}, tr, srv.URL
}

func answer(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}
}

func TestTransport(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		method    string
		path      string
		body      string
		handler   http.HandlerFunc
		wantDrift string // "" for none; else a substring of the violation
	}{
		{name: "a documented answer", method: "GET", path: batchPath, handler: answer(200, batchJSON)},
		{name: "a field missing", method: "GET", path: batchPath,
			handler: answer(200, strings.Replace(batchJSON, `"total":2,`, "", 1)), wantDrift: "total"},
		{name: "a status outside the enum", method: "GET", path: batchPath,
			handler: answer(200, strings.Replace(batchJSON, `"running"`, `"busy"`, 1)), wantDrift: "status"},
		{name: "a field of the wrong type", method: "GET", path: batchPath,
			handler: answer(200, strings.Replace(batchJSON, `"total":2`, `"total":"2"`, 1)), wantDrift: "total"},
		{name: "an undocumented field", method: "GET", path: batchPath,
			handler: answer(200, strings.Replace(batchJSON, `"total":2`, `"total":2,"owner":"k"`, 1)), wantDrift: "owner"},
		{name: "an error in another shape", method: "GET", path: batchPath,
			handler: answer(404, `{"error":"not found"}`), wantDrift: "error"},
		{name: "the error shape", method: "GET", path: batchPath,
			handler: answer(404, `{"error":{"code":"not_found","message":"batch: not found","field":""}}`)},
		{name: "429 without Retry-After", method: "GET", path: batchPath,
			handler: answer(429, `{"error":{"code":"rate_limited","message":"slow down","field":""}}`), wantDrift: "Retry-After"},
		{name: "429 with Retry-After", method: "GET", path: batchPath,
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", "3")
				answer(429, `{"error":{"code":"rate_limited","message":"slow down","field":""}}`)(w, r)
			}},
		{name: "an undocumented route answered", method: "GET", path: "/v1/secrets", handler: answer(200, `{}`),
			wantDrift: "no such operation"},
		{name: "an unknown route refused", method: "GET", path: "/v1/secrets",
			handler: answer(404, `{"error":{"code":"not_found","message":"no such endpoint","field":""}}`)},
		{name: "a request the document rejects, accepted", method: "GET", path: "/v1/batches?limit=5000",
			handler: answer(200, `{"batches":[],"next_cursor":null}`), wantDrift: "accepted a request"},
		{name: "a request the document rejects, refused", method: "GET", path: "/v1/batches?limit=5000",
			handler: answer(400, `{"error":{"code":"invalid_query","message":"must be …","field":"limit","fields":[{"code":"invalid_query","field":"limit","message":"must be …"}]}}`)},
		{name: "an undocumented prefix", method: "GET", path: "/assets/app.js", handler: answer(200, `x`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			client, tr, base := setup(t, tt.handler)
			req, err := http.NewRequest(tt.method, base+tt.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			vs := tr.Violations()
			switch {
			case tt.wantDrift == "" && len(vs) > 0:
				t.Errorf("violations %v, want none", vs)
			case tt.wantDrift != "" && len(vs) != 1:
				t.Errorf("violations %v, want one about %q", vs, tt.wantDrift)
			case tt.wantDrift != "" && !strings.Contains(vs[0].String(), tt.wantDrift):
				t.Errorf("violation %q does not mention %q", vs[0], tt.wantDrift)
			}
		})
	}
}

// An event stream is handed on unread: the caller reads events as they come,
// while its status was checked.
func TestTransportEventStream(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	client, tr, base := setup(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		_, _ = w.Write([]byte("id: 1\nevent: snapshot\ndata: " + strings.Join(strings.Fields(batchJSON), "") + "\n\n"))
		w.(http.Flusher).Flush()
		<-release // the stream stays open
	})
	defer close(release)
	resp, err := client.Get(base + batchPath + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || line != "id: 1\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	if vs := tr.Violations(); len(vs) > 0 {
		t.Errorf("violations %v, want none", vs)
	}
}

// The same exchange twice is checked, and reported, once.
func TestTransportReportsARepeatOnce(t *testing.T) {
	t.Parallel()
	client, tr, base := setup(t, answer(200, strings.Replace(batchJSON, `"total":2,`, "", 1)))
	for range 3 {
		resp, err := client.Get(base + batchPath)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if vs := tr.Violations(); len(vs) != 1 {
		t.Errorf("violations %v, want the one drift once", vs)
	}
}
