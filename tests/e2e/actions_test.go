package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A job with actions fills a search form, submits it with Enter, takes a named screenshot of
// the results and evaluates an expression; the named image is an artifact, the result's log
// has one entry per action and the evaluation is in the result.
func TestActionsEndToEnd(t *testing.T) {
	t.Parallel()
	s := sharedStack(t)
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><html><body><form action="/results"><input id="q" name="q"></form></body></html>`)
	})
	mux.HandleFunc("/results", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<!doctype html><html><head><title>results</title></head><body><h1 id="r">results for %s</h1></body></html>`,
			strings.ReplaceAll(r.URL.Query().Get("q"), "<", ""))
	})
	site := httptest.NewServer(mux) // 127.0.0.1
	t.Cleanup(site.Close)

	var bad errResp
	code := s.do("POST", "/v1/batches", map[string]any{"urls": []string{site.URL + "/"},
		"options": map[string]any{"actions": []map[string]any{{"type": "press", "key": "F13"}}}}, &bad)
	if code != http.StatusBadRequest || bad.Error.Field != "options.actions[0].key" {
		t.Fatalf("bad key: status %d, error %+v", code, bad.Error)
	}

	actions := []map[string]any{
		{"type": "type", "selector": "#q", "text": "kittens"},
		{"type": "press", "key": "Enter"},
		{"type": "wait_for_navigation", "timeout_ms": 10000},
		{"type": "screenshot", "name": "results"},
		{"type": "click", "selector": "#nope", "timeout_ms": 200, "optional": true},
		{"type": "evaluate", "expression": `document.getElementById("r").textContent`},
	}
	var b batchResp
	code = s.do("POST", "/v1/batches", map[string]any{
		"targets": []map[string]any{{"url": site.URL + "/", "name": "search"}},
		"options": map[string]any{"viewport": map[string]any{"width": 500, "height": 400},
			"screenshot": map[string]any{"mode": "viewport"}, "actions": actions},
	}, &b)
	if code != http.StatusAccepted || len(b.Jobs) != 1 {
		t.Fatalf("submit: status %d, %+v", code, b)
	}
	if done := s.waitBatch(b.ID, 2*time.Minute); done.Counts["succeeded"] != 1 {
		t.Fatalf("counts %v, want 1 succeeded", done.Counts)
	}
	var job struct {
		jobResp
		Result struct {
			FinalURL string `json:"final_url"`
			Log      []struct {
				Index  int    `json:"index"`
				Type   string `json:"type"`
				Target string `json:"target"`
				OK     bool   `json:"ok"`
				Error  string `json:"error"`
			} `json:"log"`
			LogTruncated bool `json:"log_truncated"`
			Evaluations  []struct {
				Index int    `json:"index"`
				Value string `json:"value"`
			} `json:"evaluations"`
		} `json:"result"`
	}
	if code := s.do("GET", "/v1/jobs/"+b.Jobs[0].ID, nil, &job); code != http.StatusOK {
		t.Fatalf("GET job: %d", code)
	}
	r := job.Result
	if len(r.Log) != len(actions) || r.LogTruncated {
		t.Fatalf("log has %d entries (truncated %v), want %d: %+v", len(r.Log), r.LogTruncated, len(actions), r.Log)
	}
	for i, e := range r.Log {
		wantOK := i != 4
		if e.Index != i || e.Type != actions[i]["type"] || e.OK != wantOK {
			t.Errorf("log[%d] = %+v, want index %d type %v ok %v", i, e, i, actions[i]["type"], wantOK)
		}
	}
	if !strings.Contains(r.Log[4].Error, "#nope") {
		t.Errorf("optional click error %q", r.Log[4].Error)
	}
	if len(r.Evaluations) != 1 || r.Evaluations[0].Index != 5 || r.Evaluations[0].Value != "results for kittens" {
		t.Errorf("evaluations %+v", r.Evaluations)
	}
	if !strings.Contains(r.FinalURL, "/results?q=kittens") {
		t.Errorf("final_url %q", r.FinalURL)
	}
	sizes := map[string][2]int{}
	for _, a := range job.Artifacts {
		sizes[a.Name] = [2]int{a.Width, a.Height}
		if a.Name == "search-results.png" {
			if data := download(t, a.URL); int64(len(data)) != a.Bytes {
				t.Errorf("downloaded %d bytes, API says %d", len(data), a.Bytes)
			}
		}
	}
	want := map[string][2]int{"search-results.png": {500, 400}, "search.png": {500, 400}}
	if fmt.Sprint(sizes) != fmt.Sprint(want) {
		t.Errorf("artifacts %v, want %v", sizes, want)
	}
}
