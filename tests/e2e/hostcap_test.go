package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestHostConcurrencyCapAcrossWorkers: 40 pages of one host, each taking
// 200 ms to serve, with host_concurrency 2 and two worker processes of two
// tabs each: the host never sees more than 2 document requests at once, and
// every job succeeds.
func TestHostConcurrencyCapAcrossWorkers(t *testing.T) {
	t.Parallel()
	begin := time.Now()
	var inFlight, peak, served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/doc/") {
			http.NotFound(w, r)
			return
		}
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
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
	s := startStack(t, "SNAPQ_LOG_LEVEL=info")
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
	b := s.waitBatch(id, 4*time.Minute)
	if b.Counts["succeeded"] != 40 {
		t.Fatalf("batch: %v, want 40 succeeded", b.Counts)
	}
	t.Logf("40 pages in %s; the host saw at most %d document requests at once (%d served)",
		time.Since(t0).Round(10*time.Millisecond), peak.Load(), served.Load())
	if peak.Load() > 2 {
		t.Fatalf("the host saw %d concurrent document requests, the cap is 2", peak.Load())
	}
	if peak.Load() < 2 {
		t.Fatalf("the host never saw 2 requests at once: the cap was not used (peak %d)", peak.Load())
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
