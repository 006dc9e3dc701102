package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestHostConcurrencyCapAcrossWorkers: 40 pages of one host, each taking
// 200 ms to serve, with host_concurrency 2 and two worker processes of two
// tabs each: the host never sees more than 2 of the batch's document requests
// at once, and every job succeeds. A synchronous capture of the same host,
// made while the batch's first two pages are held by the server until it
// arrives, runs in the interactive headroom above the cap
// (SNAPQ_INTERACTIVE_HOST_HEADROOM, default 1): the host sees 3 at once, never more.
func TestHostConcurrencyCapAcrossWorkers(t *testing.T) {
	t.Parallel()
	begin := time.Now()
	var inFlight, peak, batchInFlight, batchPeak, served atomic.Int64
	gate := make(chan struct{}) // closed by the synchronous capture's request
	var openGate sync.Once
	track := func(c, p *atomic.Int64) func() {
		n := c.Add(1)
		for old := p.Load(); n > old && !p.CompareAndSwap(old, n); old = p.Load() {
		}
		return func() { c.Add(-1) }
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/doc/") {
			http.NotFound(w, r)
			return
		}
		defer track(&inFlight, &peak)()
		if r.URL.Path == "/doc/sync" {
			openGate.Do(func() { close(gate) })
		} else {
			defer track(&batchInFlight, &batchPeak)()
			select { // held until the synchronous capture came (bounded)
			case <-gate:
			case <-time.After(30 * time.Second):
			}
		}
		served.Add(1)
		time.Sleep(200 * time.Millisecond)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!doctype html><title>%s</title><p>%s</p>", r.URL.Path, r.URL.Path)
	}))
	t.Cleanup(srv.Close)

	// A second worker process: the same binary under another name, so the
	// stack's process table keeps (and stops) both.
	if err := os.Symlink(filepath.Join(binDir, "worker"), filepath.Join(binDir, "worker2")); err != nil && !os.IsExist(err) {
		t.Fatal(err)
	}
	// The lane's own Chromium (the default outside e2e stacks): the held batch
	// pages may fill one worker's batch tabs.
	s := startStack(t, "SNAPQ_LOG_LEVEL=info", "SNAPQ_INTERACTIVE_BROWSER_TABS=1")
	s.start("worker2")

	// Above the server's maximum: 400 naming the field.
	var e errResp
	body := map[string]any{"urls": []string{srv.URL + "/doc/x"}, "options": map[string]any{"host_concurrency": 17}}
	if code := s.do("POST", "/v1/batches", body, &e); code != http.StatusBadRequest || !strings.Contains(e.Error.Field+fmt.Sprint(e.Error.Fields), "options.host_concurrency") {
		t.Fatalf("host_concurrency 17: %d %+v; want 400 naming options.host_concurrency", code, e.Error)
	}

	urls := make([]string, 40)
	for i := range urls {
		urls[i] = fmt.Sprintf("%s/doc/%d", srv.URL, i)
	}
	id := s.submit(map[string]any{"urls": urls, "options": map[string]any{
		"host_concurrency": 2, "outputs": []string{"text"}, "viewport": map[string]any{"width": 320, "height": 240}}})
	t0 := time.Now()
	for batchInFlight.Load() < 2 { // the batch holds the host's cap
		if time.Since(t0) > 2*time.Minute {
			t.Fatalf("the batch never had 2 pages in flight (%d)", batchInFlight.Load())
		}
		time.Sleep(20 * time.Millisecond)
	}
	var syncJob jobResp
	if code := s.do("POST", "/v1/capture", map[string]any{"url": srv.URL + "/doc/sync", "wait_ms": 25000, "options": map[string]any{
		"host_concurrency": 2, "outputs": []string{"text"}, "viewport": map[string]any{"width": 320, "height": 240}}}, &syncJob); code != http.StatusOK || syncJob.Status != "succeeded" {
		t.Fatalf("a synchronous capture of the host while the batch holds its cap: %d %s; want 200 succeeded (the interactive headroom)", code, syncJob.Status)
	}
	b := s.waitBatch(id, 4*time.Minute)
	if b.Counts["succeeded"] != 40 {
		t.Fatalf("batch: %v, want 40 succeeded", b.Counts)
	}
	t.Logf("40 pages and a synchronous capture in %s; the host saw at most %d of the batch's document requests at once, %d in all (%d served)",
		time.Since(t0).Round(10*time.Millisecond), batchPeak.Load(), peak.Load(), served.Load())
	if batchPeak.Load() != 2 {
		t.Fatalf("the host saw at most %d of the batch's requests at once; the cap is 2, and the batch should reach it", batchPeak.Load())
	}
	if peak.Load() != 3 {
		t.Fatalf("the host saw at most %d requests at once; want 3: the batch's cap of 2 and the synchronous capture's headroom of 1", peak.Load())
	}
	// No attempt was used up by waiting for the host.
	var jobs struct {
		Jobs []jobResp `json:"jobs"`
	}
	s.do("GET", "/v1/batches/"+id+"/jobs?limit=100", nil, &jobs)
	for _, j := range jobs.Jobs {
		if j.Attempts != 1 {
			t.Fatalf("job %s took %d attempts, want 1 (a busy host must not count)", j.Name, j.Attempts)
		}
	}
	if len(jobs.Jobs) != 40 {
		t.Fatalf("listed %d jobs", len(jobs.Jobs))
	}
	t.Logf("test took %s", time.Since(begin).Round(100*time.Millisecond))
}
