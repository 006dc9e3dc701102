package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// A staging site with a self-signed certificate: refused by default with a permanent
// certificate_error after one attempt (not retried), captured with ignore_https_errors.
// A URL on a port Chromium refuses is rejected at submit, naming the field.
func TestRealSiteCertificatesAndUnsafePorts(t *testing.T) {
	t.Parallel()
	tlsSite := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<!doctype html><title>staging</title><h1>self-signed staging site</h1>`)
	}))
	tlsSite.StartTLS() // on 127.0.0.1, with httptest's self-signed certificate
	t.Cleanup(tlsSite.Close)

	s := startStack(t) // SNAPQ_MAX_RETRY keeps its default (3): a retried failure would show attempts > 1

	var bad errResp
	if code := s.do("POST", "/v1/batches", map[string]any{"targets": []map[string]any{
		{"url": tlsSite.URL + "/"}, {"url": "http://127.0.0.3:1/"},
	}}, &bad); code != http.StatusBadRequest {
		t.Fatalf("unsafe port: status %d, want 400", code)
	}
	if len(bad.Error.Fields) != 1 || bad.Error.Fields[0].Field != "targets[1].url" {
		t.Fatalf("unsafe port: error %+v, want one field targets[1].url", bad.Error)
	}

	var b batchResp
	if code := s.do("POST", "/v1/batches", map[string]any{"targets": []map[string]any{
		{"url": tlsSite.URL + "/", "name": "strict"},
		{"url": tlsSite.URL + "/", "name": "staging", "options": map[string]any{"ignore_https_errors": true}},
	}}, &b); code != http.StatusAccepted {
		t.Fatalf("submit: status %d", code)
	}
	s.waitBatch(b.ID, 90*time.Second)
	for _, j := range b.Jobs {
		var got jobResp
		s.do("GET", "/v1/jobs/"+j.ID, nil, &got)
		switch j.Name {
		case "strict":
			if got.Status != "failed" || got.Error == nil || got.Error.Code != "certificate_error" || got.Attempts != 1 {
				t.Errorf("strict: status %s attempts %d error %+v, want failed certificate_error after 1 attempt", got.Status, got.Attempts, got.Error)
			}
		case "staging":
			if got.Status != "succeeded" || got.Result == nil || got.Result.Title != "staging" || got.Result.HTTPStatus != 200 {
				t.Errorf("staging: status %s error %+v result %+v, want succeeded with title staging", got.Status, got.Error, got.Result)
			}
		}
	}
}
