package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image/png"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/snapq/snapq/client"
)

// mcpLines is the TypeScript MCP client in its --lines mode: one call at a time, each
// answered before the next is chosen.
type mcpLines struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Scanner
	stderr *bytes.Buffer
}

func startMCPLines(t *testing.T, cfg map[string]any) *mcpLines {
	t.Helper()
	dir := mcpClientDir(t)
	cmd := exec.Command("node", "client.mjs", "--lines")
	cmd.Dir = dir
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 32<<20)
	m := &mcpLines{t: t, cmd: cmd, in: in, out: sc, stderr: &stderr}
	m.send(cfg)
	return m
}

func (m *mcpLines) send(v any) {
	m.t.Helper()
	raw, _ := json.Marshal(v)
	if _, err := m.in.Write(append(raw, '\n')); err != nil {
		m.t.Fatalf("to the MCP client: %v\n%s", err, m.stderr.String())
	}
}

// call calls a tool and returns its result.
func (m *mcpLines) call(name string, args map[string]any) mcpResult {
	m.t.Helper()
	m.send(map[string]any{"name": name, "arguments": args})
	if !m.out.Scan() {
		m.t.Fatalf("the MCP client ended: %v\n%s", m.out.Err(), m.stderr.String())
	}
	var r mcpResult
	if err := json.Unmarshal(m.out.Bytes(), &r); err != nil {
		m.t.Fatalf("MCP client line %q: %v", m.out.Text(), err)
	}
	return r
}

// end closes the client's input: it terminates its MCP session and exits.
func (m *mcpLines) end() {
	m.t.Helper()
	m.in.Close()
	for m.out.Scan() {
		if strings.Contains(m.out.Text(), `"closed":true`) {
			return
		}
	}
	m.t.Fatalf("the MCP client did not close: %s", m.stderr.String())
}

// browse runs one browser command; wantOK says whether it must succeed.
func (m *mcpLines) browse(wantOK bool, command string, args ...string) mcpResult {
	m.t.Helper()
	in := map[string]any{"command": command}
	if len(args) > 0 {
		in["args"] = args
	}
	r := m.call("browser", in)
	if r.IsError == wantOK {
		m.t.Fatalf("browser %s %q: isError %v, want %v: %+v", command, args, r.IsError, !wantOK, r.Content)
	}
	return r
}

func (r mcpResult) text() string {
	if len(r.Content) == 0 {
		return ""
	}
	return r.Content[0].Text
}

func (r mcpResult) errorCode() string {
	e, _ := r.StructuredContent["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

// The journey of TestSessionJourney through the MCP server's browser tool, driven by the
// official MCP TypeScript SDK client over /mcp: log in by refs, follow a link, handle a
// popup, a segmented screenshot (the first segment inline), Markdown, back; a stale ref is a
// tool error stale_ref, a reply over the cap ends with the marker. The MCP session's snapq
// session is closed when the client terminates the MCP session.
func TestSessionMCP(t *testing.T) {
	t.Parallel()
	mcpClientDir(t)
	site := sessionSite(t)
	s := sessionStack(t, "SNAPQ_AUTH=on", "SNAPQ_SESSION_REPLY_BYTES=4096")
	key := s.apiKey("agent")
	c := s.sessionClient(key)
	warm := newSession(t, c, client.SessionOptions{}) // a worker holds session tabs
	if _, err := c.CloseSession(context.Background(), warm.ID); err != nil {
		t.Fatal(err)
	}
	m := startMCPLines(t, map[string]any{"transport": "http", "url": s.api + "/mcp", "key": key})

	if h := m.call("browser_help", map[string]any{}); h.IsError || !strings.Contains(h.text(), "\n  snapshot") ||
		!strings.Contains(h.text(), "tabs [list | select N | close N]") {
		t.Errorf("browser_help: %+v", h)
	}
	r := m.browse(true, "open", site+"/login")
	id, _ := r.StructuredContent["session_id"].(string)
	snap := m.browse(true, "snapshot").text()
	user, pass := refOf(t, snap, "textbox", `"User name"`), refOf(t, snap, "textbox", `"Password"`)
	m.browse(true, "fill", user, "ada")
	m.browse(true, "fill", pass, "s3cret-pass")
	m.browse(true, "check", refOf(t, snap, "checkbox"))
	if r := m.browse(true, "click", refOf(t, snap, "button", "Sign in")); r.StructuredContent["session_id"] != id {
		t.Fatalf("after sign-in: %v, want session %s", r.StructuredContent, id)
	}
	if r := m.browse(false, "click", user); r.errorCode() != "stale_ref" || !strings.Contains(r.text(), "stale_ref") {
		t.Errorf("old ref after the navigation: %+v", r)
	}
	r = m.browse(true, "snapshot")
	snap = r.text()
	if u, _ := r.StructuredContent["url"].(string); !strings.HasSuffix(u, "/account") || !strings.Contains(snap, `heading "Welcome, Ada"`) {
		t.Fatalf("after sign-in: %v", r.StructuredContent)
	}
	if r := m.browse(true, "click", refOf(t, snap, "button", "Open help")); !strings.Contains(r.text(), "2 tabs") {
		t.Errorf("the popup was not announced: %q", r.text())
	}
	if r := m.browse(true, "tabs"); !strings.Contains(r.text(), `1: "Help"`) {
		t.Errorf("tabs: %q", r.text())
	}
	m.browse(true, "tabs", "select", "1")
	if r := m.browse(true, "text"); !strings.Contains(r.text(), "Popup content") {
		t.Errorf("popup text: %q", r.text())
	}
	m.browse(true, "tabs", "close", "1")
	snap = m.browse(true, "snapshot").text()
	m.browse(true, "click", refOf(t, snap, "link", `"Reports"`))
	checkMCPSegments(t, m.browse(true, "screenshot"), key)
	if r := m.browse(true, "markdown"); !strings.Contains(r.text(), "# Reports") || !strings.Contains(r.text(), "Quarterly figure 40") {
		t.Errorf("markdown: %q", r.text())
	}
	if r := m.browse(true, "back"); !strings.HasSuffix(r.StructuredContent["url"].(string), "/account") {
		t.Errorf("back: %v", r.StructuredContent["url"])
	}
	m.browse(true, "open", site+"/big")
	big := m.browse(true, "text")
	if big.StructuredContent["truncated"] != true || !strings.Contains(big.text(), "[truncated: the reply was") {
		t.Errorf("big reply: %v, tail %q", big.StructuredContent["truncated"], tail(big.text()))
	}
	if r := m.browse(false, "click", "e999999"); r.errorCode() != "stale_ref" {
		t.Errorf("unknown ref: %+v", r)
	}
	m.end()
	got := waitSession(t, c, id, time.Minute)
	if got.Status != "closed" || got.CloseReason != "closed_by_client" || got.Commands < 20 {
		t.Errorf("the MCP session's browser session after the client left: %s %s, %d commands", got.Status, got.CloseReason, got.Commands)
	}
	s.checkFeed(id, got.Commands, key)
}

// checkMCPSegments: the screenshot of the tall report is 2+ segments, the first inline (a
// 1280 px wide PNG), the rest as links that give PNGs with the key.
func checkMCPSegments(t *testing.T, r mcpResult, key string) {
	t.Helper()
	arts, _ := r.StructuredContent["artifacts"].([]any)
	if len(arts) < 2 {
		t.Fatalf("screenshot of a 3,600 px page: %d artifacts (%q)", len(arts), r.text())
	}
	var images, links int
	for _, c := range r.Content {
		var raw []byte
		switch c.Type {
		case "image":
			raw, _ = base64.StdEncoding.DecodeString(c.Data)
			images++
		case "resource_link":
			raw = keyedGet(t, c.URI, key)
			links++
		default:
			continue
		}
		img, err := png.Decode(bytes.NewReader(raw))
		if err != nil || img.Bounds().Dx() != 1280 {
			t.Errorf("segment %d: %v", images+links, err)
		}
	}
	if images < 1 || images+links != len(arts) {
		t.Errorf("screenshot: %d images, %d links for %d artifacts", images, links, len(arts))
	}
}
