package e2e

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snapq/snapq/internal/testenv"
)

// Issue 30: block.ads through the API, with the worker's ads list given by
// SNAPQ_FILTER_LISTS (a list naming the fixture's ad server, which stands on
// another loopback address as a third party would): the ad server's script
// is never requested, the ad slot is hidden, and the job's result counts
// both; without the option the same page loads the ad.
func TestFilterListBlockingThroughAPI(t *testing.T) {
	t.Parallel()
	var adHits atomic.Int64
	adLn, err := net.Listen("tcp", "127.0.0.3:0")
	if err != nil {
		testenv.Unavailable(t, "a listener on 127.0.0.3", err)
	}
	ads := &httptest.Server{Listener: adLn, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		adHits.Add(1)
		w.Header().Set("Content-Type", "text/javascript")
		fmt.Fprint(w, `document.body.appendChild(document.createElement("b")).className = "ad-loaded";`)
	})}}
	ads.Start()
	t.Cleanup(ads.Close)
	siteLn, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		testenv.Unavailable(t, "a listener on 127.0.0.2", err)
	}
	site := &httptest.Server{Listener: siteLn, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>news</title><div class="ad-slot" style="height:90px">AD</div><h1>Story</h1><script src="%s/prebid.js"></script>`, ads.URL)
	})}}
	site.Start()
	t.Cleanup(site.Close)

	list := filepath.Join(t.TempDir(), "ads.txt")
	if err := os.WriteFile(list, []byte("! test ads list\n||127.0.0.3^$third-party\n##.ad-slot\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startStack(t, "SNAPQ_EGRESS_ALLOW_CIDRS=127.0.0.2/32,127.0.0.3/32", "SNAPQ_FILTER_LISTS=ads="+list)

	run := func(block map[string]any) map[string]map[string]int {
		t.Helper()
		var b batchResp
		body := map[string]any{"targets": []map[string]any{{"url": site.URL + "/", "name": "news"}},
			"options": map[string]any{"block": block, "outputs": []string{"screenshot"}}}
		if code := s.do("POST", "/v1/batches", body, &b); code != http.StatusAccepted {
			t.Fatalf("submit: %d", code)
		}
		s.waitBatch(b.ID, 3*time.Minute)
		var got struct {
			Status string `json:"status"`
			Result struct {
				Blocking map[string]map[string]int `json:"blocking"`
			} `json:"result"`
		}
		s.do("GET", "/v1/jobs/"+b.Jobs[0].ID, nil, &got)
		if got.Status != "succeeded" {
			t.Fatalf("job %s: %s", b.Jobs[0].ID, got.Status)
		}
		return got.Result.Blocking
	}

	blocked := run(map[string]any{"ads": true, "trackers": true})
	if adHits.Load() != 0 {
		t.Errorf("the ad server was requested %d times with block.ads on", adHits.Load())
	}
	if blocked["requests"]["ads"] != 1 || blocked["elements"]["ads"] != 1 || blocked["requests"]["trackers"] != 0 {
		t.Errorf("result.blocking = %v, want 1 ads request and 1 ads element, 0 trackers", blocked)
	}
	plain := run(map[string]any{})
	if adHits.Load() != 1 || plain != nil {
		t.Errorf("without blocking: ad server hit %d times, result.blocking %v; want 1 and none", adHits.Load(), plain)
	}

	var bad map[string]any
	if code := s.do("POST", "/v1/batches", map[string]any{"targets": []map[string]any{{"url": site.URL + "/"}},
		"options": map[string]any{"block": map[string]any{"ads": "yes"}}}, &bad); code != http.StatusBadRequest {
		t.Errorf("block.ads \"yes\": %d, want 400", code)
	}
}
