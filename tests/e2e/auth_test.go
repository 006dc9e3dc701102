package e2e

import (
	"bytes"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// apiKey runs `api keys create` against the stack's database.
func (s *stack) apiKey(name string) string {
	s.t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "api"), "keys", "create", "--name", name)
	cmd.Env = s.procs.Env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		s.t.Fatalf("api keys create: %v: %s", err, errOut.String())
	}
	return strings.TrimSpace(out.String())
}

func TestAuthLimitsIdempotency(t *testing.T) {
	t.Parallel()
	s := startStack(t, "SNAPQ_AUTH=on", "SNAPQ_RATE_LIMIT=1", "SNAPQ_RATE_BURST=15",
		"SNAPQ_CORS_ORIGINS=https://dash.example", "SNAPQ_MAX_BODY_BYTES=2097152")
	keyA, keyB := s.apiKey("alice"), s.apiKey("bob")
	site := fixtureSite(t)
	auth := func(k string) map[string]string { return map[string]string{"Authorization": "Bearer " + k} }
	var e errResp

	if code, h := s.doWith("GET", "/v1/batches", nil, nil, &e); code != http.StatusUnauthorized || e.Error.Code != "unauthorized" || h.Get("WWW-Authenticate") == "" {
		t.Fatalf("no key: %d %+v", code, e.Error)
	}
	if code, _ := s.doWith("GET", "/v1/batches", auth("sq_"+strings.Repeat("x", 43)), nil, &e); code != http.StatusUnauthorized {
		t.Fatalf("unknown key: %d", code)
	}

	// Alice's batch is invisible to Bob.
	body := map[string]any{"urls": []string{site + "/short"}}
	var b batchResp
	if code, _ := s.doWith("POST", "/v1/batches", auth(keyA), body, &b); code != http.StatusAccepted {
		t.Fatalf("alice submit: %d", code)
	}
	if code, _ := s.doWith("GET", "/v1/batches/"+b.ID, auth(keyB), nil, &e); code != http.StatusNotFound {
		t.Fatalf("bob reads alice's batch: %d", code)
	}
	if code, _ := s.doWith("GET", "/v1/jobs/"+b.Jobs[0].ID, auth(keyB), nil, &e); code != http.StatusNotFound {
		t.Fatalf("bob reads alice's job: %d", code)
	}
	var list struct {
		Batches []batchResp `json:"batches"`
	}
	if s.doWith("GET", "/v1/batches", auth(keyB), nil, &list); len(list.Batches) != 0 {
		t.Fatalf("bob lists %d batches", len(list.Batches))
	}
	if code, _ := s.doWith("GET", "/v1/batches/"+b.ID, auth(keyA), nil, &b); code != http.StatusOK {
		t.Fatalf("alice reads her batch: %d", code)
	}

	// Idempotency: same key and body → same batch; another body → 409.
	idem := map[string]string{"Authorization": "Bearer " + keyA, "Idempotency-Key": "nightly-2026-11-30"}
	var b1, b2 batchResp
	s.doWith("POST", "/v1/batches", idem, body, &b1)
	code, h := s.doWith("POST", "/v1/batches", idem, body, &b2)
	if code != http.StatusAccepted || b1.ID == "" || b2.ID != b1.ID || h.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %d, first %s, second %s", code, b1.ID, b2.ID)
	}
	if code, _ := s.doWith("POST", "/v1/batches", idem, map[string]any{"urls": []string{site + "/tall"}}, &e); code != http.StatusConflict || e.Error.Code != "idempotency_conflict" {
		t.Fatalf("same key, other body: %d %+v", code, e.Error)
	}

	// Limits.
	many := make([]string, 1001)
	for i := range many {
		many[i] = site + "/short?i=" + strconv.Itoa(i)
	}
	if code, _ := s.doWith("POST", "/v1/batches", auth(keyA), map[string]any{"urls": many}, &e); code != http.StatusRequestEntityTooLarge || e.Error.Code != "too_many_targets" {
		t.Fatalf("1,001 targets: %d %+v", code, e.Error)
	}
	trailing := []byte(`{"urls": ["` + site + `/short"]} {"urls": []}`)
	if code, _ := s.doWith("POST", "/v1/batches", auth(keyA), trailing, &e); code != http.StatusBadRequest || e.Error.Code != "invalid_json" {
		t.Fatalf("trailing bytes: %d %+v", code, e.Error)
	}
	huge := append([]byte(`{"urls": ["`+site+`/short"], "labels": {"x": "`), bytes.Repeat([]byte("a"), 2<<20)...)
	if code, _ := s.doWith("POST", "/v1/batches", auth(keyA), append(huge, []byte(`"}}`)...), &e); code != http.StatusRequestEntityTooLarge {
		t.Fatalf("2 MiB body: %d %+v", code, e.Error)
	}
	for _, u := range []string{"file:///etc/passwd", "chrome://settings", "view-source:http://x.example/", "data:text/html,hi", "javascript:alert(1)", "ftp://x.example/"} {
		if code, _ := s.doWith("POST", "/v1/batches", auth(keyA), map[string]any{"urls": []string{u}}, &e); code != http.StatusBadRequest || e.Error.Code != "invalid_url" {
			t.Errorf("%s: %d %+v", u, code, e.Error)
		}
	}

	// CORS: only the listed origin is answered.
	_, h = s.doWith("GET", "/healthz", map[string]string{"Origin": "https://dash.example"}, nil, nil)
	if h.Get("Access-Control-Allow-Origin") != "https://dash.example" {
		t.Errorf("allowed origin: ACAO %q", h.Get("Access-Control-Allow-Origin"))
	}
	_, h = s.doWith("GET", "/healthz", map[string]string{"Origin": "https://evil.example"}, nil, nil)
	if h.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("other origin got ACAO %q", h.Get("Access-Control-Allow-Origin"))
	}

	// Rate: Bob's burst runs out (15 requests, 1/s) → 429 with Retry-After; Alice is unaffected.
	limited := false
	for range 30 {
		code, h := s.doWith("GET", "/v1/batches", auth(keyB), nil, &e)
		if code == http.StatusTooManyRequests {
			if ra, err := strconv.Atoi(h.Get("Retry-After")); err != nil || ra < 1 || e.Error.Code != "rate_limited" {
				t.Fatalf("429 without a usable Retry-After: %q %+v", h.Get("Retry-After"), e.Error)
			}
			limited = true
			break
		}
	}
	if !limited {
		t.Fatal("30 requests in a burst of 15 were never limited")
	}

	// A revoked key is refused.
	cmd := exec.Command(filepath.Join(binDir, "api"), "keys", "list")
	cmd.Env = s.procs.Env
	listing, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	var bobID string
	for _, line := range strings.Split(string(listing), "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[2] == "bob" {
			bobID = f[0]
		}
	}
	revoke := exec.Command(filepath.Join(binDir, "api"), "keys", "revoke", bobID)
	revoke.Env = s.procs.Env
	if out, err := revoke.CombinedOutput(); err != nil {
		t.Fatalf("revoke %q: %v %s", bobID, err, out)
	}
	if code, _ := s.doWith("GET", "/v1/batches", auth(keyB), nil, &e); code != http.StatusUnauthorized {
		t.Fatalf("revoked key: %d", code)
	}
}
