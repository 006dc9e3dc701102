package web

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/ratelimit"
)

// keysByID knows several keys: sha256 → key id.
type keysByID map[string]string

func (k keysByID) KeyBySHA256(_ context.Context, sum string) (*jobs.APIKey, error) {
	id, ok := k[sum]
	if !ok {
		return nil, jobs.ErrNotFound
	}
	return &jobs.APIKey{ID: id, Prefix: "sq_" + id}, nil
}

func (keysByID) TouchKey(context.Context, string) error { return nil }

const mcpInitialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// mcpPost sends one MCP message to /mcp and returns the status, the session
// id it names and the error code of a JSON error answer.
func mcpPost(t *testing.T, base, method, key, session, body string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest(method, base+MCPPath, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(raw, &e)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), e.Error.Code
}

// /mcp: a key is required; a key holds at most its cap of sessions, and gets
// a slot back when one is closed; a session answers only the key that opened it.
func TestMCPDoorSessions(t *testing.T) {
	t.Parallel()
	keyA, _, _ := jobs.NewAPIKey("a")
	keyB, _, _ := jobs.NewAPIKey("b")
	s := &Server{Service: &jobs.Service{Repo: &fakeRepo{}, Queue: &fakeQueue{}}, Batches: &fakeRepo{},
		Keys:   keysByID{jobs.HashKey(keyA): "ka", jobs.HashKey(keyB): "kb"},
		Budget: ratelimit.NewBudget(nil, map[string]ratelimit.Cap{jobs.WorkMCPSession: {PerKey: 2, RetryAfter: 3 * time.Second}}),
		Config: Config{Auth: true, MaxBodyBytes: 4096}}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)

	for _, key := range []string{"", "sq_" + strings.Repeat("x", 43)} {
		if code, _, ec := mcpPost(t, srv.URL, "POST", key, "", mcpInitialize); code != http.StatusUnauthorized || ec != "unauthorized" {
			t.Errorf("key %q: %d %q, want 401 unauthorized", key, code, ec)
		}
	}
	big := strings.Replace(mcpInitialize, `"name":"t"`, `"name":"`+strings.Repeat("t", 5000)+`"`, 1)
	if code, id, _ := mcpPost(t, srv.URL, "POST", keyA, "", big); code != http.StatusRequestEntityTooLarge || id != "" {
		t.Errorf("an initialize over MaxBodyBytes: %d, session %q; want 413 and none", code, id)
	}
	var sessions []string
	for range 2 {
		code, id, _ := mcpPost(t, srv.URL, "POST", keyA, "", mcpInitialize)
		if code != http.StatusOK || id == "" {
			t.Fatalf("initialize: %d, session %q", code, id)
		}
		sessions = append(sessions, id)
	}
	if code, _, ec := mcpPost(t, srv.URL, "POST", keyA, "", mcpInitialize); code != http.StatusTooManyRequests || ec != codeConcurrencyLimit {
		t.Fatalf("a third session: %d %q, want 429 %s", code, ec, codeConcurrencyLimit)
	}
	if code, id, _ := mcpPost(t, srv.URL, "POST", keyB, "", mcpInitialize); code != http.StatusOK || id == "" {
		t.Fatalf("another key's first session: %d", code)
	}
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	if code, _, _ := mcpPost(t, srv.URL, "POST", keyB, sessions[0], list); code != http.StatusForbidden {
		t.Errorf("key B on key A's session: %d, want 403", code)
	}
	if code, _, _ := mcpPost(t, srv.URL, "POST", keyA, sessions[0], list); code != http.StatusOK {
		t.Errorf("key A on its session: %d, want 200", code)
	}
	if code, _, _ := mcpPost(t, srv.URL, "DELETE", keyA, sessions[0], ""); code != http.StatusNoContent {
		t.Fatalf("DELETE: %d", code)
	}
	// The slot comes back when the session has ended.
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, _, _ := mcpPost(t, srv.URL, "POST", keyA, "", mcpInitialize)
		if code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a DELETE the key still cannot open a session: %d", code)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
