package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"image"
	_ "image/jpeg"
	_ "image/png"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/snapq/snapq/internal/fixtures"
)

type batchResp struct {
	ID     string         `json:"id"`
	Status string         `json:"status"`
	Total  int            `json:"total"`
	Counts map[string]int `json:"counts"`
	Jobs   []jobResp      `json:"jobs"`
}

type jobResp struct {
	ID       string `json:"id"`
	BatchID  string `json:"batch_id"`
	URL      string `json:"url"`
	Name     string `json:"name"`
	Status   string `json:"status"`
	Attempts int    `json:"attempts"`
	Error    *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Result *struct {
		HTTPStatus      int    `json:"http_status"`
		FinalURL        string `json:"final_url"`
		Title           string `json:"title"`
		PageHeight      int    `json:"page_height"`
		BlockedRequests int    `json:"blocked_requests"`
		Segments        struct {
			Total     int  `json:"total"`
			Captured  int  `json:"captured"`
			Truncated bool `json:"truncated"`
		} `json:"segments"`
	} `json:"result"`
	// Preview is the first screenshot, in job lists.
	Preview *struct {
		ArtifactID string `json:"artifact_id"`
		URL        string `json:"url"`
		Width      int    `json:"width"`
		Height     int    `json:"height"`
	} `json:"preview"`
	Artifacts []struct {
		ID          string `json:"id"`
		Kind        string `json:"kind"`
		Name        string `json:"name"`
		ContentType string `json:"content_type"`
		Bytes       int64  `json:"bytes"`
		Width       int    `json:"width"`
		Height      int    `json:"height"`
		SHA256      string `json:"sha256"`
		URL         string `json:"url"`
	} `json:"artifacts"`
}

type errResp struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Field   string `json:"field"`
		Fields  []struct {
			Field string `json:"field"`
		} `json:"fields"`
	} `json:"error"`
}

func fixtureSite(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(fixtures.Handler())
	t.Cleanup(srv.Close)
	return srv.URL
}

func closedPortURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr + "/"
}

// waitRunning waits until some job of the batch is running.
func (s *stack) waitRunning(id string) {
	s.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var cur batchResp
		s.do("GET", "/v1/batches/"+id, nil, &cur)
		if cur.Counts["running"] > 0 {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("no job started within 60 s: %v", cur.Counts)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *stack) waitBatch(id string, timeout time.Duration) batchResp {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	var b batchResp
	for {
		if code := s.do("GET", "/v1/batches/"+id, nil, &b); code != http.StatusOK {
			s.t.Fatalf("GET batch: status %d", code)
		}
		if b.Status == "completed" {
			return b
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("batch %s not completed after %s: %+v", id, timeout, b.Counts)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestBatchEndToEnd(t *testing.T) {
	t.Parallel()
	s := startStack(t)
	site := fixtureSite(t)
	unreachable := closedPortURL(t)

	// A batch with any bad target is rejected whole, naming every bad field.
	var bad errResp
	code := s.do("POST", "/v1/batches", map[string]any{"targets": []map[string]any{
		{"url": site + "/short"}, {"url": "file:///etc/passwd"}, {"url": site + "/x", "options": map[string]any{"viewport": map[string]any{"width": 5}}},
	}}, &bad)
	if code != http.StatusBadRequest || bad.Error.Field != "targets[1].url" || len(bad.Error.Fields) != 2 ||
		bad.Error.Fields[1].Field != "targets[2].options.viewport.width" {
		t.Fatalf("bad batch: status %d, error %+v", code, bad.Error)
	}
	var list struct {
		Batches []batchResp `json:"batches"`
	}
	if s.do("GET", "/v1/batches", nil, &list); len(list.Batches) != 0 {
		t.Fatalf("a rejected batch left %d batches behind", len(list.Batches))
	}
	// Bodies are capped on the bytes read, including junk after the JSON.
	big := append([]byte(`{"urls": ["`+site+`/short"]}`), bytes.Repeat([]byte(" "), 1<<20)...)
	if code := s.do("POST", "/v1/batches", big, &bad); code != http.StatusRequestEntityTooLarge || bad.Error.Code != "body_too_large" {
		t.Fatalf("oversized body: status %d, %+v", code, bad.Error)
	}
	if code := s.do("GET", "/v1/jobs/0190a0a0-0000-7000-8000-0000000000ff", nil, &bad); code != http.StatusNotFound {
		t.Fatalf("missing job: status %d", code)
	}

	var b batchResp
	code = s.do("POST", "/v1/batches", map[string]any{
		"labels": map[string]string{"suite": "e2e"},
		"targets": []map[string]any{
			{"url": site + "/short", "name": "short"},
			{"url": site + "/tall?h=3000", "name": "tall"},
			{"url": site + "/status/404", "name": "missing"},
			{"url": site + "/tall?h=40000", "name": "huge", "options": map[string]any{"screenshot": map[string]any{"max_segments": 10}}},
			{"url": unreachable, "name": "unreachable"},
			{"url": site + "/tall?h=2000", "name": "full-jpeg", "options": map[string]any{"screenshot": map[string]any{"mode": "full", "format": "jpeg", "quality": 70}}},
		},
	}, &b)
	if code != http.StatusAccepted || b.Total != 6 || len(b.Jobs) != 6 || b.Status != "queued" {
		t.Fatalf("submit: status %d, %+v", code, b)
	}
	done := s.waitBatch(b.ID, 4*time.Minute)
	if done.Counts["succeeded"] != 5 || done.Counts["failed"] != 1 {
		t.Fatalf("final counts = %v, want 5 succeeded and 1 failed", done.Counts)
	}

	type want struct {
		status     string
		httpStatus int
		heights    []int // device px of each artifact, in order
		total      int
		truncated  bool
		errCode    string
	}
	wants := map[string]want{
		"short":       {status: "succeeded", httpStatus: 200, heights: []int{720}, total: 1},
		"tall":        {status: "succeeded", httpStatus: 200, heights: []int{720, 720, 720, 720, 120}, total: 5},
		"missing":     {status: "succeeded", httpStatus: 404, heights: []int{720}, total: 1},
		"huge":        {status: "succeeded", httpStatus: 200, heights: []int{720, 720, 720, 720, 720, 720, 720, 720, 720, 720}, total: 56, truncated: true},
		"unreachable": {status: "failed", errCode: "connection_failed"},
		"full-jpeg":   {status: "succeeded", httpStatus: 200, heights: []int{2000}, total: 1},
	}
	for _, j := range b.Jobs {
		w := wants[j.Name]
		var got jobResp
		if code := s.do("GET", "/v1/jobs/"+j.ID, nil, &got); code != http.StatusOK {
			t.Fatalf("GET job %s: %d", j.Name, code)
		}
		if got.Status != w.status {
			t.Errorf("%s: status %q, want %q (error %+v)", j.Name, got.Status, w.status, got.Error)
			continue
		}
		if w.errCode != "" {
			if got.Error == nil || got.Error.Code != w.errCode || got.Error.Message == "" {
				t.Errorf("%s: error %+v, want code %s", j.Name, got.Error, w.errCode)
			}
			if len(got.Artifacts) != 0 {
				t.Errorf("%s: failed job has %d artifacts", j.Name, len(got.Artifacts))
			}
			continue
		}
		if got.Result == nil || got.Result.HTTPStatus != w.httpStatus || got.Result.Segments.Total != w.total ||
			got.Result.Segments.Truncated != w.truncated || got.Result.Segments.Captured != len(w.heights) {
			t.Errorf("%s: result %+v, want http %d, %d of %d segments, truncated %v", j.Name, got.Result, w.httpStatus, len(w.heights), w.total, w.truncated)
		}
		if len(got.Artifacts) != len(w.heights) {
			t.Errorf("%s: %d artifacts, want %d", j.Name, len(got.Artifacts), len(w.heights))
			continue
		}
		for i, a := range got.Artifacts {
			wantName := j.Name + ".png"
			if len(w.heights) > 1 {
				wantName = j.Name + "-" + pad3(i+1) + ".png"
			}
			if j.Name == "full-jpeg" {
				wantName = "full-jpeg.jpg"
			}
			if a.Name != wantName && !(j.Name == "full-jpeg" && a.Name == "full-jpeg.jpeg") {
				t.Errorf("%s: artifact %d named %q, want %q", j.Name, i, a.Name, wantName)
			}
			data := download(t, a.URL)
			sum := sha256.Sum256(data)
			if int64(len(data)) != a.Bytes || hex.EncodeToString(sum[:]) != a.SHA256 {
				t.Errorf("%s/%s: downloaded %d bytes sha256 %x, API says %d bytes %s", j.Name, a.Name, len(data), sum, a.Bytes, a.SHA256)
			}
			cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
			if err != nil {
				t.Errorf("%s/%s: not an image: %v", j.Name, a.Name, err)
				continue
			}
			if cfg.Width != 1280 || cfg.Height != w.heights[i] || a.Width != cfg.Width || a.Height != cfg.Height {
				t.Errorf("%s/%s: image %dx%d (%s), API says %dx%d, want 1280x%d", j.Name, a.Name, cfg.Width, cfg.Height, format, a.Width, a.Height, w.heights[i])
			}
		}
	}
}

func pad3(n int) string { return fmt.Sprintf("%03d", n) }

func itoa(n int) string { return strconv.Itoa(n) }

// download follows the API's 302 to the presigned URL and returns the bytes.
func download(t *testing.T, apiURL string) []byte {
	t.Helper()
	data, _ := downloadWithHeaders(t, apiURL)
	return data
}

// A worker killed mid-batch loses nothing: its tasks come back after the
// lease expires and every job still ends.
func TestWorkerKilledMidBatch(t *testing.T) {
	t.Parallel()
	s := startStack(t)
	site := fixtureSite(t)
	var targets []map[string]any
	for i := range 6 {
		targets = append(targets, map[string]any{"url": site + "/slow?ms=2500&i=" + itoa(i)})
	}
	for i := range 4 {
		targets = append(targets, map[string]any{"url": site + "/tall?h=" + itoa(2000+i*500)})
	}
	var b batchResp
	if code := s.do("POST", "/v1/batches", map[string]any{"targets": targets}, &b); code != http.StatusAccepted {
		t.Fatalf("submit: %d", code)
	}
	// Kill the worker while jobs are running.
	s.waitRunning(b.ID)
	s.stop("worker", syscall.SIGKILL)
	var mid batchResp
	s.do("GET", "/v1/batches/"+b.ID, nil, &mid)
	if mid.Status == "completed" {
		t.Fatalf("batch completed before the kill; the test proves nothing: %v", mid.Counts)
	}
	time.Sleep(time.Second)
	s.start("worker")
	done := s.waitBatch(b.ID, 5*time.Minute)
	if done.Counts["succeeded"] != len(targets) {
		t.Fatalf("after a worker kill: counts %v, want all %d succeeded", done.Counts, len(targets))
	}
	retried := 0
	var jobs struct {
		Jobs []jobResp `json:"jobs"`
	}
	s.do("GET", "/v1/batches/"+b.ID+"/jobs?limit=100", nil, &jobs)
	for _, j := range jobs.Jobs {
		if j.Attempts > 1 {
			retried++
		}
		if j.Preview == nil || j.Preview.Width != 1280 || j.Preview.Height != 720 {
			t.Errorf("job %s in the list: preview %+v, want its first 1280x720 segment", j.Name, j.Preview)
		}
	}
	if len(jobs.Jobs) > 0 && jobs.Jobs[0].Preview != nil {
		img, _, err := image.Decode(bytes.NewReader(download(t, jobs.Jobs[0].Preview.URL)))
		if err != nil || img.Bounds().Dx() != 1280 {
			t.Errorf("preview download: %v", err)
		}
	}
	if retried == 0 {
		t.Errorf("no job shows a second attempt; the kill did not interrupt anything")
	}
	t.Logf("counts before kill %v; %d jobs needed a second attempt", mid.Counts, retried)
}
