package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The MCP client of these tests is one nobody here wrote: the official MCP
// TypeScript SDK (@modelcontextprotocol/sdk, pinned in testdata/mcpclient's
// package-lock.json, installed with npm ci), driven by a short script.

var (
	npmOnce sync.Once
	npmErr  error
)

// mcpClientDir installs the pinned MCP client once per test binary.
func mcpClientDir(t *testing.T) string {
	t.Helper()
	dir, _ := filepath.Abs("testdata/mcpclient")
	if _, err := exec.LookPath("node"); err != nil {
		mcpUnavailable(t, err)
	}
	npmOnce.Do(func() {
		cmd := exec.Command("npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			npmErr = fmt.Errorf("npm ci: %v: %s", err, out)
		}
	})
	if npmErr != nil {
		mcpUnavailable(t, npmErr)
	}
	return dir
}

func mcpUnavailable(t *testing.T, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("node/npm for the MCP client: %v", err)
	}
	t.Skipf("node/npm for the MCP client: %v", err)
}

// mcpRun is what the client script prints.
type mcpRun struct {
	ConnectError *struct {
		Message string `json:"message"`
		Code    any    `json:"code"`
	} `json:"connect_error"`
	Tools []struct {
		Name        string         `json:"name"`
		Description string         `json:"description"`
		InputSchema map[string]any `json:"inputSchema"`
	} `json:"tools"`
	Results []mcpResult `json:"results"`
}

type mcpResult struct {
	IsError bool `json:"isError"`
	Content []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		Data     string `json:"data"`
		MIMEType string `json:"mimeType"`
		URI      string `json:"uri"`
	} `json:"content"`
	StructuredContent map[string]any `json:"structuredContent"`
}

// runMCPClient runs the TypeScript client with cfg (transport, calls).
func runMCPClient(t *testing.T, cfg map[string]any) mcpRun {
	t.Helper()
	dir := mcpClientDir(t)
	raw, _ := json.Marshal(cfg)
	cmd := exec.Command("node", "client.mjs")
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(raw)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("MCP client: %v\nstderr:\n%s", err, errOut.String())
	}
	var run mcpRun
	if err := json.Unmarshal(out.Bytes(), &run); err != nil {
		t.Fatalf("MCP client output %q: %v\nstderr:\n%s", out.String(), err, errOut.String())
	}
	return run
}

// keyedGet GETs an api URL with the key and follows an artifact's redirect
// without it (the presigned URL carries its own signature, and the object
// store refuses a second authentication).
func keyedGet(t *testing.T, url, key string) []byte {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if loc := resp.Header.Get("Location"); resp.StatusCode == http.StatusFound && loc != "" {
		return keyedGet(t, loc, "")
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return b
}

// mcpReference is what the batch API stores for the page: its Markdown and
// its screenshot segments' bytes, in order.
type mcpReference struct {
	markdown string
	shots    [][]byte
}

func batchReference(t *testing.T, s *stack, key, page string) mcpReference {
	t.Helper()
	auth := map[string]string{"Authorization": "Bearer " + key}
	body := map[string]any{"targets": []map[string]any{
		{"url": page, "name": "md", "options": map[string]any{"outputs": []string{"markdown"}}},
		{"url": page, "name": "shot", "options": map[string]any{"outputs": []string{"screenshot"}, "screenshot": map[string]any{"format": "png"}}},
	}}
	var b batchResp
	if code, _ := s.doWith("POST", "/v1/batches", auth, body, &b); code != http.StatusAccepted {
		t.Fatalf("reference batch: %d", code)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for cur := b; cur.Status != "completed"; s.doWith("GET", "/v1/batches/"+b.ID, auth, nil, &cur) {
		if time.Now().After(deadline) {
			t.Fatalf("reference batch not completed: %+v", cur.Counts)
		}
		time.Sleep(300 * time.Millisecond)
	}
	var ref mcpReference
	for _, j := range b.Jobs {
		var job jobResp
		s.doWith("GET", "/v1/jobs/"+j.ID, auth, nil, &job)
		if job.Status != "succeeded" {
			t.Fatalf("reference job %s: %s %+v", j.Name, job.Status, job.Error)
		}
		for _, a := range job.Artifacts { // listed in name order: -001, -002, …
			switch a.Kind {
			case "markdown":
				ref.markdown = string(keyedGet(t, a.URL, key))
			case "screenshot":
				ref.shots = append(ref.shots, keyedGet(t, a.URL, key))
			}
		}
	}
	if ref.markdown == "" || len(ref.shots) < 3 {
		t.Fatalf("reference: %d Markdown chars, %d segments; want a page of 3+ segments", len(ref.markdown), len(ref.shots))
	}
	return ref
}

// An MCP client lists snapq's tools and calls fetch and screenshot over /mcp
// and over `snapq mcp` (stdio): the Markdown and the images are the bytes the
// batch API stores for the same page; a blocked address is a tool error with
// its code; a missing or wrong key is a 401.
func TestMCP(t *testing.T) {
	t.Parallel()
	mcpClientDir(t) // before the stack: a missing node skips (or fails under CI) at once
	s := startStack(t, "SNAPQ_AUTH=on")
	key := s.apiKey("agent")
	site := fixtureSite(t)
	page := site + "/article?n=20"
	ref := batchReference(t, s, key, page)
	blocked := strings.Replace(site, "127.0.0.1", "127.0.0.2", 1) + "/short"
	calls := []map[string]any{
		{"name": "fetch", "arguments": map[string]any{"url": page, "max_chars": 100000}},
		{"name": "screenshot", "arguments": map[string]any{"url": page, "max_images": 2}},
		{"name": "fetch", "arguments": map[string]any{"url": blocked}},
	}

	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"SNAPQ_URL": s.api, "SNAPQ_API_KEY_FILE": keyFile, "PATH": os.Getenv("PATH"),
		"XDG_CONFIG_HOME": t.TempDir()}
	for _, tc := range []struct {
		name string
		cfg  map[string]any
	}{
		{"http", map[string]any{"transport": "http", "url": s.api + "/mcp", "key": key, "calls": calls}},
		{"stdio", map[string]any{"transport": "stdio", "command": snapqCLI(t), "args": []string{"mcp"}, "env": env, "calls": calls}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := runMCPClient(t, tc.cfg)
			if run.ConnectError != nil {
				t.Fatalf("connect: %+v", run.ConnectError)
			}
			checkMCPTools(t, run)
			checkMCPFetch(t, run.Results[0], ref, page)
			checkMCPScreenshot(t, run.Results[1], ref, key)
			checkMCPBlocked(t, run.Results[2])
		})
	}

	t.Run("unauthorized", func(t *testing.T) {
		s := s.as(t)
		for _, k := range []string{"", "sq_" + strings.Repeat("x", 43)} {
			init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
			var e errResp
			h := map[string]string{"Accept": "application/json, text/event-stream"}
			if k != "" {
				h["Authorization"] = "Bearer " + k
			}
			if code, _ := s.doWith("POST", "/mcp", h, []byte(init), &e); code != http.StatusUnauthorized || e.Error.Code != "unauthorized" {
				t.Errorf("key %q: status %d %+v, want 401 unauthorized", k, code, e.Error)
			}
		}
		run := runMCPClient(t, map[string]any{"transport": "http", "url": s.api + "/mcp", "key": "sq_" + strings.Repeat("y", 43)})
		if run.ConnectError == nil || fmt.Sprint(run.ConnectError.Code) != "401" {
			t.Errorf("the TypeScript client with a wrong key: %+v, want a 401 connect error", run.ConnectError)
		}
	})
}

func checkMCPTools(t *testing.T, run mcpRun) {
	t.Helper()
	var names []string
	for _, tool := range run.Tools {
		names = append(names, tool.Name)
		if tool.Description == "" || tool.InputSchema["additionalProperties"] != false {
			t.Errorf("tool %s: description %q, additionalProperties %v; want a description and a closed schema",
				tool.Name, tool.Description, tool.InputSchema["additionalProperties"])
		}
	}
	slices.Sort(names)
	if want := []string{"batch_status", "browser", "browser_help", "capture_batch", "fetch", "pdf", "screenshot"}; !slices.Equal(names, want) {
		t.Errorf("tools %v, want %v", names, want)
	}
	if len(run.Results) != 3 {
		t.Fatalf("%d results, want 3", len(run.Results))
	}
}

func checkMCPFetch(t *testing.T, r mcpResult, ref mcpReference, page string) {
	t.Helper()
	if r.IsError || len(r.Content) != 2 {
		t.Fatalf("fetch: error %v, %d content blocks: %+v", r.IsError, len(r.Content), r.Content)
	}
	if r.Content[1].Text != ref.markdown {
		t.Errorf("fetch's Markdown (%d chars) differs from the batch's artifact (%d chars)", len(r.Content[1].Text), len(ref.markdown))
	}
	head := r.Content[0].Text
	if !strings.Contains(head, "Title: Article") || !strings.Contains(head, "HTTP status: 200") || !strings.Contains(head, "URL: "+page) {
		t.Errorf("fetch's facts: %q", head)
	}
	if r.StructuredContent["http_status"] != float64(200) || r.StructuredContent["truncated"] != false {
		t.Errorf("fetch's structured content: %v", r.StructuredContent)
	}
}

func checkMCPScreenshot(t *testing.T, r mcpResult, ref mcpReference, key string) {
	t.Helper()
	if r.IsError {
		t.Fatalf("screenshot: %+v", r.Content)
	}
	var images, links int
	for _, c := range r.Content {
		switch c.Type {
		case "image":
			raw, err := base64.StdEncoding.DecodeString(c.Data)
			if err != nil || c.MIMEType != "image/png" {
				t.Fatalf("image %d: %s, %v", images, c.MIMEType, err)
			}
			if sha256.Sum256(raw) != sha256.Sum256(ref.shots[images]) {
				t.Errorf("image %d (%d bytes) is not the batch's segment %d (%d bytes)", images+1, len(raw), images+1, len(ref.shots[images]))
			}
			images++
		case "resource_link":
			// A link is the api's artifact URL: with the key, the segment's bytes.
			if got := keyedGet(t, c.URI, key); !bytes.Equal(got, ref.shots[images+links]) {
				t.Errorf("link %s: %d bytes, not the batch's segment %d", c.URI, len(got), images+links+1)
			}
			links++
		}
	}
	if images != 2 || images+links != len(ref.shots) {
		t.Errorf("screenshot: %d images and %d links, want 2 and %d", images, links, len(ref.shots)-2)
	}
}

func checkMCPBlocked(t *testing.T, r mcpResult) {
	t.Helper()
	e, _ := r.StructuredContent["error"].(map[string]any)
	if !r.IsError || e["code"] != "blocked_address" || e["hint"] == "" || len(r.Content) == 0 ||
		!strings.Contains(r.Content[0].Text, "blocked_address") || !strings.Contains(r.Content[0].Text, "hint:") {
		t.Errorf("a blocked address: error %v, %+v, %+v; want a tool error with code blocked_address and a hint", r.IsError, e, r.Content)
	}
}
