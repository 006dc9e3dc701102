package e2e

import (
	"bytes"
	"fmt"
	"image"
	_ "image/png"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Batch options with per-target overrides, stored once per batch (each job keeps only its
// override): the worker captures every target with the merged options. A target without
// options gets the batch's viewport and headers; a target overriding the viewport width
// keeps the batch's height and headers; a target giving its own headers replaces the
// batch's. The images in the bucket, the headers the page received and the options the
// API lists show it.
func TestBatchOptionsWithOverridesEndToEnd(t *testing.T) {
	t.Parallel()
	s := sharedStack(t)
	var mu sync.Mutex
	seen := map[string]http.Header{} // page name -> request headers
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if name := r.URL.Query().Get("name"); name != "" {
			mu.Lock()
			seen[name] = r.Header.Clone()
			mu.Unlock()
		}
		fmt.Fprint(w, `<!doctype html><html><body style="margin:0;background:#def"><h1>shared options</h1></body></html>`)
	}))
	t.Cleanup(site.Close)

	// 20 KB of batch headers, shared by every job.
	headers := map[string]string{}
	for i := range 10 {
		headers[fmt.Sprintf("X-Shared-%02d", i)] = strings.Repeat(string(rune('a'+i)), 2000)
	}
	var b batchResp
	code := s.do("POST", "/v1/batches", map[string]any{
		"options": map[string]any{
			"viewport":   map[string]any{"width": 800, "height": 600},
			"screenshot": map[string]any{"mode": "viewport"},
			"emulate":    map[string]any{"headers": headers},
		},
		"targets": []map[string]any{
			{"url": site.URL + "/?name=plain", "name": "plain"},
			{"url": site.URL + "/?name=narrow", "name": "narrow", "options": map[string]any{"viewport": map[string]any{"width": 500}}},
			{"url": site.URL + "/?name=own", "name": "own", "options": map[string]any{"emulate": map[string]any{"headers": map[string]string{"X-Own": "1"}}}},
		},
	}, &b)
	if code != http.StatusAccepted || len(b.Jobs) != 3 {
		t.Fatalf("submit: status %d, %+v", code, b)
	}
	if done := s.waitBatch(b.ID, 2*time.Minute); done.Counts["succeeded"] != 3 {
		t.Fatalf("counts %v, want 3 succeeded", done.Counts)
	}

	wants := map[string]struct {
		width, height int
		sharedHeaders bool
	}{
		"plain":  {800, 600, true},
		"narrow": {500, 600, true},
		"own":    {800, 600, false},
	}
	for _, j := range b.Jobs {
		w := wants[j.Name]
		var got jobResp
		if code := s.do("GET", "/v1/jobs/"+j.ID, nil, &got); code != http.StatusOK || len(got.Artifacts) != 1 {
			t.Fatalf("GET job %s: %d, %d artifacts", j.Name, code, len(got.Artifacts))
		}
		data := download(t, got.Artifacts[0].URL)
		cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
		if err != nil || cfg.Width != w.width || cfg.Height != w.height {
			t.Errorf("%s: image %dx%d (%v), want %dx%d", j.Name, cfg.Width, cfg.Height, err, w.width, w.height)
		}
		mu.Lock()
		h := seen[j.Name]
		mu.Unlock()
		if gotShared := h.Get("X-Shared-03") == headers["X-Shared-03"]; gotShared != w.sharedHeaders {
			t.Errorf("%s: the page got the batch's headers: %v, want %v", j.Name, gotShared, w.sharedHeaders)
		}
		if own := h.Get("X-Own") == "1"; own == w.sharedHeaders {
			t.Errorf("%s: the page got X-Own: %v, want %v", j.Name, own, !w.sharedHeaders)
		}
	}

	// The job list shows each job's effective options.
	var list struct {
		Jobs []struct {
			Name    string `json:"name"`
			Options struct {
				Viewport struct {
					Width  int `json:"width"`
					Height int `json:"height"`
				} `json:"viewport"`
				Emulate struct {
					Headers map[string]string `json:"headers"`
				} `json:"emulate"`
			} `json:"options"`
		} `json:"jobs"`
	}
	if code := s.do("GET", "/v1/batches/"+b.ID+"/jobs", nil, &list); code != http.StatusOK || len(list.Jobs) != 3 {
		t.Fatalf("list jobs: %d, %d jobs", code, len(list.Jobs))
	}
	for _, j := range list.Jobs {
		w := wants[j.Name]
		o := j.Options
		nHeaders := 1
		if w.sharedHeaders {
			nHeaders = len(headers)
		}
		if o.Viewport.Width != w.width || o.Viewport.Height != w.height || len(o.Emulate.Headers) != nHeaders {
			t.Errorf("%s: listed options viewport %dx%d with %d headers, want %dx%d with %d",
				j.Name, o.Viewport.Width, o.Viewport.Height, len(o.Emulate.Headers), w.width, w.height, nHeaders)
		}
	}
}
