package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// rawCapture posts a synchronous capture and returns status, headers and body bytes.
func (s *stack) rawCapture(path, accept string, body any) (int, http.Header, []byte) {
	s.t.Helper()
	raw, _ := json.Marshal(body)
	req, err := http.NewRequest("POST", s.api+path, bytes.NewReader(raw))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		s.t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

// POST /v1/capture answers with the job view, or by Accept with the bytes the batch API
// stores for the same job; a 404 page's status is in X-Response-Code; a job not done within
// wait_ms is a 202 with its URL; bad fields are named as in the capture body.
func TestSyncCapture(t *testing.T) {
	t.Parallel()
	s := sharedStack(t)
	site := fixtureSite(t)

	code, h, body := s.rawCapture("/v1/capture", "", map[string]any{"url": site + "/", "name": "home", "wait_ms": 120000})
	var view jobResp
	if err := json.Unmarshal(body, &view); err != nil || code != http.StatusOK || view.Status != "succeeded" {
		t.Fatalf("JSON capture: status %d, %s", code, body)
	}
	if h.Get("X-Response-Code") != "200" || h.Get("X-Response-Status") != "OK" {
		t.Errorf("X-Response-Code %q / Status %q, want 200 / OK", h.Get("X-Response-Code"), h.Get("X-Response-Status"))
	}

	code, h, png := s.rawCapture("/v1/capture?segment=1", "image/png", map[string]any{"url": site + "/", "wait_ms": 120000})
	if code != http.StatusOK || h.Get("Content-Type") != "image/png" || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatalf("PNG capture: status %d, type %q, %d bytes", code, h.Get("Content-Type"), len(png))
	}
	if h.Get("X-Segment-Count") == "" || h.Get("X-Segments-Truncated") != "false" {
		t.Errorf("segment headers %q %q", h.Get("X-Segment-Count"), h.Get("X-Segments-Truncated"))
	}
	var job struct {
		Artifacts []struct {
			ID     string `json:"id"`
			Kind   string `json:"kind"`
			SHA256 string `json:"sha256"`
		} `json:"artifacts"`
		Result struct {
			TimingsMS map[string]int64 `json:"timings_ms"`
		} `json:"result"`
	}
	if code := s.do("GET", "/v1/jobs/"+h.Get("X-Snapq-Job-Id"), nil, &job); code != http.StatusOK || len(job.Artifacts) == 0 {
		t.Fatalf("GET the capture's job: %d, %+v", code, job)
	}
	sum := sha256.Sum256(png)
	if job.Artifacts[0].SHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("the PNG answered is not the stored artifact (sha256 %s vs %s)", hex.EncodeToString(sum[:]), job.Artifacts[0].SHA256)
	}
	// The preview is made after the answer: not a stage of the result, but
	// served a moment later (the worker's next step after completing the job).
	if _, ok := job.Result.TimingsMS["thumbnail"]; ok {
		t.Errorf("a synchronous capture's result has a thumbnail stage (%v): its preview should follow the answer", job.Result.TimingsMS)
	}
	thumb := "/v1/artifacts/" + job.Artifacts[0].ID + "/thumbnail"
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, th := s.get(thumb)
		if resp.StatusCode == http.StatusOK && bytes.HasPrefix(th, []byte("\xff\xd8")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: %d after 30 s; want the JPEG preview made after the answer", thumb, resp.StatusCode)
		}
	}

	code, h, md := s.rawCapture("/v1/capture", "text/markdown", map[string]any{"url": site + "/status/404", "wait_ms": 120000})
	if code != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/markdown") || !strings.Contains(string(md), "404") {
		t.Fatalf("markdown of a 404 page: status %d, type %q, %q", code, h.Get("Content-Type"), md)
	}
	if h.Get("X-Response-Code") != "404" || h.Get("X-Response-Status") != "Not Found" {
		t.Errorf("X-Response-Code %q, want the page's 404", h.Get("X-Response-Code"))
	}

	code, h, body = s.rawCapture("/v1/capture", "", map[string]any{"url": site + "/slow?ms=3000", "wait_ms": 0})
	if code != http.StatusAccepted || h.Get("Retry-After") == "" || !strings.HasPrefix(h.Get("Location"), "/v1/jobs/") {
		t.Fatalf("wait_ms 0: status %d, headers %v, %s", code, h, body)
	}

	for _, tc := range []struct {
		name, field string
		body        map[string]any
	}{
		{"wait too long", "wait_ms", map[string]any{"url": site + "/", "wait_ms": 120001}},
		{"bad url", "url", map[string]any{"url": "ftp://x"}},
		{"bad option", "options.screenshot.mode", map[string]any{"url": site + "/", "options": map[string]any{"screenshot": map[string]any{"mode": "nope"}}}},
		{"unknown field", "bogus", map[string]any{"url": site + "/", "bogus": 1}},
	} {
		var e errResp
		raw, _ := json.Marshal(tc.body)
		if code := s.do("POST", "/v1/capture", raw, &e); code != http.StatusBadRequest || e.Error.Field != tc.field {
			t.Errorf("%s: status %d, field %q, want 400 naming %q", tc.name, code, e.Error.Field, tc.field)
		}
	}
}

// A synchronous capture is answered while another key's batch of slow pages holds every
// batch tab and more wait in the queue: in the lane's own Chromium (the default), and in the
// batch Chromium with one of its two tabs reserved.
func TestSyncCaptureInteractiveLane(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		env  []string
	}{
		{name: "own chromium", env: []string{"SNAPQ_INTERACTIVE_BROWSER_TABS=2", "SNAPQ_BATCH_CHROME_NICE=10"}},
		{name: "reserved tab", env: []string{"SNAPQ_INTERACTIVE_BROWSER_TABS=0", "SNAPQ_INTERACTIVE_TABS=1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			syncBehindBatch(t, startStack(t, tc.env...))
		})
	}
}

// syncBehindBatch submits 12 slow pages, then a synchronous capture, which must be done first.
func syncBehindBatch(t *testing.T, s *stack) {
	site := fixtureSite(t)
	urls := make([]string, 12)
	for i := range urls {
		urls[i] = site + "/slow?ms=4000&n=" + string(rune('a'+i))
	}
	var b batchResp
	if code := s.do("POST", "/v1/batches", map[string]any{"urls": urls}, &b); code != http.StatusAccepted {
		t.Fatalf("submit: %d", code)
	}
	s.waitRunning(b.ID)
	start := time.Now()
	code, _, body := s.rawCapture("/v1/capture", "", map[string]any{"url": site + "/", "wait_ms": 60000})
	took := time.Since(start)
	if code != http.StatusOK {
		t.Fatalf("sync capture behind a batch: status %d, %s", code, body)
	}
	var cur batchResp
	s.do("GET", "/v1/batches/"+b.ID, nil, &cur)
	if cur.Counts["succeeded"] >= len(urls) {
		t.Fatalf("the batch finished first (%v): the lane proved nothing", cur.Counts)
	}
	t.Logf("sync capture behind a 12-page slow batch: %s (batch counts %v)", took, cur.Counts)
}
