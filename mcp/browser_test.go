package mcp

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	snapqsession "github.com/snapq/snapq/session"
)

// The schema's verbs are the dispatcher's.
func TestBrowserVerbsAreTheTable(t *testing.T) {
	t.Parallel()
	if got, want := browserVerbs, snapqsession.Verbs(); !slices.Equal(got, want) {
		t.Errorf("browserVerbs %v, want snapqsession.Verbs() %v", got, want)
	}
}

// fakeSessions is the sessions API of one key: it counts the sessions opened and closed and
// answers commands (stale_ref for e999, the command echoed otherwise).
type fakeSessions struct {
	mu             sync.Mutex
	opened, closed []string
	helped         []string
}

func (f *fakeSessions) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case r.Method == "POST" && r.URL.Path == "/v1/sessions":
		id := "s" + string(rune('1'+len(f.opened)))
		f.opened = append(f.opened, id)
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string]any{"id": id, "status": "open"})
	case r.Method == "DELETE":
		f.closed = append(f.closed, strings.TrimPrefix(r.URL.Path, "/v1/sessions/"))
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "closed"})
	case r.URL.Path == "/v1/session-verbs":
		f.helped = append(f.helped, r.URL.Query().Get("verb"))
		_ = json.NewEncoder(w).Encode(map[string]any{"verbs": []any{}, "help": "  click TARGET — click it"})
	case strings.HasSuffix(r.URL.Path, "/commands"):
		var cmd struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		}
		_ = json.NewDecoder(r.Body).Decode(&cmd)
		if cmd.Command == "close" { // the close command ends the session, as DELETE does
			f.closed = append(f.closed, strings.Split(strings.TrimPrefix(r.URL.Path, "/v1/sessions/"), "/")[0])
		}
		reply := map[string]any{"ok": true, "reply": cmd.Command + " " + strings.Join(cmd.Args, " "), "url": "http://a.example/", "title": "A"}
		if slices.Contains(cmd.Args, "e999") {
			reply = map[string]any{"ok": false, "reply": "stale", "error": map[string]any{"code": "stale_ref", "message": "ref e999 is stale"}}
		}
		_ = json.NewEncoder(w).Encode(reply)
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeSessions) counts() (opened, closed []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.opened), slices.Clone(f.closed)
}

// One MCP session opens one snapq session on its first browser call, reuses it, and closes
// it when the MCP session ends; close and help need no new one; a stale ref is a tool error
// with its code.
func TestBrowserSessionPerMCPSession(t *testing.T) {
	t.Parallel()
	f := &fakeSessions{}
	api := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(api.Close)
	cs := session(t, api.URL)
	ctx := context.Background()
	call := func(cmd string, args ...string) *sdk.CallToolResult {
		t.Helper()
		in := map[string]any{"command": cmd}
		if len(args) > 0 {
			in["args"] = args
		}
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "browser", Arguments: in})
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		return res
	}
	if res := call("close"); res.IsError || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, "no browser session") {
		t.Errorf("close before any session: %+v", res)
	}
	call("open", "http://a.example/")
	if res := call("click", "e3"); res.IsError || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, "click e3") {
		t.Errorf("click: %+v", res)
	}
	res := call("click", "e999")
	if e, _ := res.StructuredContent.(map[string]any)["error"].(map[string]any); !res.IsError || e["code"] != "stale_ref" {
		t.Errorf("stale ref: %+v", res)
	}
	if res := call("help", "click"); res.IsError || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, "click TARGET") {
		t.Errorf("help: %+v", res)
	}
	if opened, closed := f.counts(); len(opened) != 1 || len(closed) != 0 {
		t.Fatalf("after 4 commands: opened %v closed %v, want one open", opened, closed)
	}
	call("close")
	call("open", "http://a.example/") // a new session after close
	if opened, closed := f.counts(); len(opened) != 2 || !slices.Equal(closed, []string{"s1"}) {
		t.Fatalf("after close and open: opened %v closed %v", opened, closed)
	}
	cs.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, closed := f.counts(); slices.Equal(closed, []string{"s1", "s2"}) {
			break
		}
		if time.Now().After(deadline) {
			_, closed := f.counts()
			t.Fatalf("after the MCP session ended: closed %v, want s1 and s2", closed)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
