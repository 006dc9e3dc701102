package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snapq/snapq/internal/testenv"
)

// blPrefix is the Browserless-compatible endpoints' default prefix.
const blPrefix = "/compat/browserless"

// browserless posts a Browserless body to the compat prefix and returns status, headers and bytes.
func (s *stack) browserless(path string, headers map[string]string, body any) (int, http.Header, []byte) {
	s.t.Helper()
	raw, _ := json.Marshal(body)
	req, err := http.NewRequest("POST", s.api+blPrefix+path, bytes.NewReader(raw))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		s.t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

// storedSHA returns the sha256 the batch API records for the job's artifact of kind.
func (s *stack) storedSHA(key, jobID, kind string) string {
	s.t.Helper()
	var job struct {
		Artifacts []struct {
			Kind   string `json:"kind"`
			SHA256 string `json:"sha256"`
		} `json:"artifacts"`
	}
	if code, _ := s.doWith("GET", "/v1/jobs/"+jobID, map[string]string{"Authorization": "Bearer " + key}, nil, &job); code != http.StatusOK {
		s.t.Fatalf("GET /v1/jobs/%s: %d", jobID, code)
	}
	for _, a := range job.Artifacts {
		if a.Kind == kind {
			return a.SHA256
		}
	}
	s.t.Fatalf("job %s has no %s artifact: %+v", jobID, kind, job.Artifacts)
	return ""
}

func sha(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// The Browserless-compatible endpoints answer bytes the batch API stores, carry the target's
// status in X-Response-Code, take the key as ?token=, the body's token or a bearer header,
// refuse what snapq does not do with a 400 naming the field, fail a blocked address with its
// code, and pass the key's in-flight cap.
func TestBrowserlessCompat(t *testing.T) {
	t.Parallel()
	s := startStack(t, "SNAPQ_AUTH=on", "SNAPQ_MAX_JOBS_IN_FLIGHT=1")
	key := s.apiKey("agent")
	site := fixtureSite(t)
	bearer := map[string]string{"Authorization": "Bearer " + key}
	var e errResp

	if code, _, body := s.browserless("/content", nil, map[string]any{"url": site + "/"}); code != http.StatusUnauthorized {
		t.Fatalf("no key: status %d, %s", code, body)
	}

	code, h, html := s.browserless("/content?timeout=120000&token="+key, nil, map[string]any{"url": site + "/", "gotoOptions": map[string]any{"waitUntil": "load"}})
	if code != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/html") || !bytes.Contains(html, []byte("<html")) {
		t.Fatalf("content with ?token=: status %d, type %q, %.200s", code, h.Get("Content-Type"), html)
	}
	if h.Get("X-Response-Code") != "200" || h.Get("X-Response-URL") != site+"/" {
		t.Errorf("X-Response-Code %q, X-Response-URL %q", h.Get("X-Response-Code"), h.Get("X-Response-URL"))
	}
	if got := s.storedSHA(key, h.Get("X-Snapq-Job-Id"), "html"); got != sha(html) {
		t.Errorf("the HTML answered is not the stored artifact")
	}

	code, h, jpeg := s.browserless("/chromium/screenshot", nil, map[string]any{"url": site + "/status/404", "token": key,
		"options": map[string]any{"type": "jpeg", "quality": 60}, "viewport": map[string]any{"width": 640, "height": 480}})
	if code != http.StatusOK || h.Get("Content-Type") != "image/jpeg" || !bytes.HasPrefix(jpeg, []byte{0xff, 0xd8}) {
		t.Fatalf("screenshot of a 404 page: status %d, type %q, %d bytes", code, h.Get("Content-Type"), len(jpeg))
	}
	if h.Get("X-Response-Code") != "404" || h.Get("X-Response-Status") != "Not Found" {
		t.Errorf("X-Response-Code %q / %q, want the page's 404", h.Get("X-Response-Code"), h.Get("X-Response-Status"))
	}

	code, h, pdf := s.browserless("/pdf", bearer, map[string]any{"url": site + "/", "options": map[string]any{"format": "A4", "printBackground": true}})
	if code != http.StatusOK || h.Get("Content-Type") != "application/pdf" || !bytes.HasPrefix(pdf, []byte("%PDF-")) {
		t.Fatalf("pdf: status %d, type %q, %.20q", code, h.Get("Content-Type"), pdf)
	}

	for _, tc := range []struct {
		name, path, code, field string
		body                    map[string]any
	}{
		{"html", "/content", "refused_field", "html", map[string]any{"html": "<p>hi</p>"}},
		{"addScriptTag", "/content", "refused_field", "addScriptTag", map[string]any{"url": site + "/", "addScriptTag": []any{map[string]any{"content": "1"}}}},
		{"clip", "/screenshot", "refused_field", "options.clip", map[string]any{"url": site + "/", "options": map[string]any{"clip": map[string]any{"x": 0, "y": 0, "width": 5, "height": 5}}}},
		{"unknown", "/content", "unknown_field", "bogus", map[string]any{"url": site + "/", "bogus": true}},
		{"snapq's own check", "/screenshot", "invalid_option", "viewport.width", map[string]any{"url": site + "/", "viewport": map[string]any{"width": 5, "height": 600}}},
	} {
		raw, _ := json.Marshal(tc.body)
		code, _, body := s.browserless(tc.path, bearer, json.RawMessage(raw))
		e = errResp{}
		if err := json.Unmarshal(body, &e); err != nil || code != http.StatusBadRequest || e.Error.Code != tc.code || e.Error.Field != tc.field {
			t.Errorf("%s: status %d, %s; want 400 %s naming %q", tc.name, code, body, tc.code, tc.field)
		}
	}

	code, _, body := s.browserless("/content", bearer, map[string]any{"url": "http://127.0.0.3:8081/"})
	if json.Unmarshal(body, &e) != nil || code != http.StatusBadGateway || e.Error.Code != "blocked_address" {
		t.Errorf("a blocked address: status %d, %s; want 502 blocked_address", code, body)
	}

	// The key's one job in flight is a slow sync capture: the next request is refused before any work.
	if code, _, body := s.rawCaptureAs(key, map[string]any{"url": site + "/slow?ms=8000", "wait_ms": 0}); code != http.StatusAccepted {
		t.Fatalf("slow capture: %d, %s", code, body)
	}
	code, h, body = s.browserless("/content", bearer, map[string]any{"url": site + "/"})
	if json.Unmarshal(body, &e) != nil || code != http.StatusTooManyRequests || e.Error.Code != "too_many_jobs_in_flight" || h.Get("Retry-After") == "" {
		t.Errorf("over the in-flight cap: status %d, %s; want 429 too_many_jobs_in_flight with Retry-After", code, body)
	}
}

// rawCaptureAs posts POST /v1/capture with a key.
func (s *stack) rawCaptureAs(key string, body any) (int, http.Header, []byte) {
	s.t.Helper()
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", s.api+"/v1/capture", bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := s.client.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

// DeerFlow's Browserless client (tests/e2e/testdata/deerflow, unchanged), pointed at the compat
// prefix, fetches the HTML and a screenshot the batch API stores for the same jobs, reads the
// target's 404 from X-Response-Code, and reports snapq's refusal as an error string.
func TestBrowserlessDeerFlowClient(t *testing.T) {
	t.Parallel()
	python := "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import httpx").Run(); err != nil {
		testenv.Unavailable(t, "Debian's python3 with python3-httpx", err)
	}
	s := startStack(t, "SNAPQ_AUTH=on")
	key := s.apiKey("deerflow")
	site := fixtureSite(t)
	out := t.TempDir()
	cmd := exec.Command(python, filepath.Join("testdata", "deerflow", "run.py"), s.api+blPrefix, key, site+"/", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("run.py: %v\n%s", err, b)
	}
	var res struct {
		Fetch, Fetch404 struct{ Code, Status, Error string }
		Screenshot      struct {
			Code        string `json:"code"`
			ContentType string `json:"content_type"`
			FinalURL    string `json:"final_url"`
			Error       string `json:"error"`
		}
		Refused string
	}
	raw, err := os.ReadFile(filepath.Join(out, "result.json"))
	if err != nil || json.Unmarshal(raw, &res) != nil {
		t.Fatalf("result.json: %v %s", err, raw)
	}
	if res.Fetch.Code != "200" || res.Fetch.Status != "OK" || res.Fetch404.Code != "404" || res.Fetch404.Status != "Not Found" {
		t.Errorf("target statuses seen by the client: %+v / %+v, want 200 OK / 404 Not Found", res.Fetch, res.Fetch404)
	}
	if res.Screenshot.Code != "200" || res.Screenshot.ContentType != "image/png" || res.Screenshot.FinalURL != site+"/" {
		t.Errorf("screenshot result %+v", res.Screenshot)
	}
	if !strings.HasPrefix(res.Refused, "Error: Browserless HTTP 400") || !strings.Contains(res.Refused, "rejectResourceTypes") {
		t.Errorf("refused request: %q, want the client's HTTP 400 error naming rejectResourceTypes", res.Refused)
	}
	html, err1 := os.ReadFile(filepath.Join(out, "content.html"))
	png, err2 := os.ReadFile(filepath.Join(out, "shot.png"))
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	// The same bytes as the batch API's artifacts of the page's jobs.
	if got := s.artifactSHAOf(key, site+"/", "html"); got != sha(html) {
		t.Errorf("the client's HTML (%d bytes) is not the stored html artifact", len(html))
	}
	if got := s.artifactSHAOf(key, site+"/", "screenshot"); got != sha(png) || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Errorf("the client's PNG (%d bytes) is not the stored screenshot", len(png))
	}
}

// artifactSHAOf returns the sha256 of the artifact of kind of the key's job of url, found
// through the batch API.
func (s *stack) artifactSHAOf(key, url, kind string) string {
	s.t.Helper()
	auth := map[string]string{"Authorization": "Bearer " + key}
	var list struct {
		Batches []batchResp `json:"batches"`
	}
	s.doWith("GET", "/v1/batches", auth, nil, &list)
	for _, b := range list.Batches {
		var jobs struct {
			Jobs []jobResp `json:"jobs"`
		}
		s.doWith("GET", "/v1/batches/"+b.ID+"/jobs", auth, nil, &jobs)
		for _, j := range jobs.Jobs {
			var view struct {
				Artifacts []struct {
					Kind   string `json:"kind"`
					SHA256 string `json:"sha256"`
				} `json:"artifacts"`
			}
			if j.URL != url {
				continue
			}
			s.doWith("GET", "/v1/jobs/"+j.ID, auth, nil, &view)
			for _, a := range view.Artifacts {
				if a.Kind == kind {
					return a.SHA256
				}
			}
		}
	}
	return ""
}
