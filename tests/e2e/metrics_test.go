package e2e

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/snapq/snapq/internal/testenv"
)

// After a two-page batch, the api's /metrics counts the jobs and the batch
// request by route, and the worker's /metrics counts two successful captures.
func TestMetrics(t *testing.T) {
	t.Parallel()
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	workerMetrics := "http://127.0.0.1:" + port + "/metrics"
	s := startStack(t, "SNAPQ_METRICS_ADDR=127.0.0.1:"+port)
	site := fixtureSite(t)

	var b batchResp
	if code := s.do("POST", "/v1/batches", map[string]any{"targets": []map[string]any{
		{"url": site + "/short"}, {"url": site + "/tall?h=1500"},
	}}, &b); code != http.StatusAccepted {
		t.Fatalf("submit: %d", code)
	}
	if done := s.waitBatch(b.ID, 2*time.Minute); done.Counts["succeeded"] != 2 {
		t.Fatalf("batch counts %v, want 2 succeeded", done.Counts)
	}

	api := scrapeMetrics(t, s.api+"/metrics")
	if !hasLine(api, `snapq_jobs{status="succeeded"} 2`) {
		t.Errorf("api metrics lack snapq_jobs{status=\"succeeded\"} 2:\n%s", grepLines(api, "snapq_jobs"))
	}
	if !hasLinePrefix(api, "snapq_http_requests_total{", `route="/v1/batches"`, `status="202"`) {
		t.Errorf("api metrics lack the 202 of POST /v1/batches:\n%s", grepLines(api, "snapq_http_requests_total"))
	}
	if strings.Contains(api, b.ID) {
		t.Error("a batch id appears in the api metrics; routes must be patterns")
	}

	// The worker counts an attempt when its handler returns, a moment after
	// the job's row is final.
	deadline := time.Now().Add(10 * time.Second)
	for {
		worker := scrapeMetrics(t, workerMetrics)
		if hasLine(worker, `snapq_worker_jobs_total{outcome="succeeded"} 2`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("worker metrics lack snapq_worker_jobs_total{outcome=\"succeeded\"} 2:\n%s",
				grepLines(worker, "snapq_worker_jobs_total"))
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Each stage of the two attempts is timed once: in the histogram, and in
	// the jobs' timings_ms for the stages before the commit.
	worker := scrapeMetrics(t, workerMetrics)
	for _, stage := range []string{"queue", "slot", "tab", "navigate", "wait", "capture", "reset", "upload", "commit", "events"} {
		if !hasLine(worker, `snapq_worker_stage_seconds_count{stage="`+stage+`"} 2`) {
			t.Errorf("worker metrics lack snapq_worker_stage_seconds_count{stage=%q} 2:\n%s", stage,
				grepLines(worker, "snapq_worker_stage_seconds_count"))
		}
	}
	// One screenshot call a job: /short is one segment, /tall's three are cut from one band.
	if !hasLine(worker, `snapq_worker_stage_seconds_count{stage="capture_band"} 2`) {
		t.Errorf("worker metrics lack snapq_worker_stage_seconds_count{stage=\"capture_band\"} 2:\n%s",
			grepLines(worker, "snapq_worker_stage_seconds_count"))
	}
	var list struct {
		Jobs []struct {
			Result struct {
				TimingsMS map[string]int64 `json:"timings_ms"`
			} `json:"result"`
		} `json:"jobs"`
	}
	if code := s.do("GET", "/v1/batches/"+b.ID+"/jobs", nil, &list); code != http.StatusOK || len(list.Jobs) != 2 {
		t.Fatalf("jobs: %d, %d jobs", code, len(list.Jobs))
	}
	for _, j := range list.Jobs {
		for _, stage := range []string{"queue", "start", "slot", "tab", "navigate", "wait", "capture", "encode", "reset", "upload", "total"} {
			if _, ok := j.Result.TimingsMS[stage]; !ok {
				t.Errorf("a job's timings_ms %v lack %q", j.Result.TimingsMS, stage)
			}
		}
	}
}

// scrapeMetrics GETs a Prometheus endpoint and returns its text.
func scrapeMetrics(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return string(body)
}

func hasLine(body, line string) bool {
	for l := range strings.Lines(body) {
		if strings.TrimRight(l, "\n") == line {
			return true
		}
	}
	return false
}

// hasLinePrefix reports whether a line starts with prefix and contains every part.
func hasLinePrefix(body, prefix string, parts ...string) bool {
	for l := range strings.Lines(body) {
		if !strings.HasPrefix(l, prefix) {
			continue
		}
		all := true
		for _, p := range parts {
			all = all && strings.Contains(l, p)
		}
		if all {
			return true
		}
	}
	return false
}

func grepLines(body, prefix string) string {
	var out []string
	for l := range strings.Lines(body) {
		if strings.HasPrefix(l, prefix) {
			out = append(out, strings.TrimRight(l, "\n"))
		}
	}
	return strings.Join(out, "\n")
}
