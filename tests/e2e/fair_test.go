package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// tinySite serves a one-line page for every path.
func tinySite(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/favicon.ico" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!doctype html><title>p</title><p>%s</p>", r.URL.RawQuery)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// done is a batch's jobs in a final status.
func done(b batchResp) int { return b.Counts["succeeded"] + b.Counts["failed"] + b.Counts["canceled"] }

// TestFairSchedulingAcrossKeys: key A submits 1,000 pages, then key B
// submits 5. With one FIFO queue B would wait for all of A's; with the
// dispatcher B's batch completes after a few dozen of A's.
func TestFairSchedulingAcrossKeys(t *testing.T) {
	t.Parallel()
	begin := time.Now()
	s := startStack(t, "SNAPQ_AUTH=on", "SNAPQ_WORKER_CONCURRENCY=4", "SNAPQ_LOG_LEVEL=info")
	keyA, keyB := s.apiKey("alice"), s.apiKey("bob")
	site := tinySite(t)
	auth := func(k string) map[string]string { return map[string]string{"Authorization": "Bearer " + k} }
	opts := map[string]any{"outputs": []string{"text"}, "viewport": map[string]any{"width": 320, "height": 240}}
	urls := func(prefix string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("%s/%s?%d", site, prefix, i)
		}
		return out
	}
	submit := func(key string, body map[string]any) batchResp {
		t.Helper()
		var b batchResp
		if code, _ := s.doWith("POST", "/v1/batches", auth(key), body, &b); code != http.StatusAccepted {
			t.Fatalf("submit: status %d", code)
		}
		return b
	}
	get := func(key, id string) batchResp {
		t.Helper()
		var b batchResp
		if code, _ := s.doWith("GET", "/v1/batches/"+id, auth(key), nil, &b); code != http.StatusOK {
			t.Fatalf("GET batch %s: %d", id, code)
		}
		return b
	}

	a := submit(keyA, map[string]any{"urls": urls("a", 1000), "options": opts})
	// Let A's batch fill the queue and start running before B arrives.
	deadline := time.Now().Add(90 * time.Second)
	for done(get(keyA, a.ID)) < 8 {
		if time.Now().After(deadline) {
			t.Fatalf("A's batch did not start within 90 s: %v", get(keyA, a.ID).Counts)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t0 := time.Now()
	b := submit(keyB, map[string]any{"urls": urls("b", 5), "options": opts})

	var timeline strings.Builder
	fmt.Fprintf(&timeline, "%8s %7s %7s\n", "t", "A done", "B done")
	lastA, lastB := -1, -1
	var aAtB int
	deadline = time.Now().Add(3 * time.Minute)
	for {
		ca, cb := get(keyA, a.ID), get(keyB, b.ID)
		if da, db := done(ca), done(cb); da != lastA || db != lastB {
			fmt.Fprintf(&timeline, "%8s %7d %7d\n", time.Since(t0).Round(10*time.Millisecond), da, db)
			lastA, lastB = da, db
		}
		if cb.Status == "completed" {
			if cb.Counts["succeeded"] != 5 {
				t.Fatalf("B's batch: %v, want 5 succeeded", cb.Counts)
			}
			aAtB = done(ca)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("B's batch not completed within 3 min: A %v, B %v\n%s", ca.Counts, cb.Counts, timeline.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("timeline from B's submission:\n%s", timeline.String())
	t.Logf("B's 5 pages completed %s after submission, when A had %d of 1000 done",
		time.Since(t0).Round(10*time.Millisecond), aAtB)
	if aAtB >= 250 {
		t.Fatalf("B completed only after A had done %d of its 1000 pages; want fewer than 250", aAtB)
	}

	// Canceling A cancels its held jobs too; nothing of A stays unfinished.
	if code, _ := s.doWith("POST", "/v1/batches/"+a.ID+"/cancel", auth(keyA), nil, nil); code != http.StatusOK {
		t.Fatalf("cancel A: %d", code)
	}
	deadline = time.Now().Add(2 * time.Minute)
	for {
		ca := get(keyA, a.ID)
		if done(ca) == 1000 {
			if ca.Counts["canceled"] < 500 || ca.Counts["failed"] != 0 {
				t.Fatalf("A after cancel: %v; want most jobs canceled, none failed", ca.Counts)
			}
			t.Logf("A after cancel: %v", ca.Counts)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("A not settled 2 min after cancel: %v", ca.Counts)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("test took %s", time.Since(begin).Round(100*time.Millisecond))
}
