package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/snapq/snapq/client"
)

func TestClip(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in string
		max      int
		want     string
		cut      bool
	}{
		{"short", "héllo", 5, "héllo", false},
		{"cut on characters", "héllo wörld", 5, "héllo\n\n[truncated by snapq: showing the first 5 of 11 characters]", true},
		{"empty", "", 1, "", false},
	} {
		got, cut := clip(tc.in, tc.max)
		if got != tc.want || cut != tc.cut || !utf8.ValidString(got) {
			t.Errorf("%s: clip(%q, %d) = %q, %v; want %q, %v", tc.name, tc.in, tc.max, got, cut, tc.want, tc.cut)
		}
	}
}

func TestErrorResult(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		err        error
		code, hint string
		retry      int
	}{
		{"rate limited", &client.Error{StatusCode: 429, Code: "rate_limited", Message: "slow down", RetryAfter: 1500 * time.Millisecond},
			"rate_limited", "retry after 2 s", 2},
		{"blocked", jobFailed(&client.Job{ID: "j", BatchID: "b", Status: "failed", Error: &client.JobError{Code: "blocked_address", Message: "denied"}}),
			"blocked_address", "use a public URL", 0},
		{"bad field", &client.Error{StatusCode: 400, Code: "invalid_option", Field: "options.viewport.width", Message: "too wide"},
			"invalid_option", "fix the argument options.viewport.width", 0},
		{"api down", fmt.Errorf("dial tcp: connection refused"), "api_unavailable", "could not be reached", 0},
	} {
		res := errorResult(tc.err)
		e, _ := res.StructuredContent.(map[string]any)["error"].(toolError)
		text := res.Content[0].(*sdk.TextContent).Text
		if !res.IsError || e.Code != tc.code || !strings.Contains(e.Hint, tc.hint) || e.RetryAfter != tc.retry ||
			!strings.HasPrefix(text, "snapq error "+tc.code+":") || !strings.Contains(text, "hint: ") {
			t.Errorf("%s: %+v %q; want code %s, hint with %q, retry %d", tc.name, e, text, tc.code, tc.hint, tc.retry)
		}
	}
}

// fakeAPI answers POST /v1/capture with a succeeded job of segments
// screenshots, and serves their bytes.
func fakeAPI(t *testing.T, segments int, size int) *httptest.Server {
	t.Helper()
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v1/artifacts/") {
			w.Header().Set("Content-Type", "image/png")
			fmt.Fprint(w, strings.Repeat(r.URL.Path[len("/v1/artifacts/"):], size/2))
			return
		}
		j := client.Job{ID: "job", BatchID: "batch", URL: "http://a.example/", Status: client.JobSucceeded,
			Result: &client.Result{HTTPStatus: 200, FinalURL: "http://a.example/", Title: "A", Segments: client.SegmentCounts{Total: segments, Captured: segments}}}
		for i := range segments {
			id := fmt.Sprintf("%02d", i+1)
			j.Artifacts = append(j.Artifacts, client.Artifact{ID: id, Kind: "screenshot", Name: "a-0" + id + ".png",
				ContentType: "image/png", Bytes: int64(size - size%2), URL: srv.URL + "/v1/artifacts/" + id})
		}
		_ = json.NewEncoder(w).Encode(j)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// session connects an MCP client, in memory, to a server whose tools call api.
func session(t *testing.T, api string) *sdk.ClientSession {
	t.Helper()
	c, err := client.New(client.Config{BaseURL: api, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewServer(Config{Caller: func(context.Context, *sdk.CallToolRequest) (*client.Client, error) { return c, nil }})
	if err != nil {
		t.Fatal(err)
	}
	st, ct := sdk.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func TestToolsHaveClosedSchemas(t *testing.T) {
	t.Parallel()
	cs := session(t, "http://127.0.0.1:1")
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		raw, _ := json.Marshal(tool.InputSchema)
		if !strings.Contains(string(raw), `"additionalProperties":false`) || tool.Description == "" {
			t.Errorf("%s: schema %s, description %q", tool.Name, raw, tool.Description)
		}
	}
	want := ToolNames()
	slices.Sort(names)
	slices.Sort(want)
	if !slices.Equal(names, want) || len(names) != 7 {
		t.Errorf("tools %v, want %v", names, want)
	}
	bad, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "screenshot", Arguments: map[string]any{"url": "http://a.example/", "max_images": 50}})
	if err != nil || !bad.IsError {
		t.Errorf("max_images 50: %v %+v, want a tool error", err, bad)
	}
}

// A screenshot reply holds at most max_images images, and no more than
// MaxImageBytes of them; the other segments are links.
func TestScreenshotReplyIsBounded(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                string
		segments, size, ask int
		images, links       int
	}{
		{"capped by max_images", 7, 1000, 5, 5, 2},
		{"default", 3, 1000, 0, DefaultImages, 1},
		{"capped by bytes", 4, MaxImageBytes/2 + 10, 4, 1, 3},
	} {
		cs := session(t, fakeAPI(t, tc.segments, tc.size).URL)
		args := map[string]any{"url": "http://a.example/"}
		if tc.ask > 0 {
			args["max_images"] = tc.ask
		}
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "screenshot", Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", tc.name, err, res)
		}
		var images, links int
		for _, c := range res.Content {
			switch c.(type) {
			case *sdk.ImageContent:
				images++
			case *sdk.ResourceLink:
				links++
			}
		}
		if images != tc.images || links != tc.links {
			t.Errorf("%s: %d images, %d links; want %d, %d", tc.name, images, links, tc.images, tc.links)
		}
	}
}

// capture_batch submits the URLs with the outputs asked for (or the default);
// batch_status reports the counts and a line per job, with its failure code.
func TestBatchTools(t *testing.T) {
	t.Parallel()
	const id = "0190a0b0-0000-7000-8000-000000000001"
	var submitted client.BatchRequest
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == "POST" && r.URL.Path == "/v1/batches":
			_ = json.NewDecoder(r.Body).Decode(&submitted)
			w.WriteHeader(http.StatusAccepted)
			_ = json.NewEncoder(w).Encode(client.CreatedBatch{Batch: client.Batch{ID: id, Status: "queued", Total: 2},
				Jobs: make([]client.JobSummary, 2)})
		case r.URL.Path == "/v1/batches/"+id:
			_ = json.NewEncoder(w).Encode(client.Batch{ID: id, Status: "completed", Total: 2, Counts: client.Counts{Succeeded: 1, Failed: 1}})
		case r.URL.Path == "/v1/batches/"+id+"/jobs":
			_ = json.NewEncoder(w).Encode(map[string]any{"jobs": []client.Job{
				{ID: "j1", URL: "http://a.example/", Status: "succeeded", Result: &client.Result{HTTPStatus: 404, Title: "Gone"}},
				{ID: "j2", URL: "http://b.example/", Status: "failed", Error: &client.JobError{Code: "dns_failure", Message: "no such host"}},
			}})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(api.Close)
	cs := session(t, api.URL)
	ctx := context.Background()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "capture_batch",
		Arguments: map[string]any{"urls": []string{"http://a.example/", "http://b.example/"}}})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, id) {
		t.Fatalf("capture_batch: %v %+v", err, res)
	}
	if got := *submitted.Options.Outputs; !slices.Equal(got, []string{"screenshot", "markdown"}) || len(submitted.URLs) != 2 {
		t.Errorf("submitted %v with outputs %v, want the 2 URLs with the default outputs", submitted.URLs, got)
	}
	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "batch_status", Arguments: map[string]any{"batch_id": id}})
	if err != nil || res.IsError {
		t.Fatalf("batch_status: %v %+v", err, res)
	}
	text := res.Content[0].(*sdk.TextContent).Text
	for _, want := range []string{"completed; 2 page(s): 0 queued, 0 running, 1 succeeded, 1 failed", `HTTP 404, "Gone"`, "error dns_failure: no such host"} {
		if !strings.Contains(text, want) {
			t.Errorf("batch_status text lacks %q:\n%s", want, text)
		}
	}
	res, _ = cs.CallTool(ctx, &sdk.CallToolParams{Name: "batch_status", Arguments: map[string]any{"batch_id": "nope"}})
	if !res.IsError {
		t.Errorf("a batch_id that is no id: %+v, want a tool error", res)
	}
}
