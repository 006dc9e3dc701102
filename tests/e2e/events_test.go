package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/snapq/snapq/internal/fixtures"
	"github.com/snapq/snapq/internal/testenv"
)

// sseEvent is one Server-Sent Event as a client receives it.
type sseEvent struct {
	ID, Type string
	Data     json.RawMessage
}

// sseConn is an open event stream.
type sseConn struct {
	resp   *http.Response
	events chan sseEvent // closed at the end of the stream
	cancel context.CancelFunc
	pings  chan struct{}
}

// openEvents GETs an event stream at base+path with headers; it returns the
// status and, on 200, the connection reading it.
func openEvents(t *testing.T, base, path string, headers map[string]string) (int, *sseConn) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("GET %s: %v", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		cancel()
		return resp.StatusCode, nil
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Errorf("Content-Type %q", ct)
	}
	c := &sseConn{resp: resp, events: make(chan sseEvent, 1000), cancel: cancel, pings: make(chan struct{}, 100)}
	go func() {
		defer close(c.events)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.Type != "" {
					c.events <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, ":"):
				select {
				case c.pings <- struct{}{}:
				default:
				}
			case strings.HasPrefix(line, "id: "):
				ev.ID = line[4:]
			case strings.HasPrefix(line, "event: "):
				ev.Type = line[7:]
			case strings.HasPrefix(line, "data: "):
				ev.Data = json.RawMessage(line[6:])
			}
		}
	}()
	return http.StatusOK, c
}

func (c *sseConn) close() { c.cancel() }

// next returns the next event, failing the test after timeout or at the end
// of the stream.
func (c *sseConn) next(t *testing.T, timeout time.Duration) (sseEvent, bool) {
	t.Helper()
	select {
	case e, ok := <-c.events:
		return e, ok
	case <-time.After(timeout):
		t.Fatalf("no event within %s", timeout)
		return sseEvent{}, false
	}
}

type jobEvent struct {
	BatchID string `json:"batch_id"`
	JobID   string `json:"job_id"`
	Status  string `json:"status"`
	Attempt int    `json:"attempt"`
	At      string `json:"at"`
}

// A client of api replica A follows a batch submitted through replica B and
// processed by the worker: it sees every job transition; disconnected mid-batch
// and reconnected (to B) with Last-Event-ID it misses none and gets none twice;
// another key gets 404; a suite run's stream ends with done.
func TestLiveEvents(t *testing.T) {
	t.Parallel()
	s := startStack(t, "SNAPQ_AUTH=on", "SNAPQ_SSE_HEARTBEAT=1s", "SNAPQ_MAX_RETRY=1")
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	replicaB := "http://127.0.0.1:" + port
	b := &testenv.Procs{BinDir: binDir, LogDir: t.TempDir(),
		Env: append(append([]string(nil), s.procs.Env...), "SNAPQ_HTTP_ADDR=127.0.0.1:"+port)}
	t.Cleanup(b.StopAll)
	if err := b.Start("api"); err != nil {
		t.Fatal(err)
	}
	if err := testenv.WaitReady(replicaB, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	alice, bob := s.apiKey("alice"), s.apiKey("bob")
	auth := func(k string) map[string]string { return map[string]string{"Authorization": "Bearer " + k} }
	site := httptest.NewServer(fixtures.Handler())
	t.Cleanup(site.Close)

	// The worker waits until the client is connected, so the stream holds every transition.
	s.stop("worker", 15)
	urls := []string{}
	for range 7 {
		urls = append(urls, site.URL+"/slow?ms=700")
	}
	urls = append(urls, site.URL+"/status/404", "http://127.0.0.2:9999/blocked") // a result; a refused address
	var batch batchResp
	bs := &stack{t: t, api: replicaB, procs: s.procs, client: contractClient(t, "127.0.0.1:"+port)}
	if code, _ := bs.doWith("POST", "/v1/batches", auth(alice), map[string]any{"urls": urls}, &batch); code != http.StatusAccepted {
		t.Fatalf("submit via replica B: status %d", code)
	}
	path := "/v1/batches/" + batch.ID + "/events"

	var e errResp
	if code, _ := s.doWith("GET", path, auth(bob), nil, &e); code != http.StatusNotFound || e.Error.Code != "not_found" {
		t.Fatalf("another key's batch events: status %d %+v", code, e.Error)
	}
	if code, _ := s.doWith("GET", path, nil, nil, &e); code != http.StatusUnauthorized {
		t.Fatalf("no key: status %d", code)
	}

	code, conn := openEvents(t, s.api, path, auth(alice))
	if code != http.StatusOK {
		t.Fatalf("events on replica A: status %d", code)
	}
	first, _ := conn.next(t, 10*time.Second)
	var snap batchResp
	if first.Type != "snapshot" || json.Unmarshal(first.Data, &snap) != nil || snap.ID != batch.ID || snap.Counts["queued"] != len(urls) {
		t.Fatalf("first event: %s %s", first.Type, first.Data)
	}
	s.start("worker")

	var seen []sseEvent
	ids := map[string]bool{first.ID: true}
	finals := 0
	last := first.ID
	for finals < 4 { // mid-batch: drop the connection
		ev, ok := conn.next(t, 60*time.Second)
		if !ok {
			t.Fatal("stream ended before the batch finished")
		}
		seen = append(seen, ev)
		last = ev.ID
		if ev.Type == "job" {
			var j jobEvent
			_ = json.Unmarshal(ev.Data, &j)
			if j.Status == "succeeded" || j.Status == "failed" {
				finals++
			}
		}
	}
	conn.close()

	// Reconnect to replica B with the dashboard's cookie and Last-Event-ID.
	code, conn = openEvents(t, replicaB, path, map[string]string{"Cookie": "snapq_key=" + alice, "Last-Event-ID": last})
	if code != http.StatusOK {
		t.Fatalf("resume on replica B: status %d", code)
	}
	defer conn.close()
	var done sseEvent
	for {
		ev, ok := conn.next(t, 60*time.Second)
		if !ok {
			t.Fatal("stream ended without done")
		}
		if ev.Type == "snapshot" {
			t.Fatalf("a resumed stream starts with a snapshot: %s", ev.Data)
		}
		if ev.Type == "done" {
			done = ev
			break
		}
		seen = append(seen, ev)
	}
	if _, ok := conn.next(t, 10*time.Second); ok {
		t.Fatal("the server did not close the stream after done")
	}
	var final batchResp
	if json.Unmarshal(done.Data, &final) != nil || final.Status != "completed" || final.Counts["succeeded"] != 8 || final.Counts["failed"] != 1 {
		t.Fatalf("done: %s", done.Data)
	}

	// Every id once, in order; every job's transitions complete and consistent with its final state.
	byJob := map[string][]jobEvent{}
	prev := first.ID
	for _, ev := range seen {
		if ids[ev.ID] {
			t.Fatalf("event id %s twice", ev.ID)
		}
		ids[ev.ID] = true
		if !idAfter(ev.ID, prev) {
			t.Fatalf("event id %s after %s", ev.ID, prev)
		}
		prev = ev.ID
		if ev.Type == "job" {
			var j jobEvent
			if err := json.Unmarshal(ev.Data, &j); err != nil || j.BatchID != batch.ID || j.At == "" {
				t.Fatalf("job event %s: %v", ev.Data, err)
			}
			byJob[j.JobID] = append(byJob[j.JobID], j)
		}
	}
	var list struct {
		Jobs []jobResp `json:"jobs"`
	}
	s.doWith("GET", "/v1/batches/"+batch.ID+"/jobs", auth(alice), nil, &list)
	if len(list.Jobs) != len(urls) {
		t.Fatalf("%d jobs", len(list.Jobs))
	}
	for _, j := range list.Jobs {
		evs := byJob[j.ID]
		want := []string{}
		for a := 1; a <= j.Attempts; a++ {
			want = append(want, "running")
			if a < j.Attempts {
				want = append(want, "retrying")
			}
		}
		want = append(want, j.Status)
		got := []string{}
		for i, e := range evs {
			got = append(got, e.Status)
			if e.Attempt != (i+2)/2 && e.Status != j.Status {
				t.Errorf("job %s event %d: attempt %d", j.URL, i, e.Attempt)
			}
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("job %s (%s, %d attempts): events %v, want %v", j.URL, j.Status, j.Attempts, got, want)
		}
	}

	// A suite run's stream ends with done.
	var suite struct {
		ID string `json:"id"`
	}
	if code, _ := s.doWith("POST", "/v1/suites", auth(alice), map[string]any{"name": "live", "targets": []map[string]any{{"url": site.URL + "/short"}}}, &suite); code != http.StatusCreated {
		t.Fatalf("create suite: status %d", code)
	}
	var run runResp
	if code, _ := s.doWith("POST", "/v1/suites/"+suite.ID+"/runs", auth(alice), map[string]any{}, &run); code != http.StatusAccepted {
		t.Fatalf("start run: status %d", code)
	}
	if code, _ := s.doWith("GET", "/v1/runs/"+run.ID+"/events", auth(bob), nil, &e); code != http.StatusNotFound {
		t.Fatalf("another key's run events: status %d", code)
	}
	code, rc := openEvents(t, s.api, "/v1/runs/"+run.ID+"/events", auth(alice))
	if code != http.StatusOK {
		t.Fatalf("run events: status %d", code)
	}
	defer rc.close()
	types := []string{}
	for {
		ev, ok := rc.next(t, 60*time.Second)
		if !ok {
			t.Fatalf("run stream ended without done: %v", types)
		}
		types = append(types, ev.Type)
		if ev.Type == "done" {
			var r runResp
			if json.Unmarshal(ev.Data, &r) != nil || r.Status != "needs_review" || r.Counts["new"] != 1 {
				t.Fatalf("run done: %s", ev.Data)
			}
			break
		}
	}
	if types[0] != "snapshot" {
		t.Fatalf("run stream: %v", types)
	}
	if _, ok := rc.next(t, 10*time.Second); ok {
		t.Fatal("the server did not close the run stream after done")
	}
}

// idAfter compares stream entry ids "<ms>-<seq>".
func idAfter(a, b string) bool {
	split := func(id string) (int64, int64) {
		x, y, _ := strings.Cut(id, "-")
		var m, n int64
		for _, r := range x {
			m = m*10 + int64(r-'0')
		}
		for _, r := range y {
			n = n*10 + int64(r-'0')
		}
		return m, n
	}
	am, an := split(a)
	bm, bn := split(b)
	return am > bm || (am == bm && an > bn)
}
