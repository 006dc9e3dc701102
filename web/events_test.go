package web

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/snapq/snapq/events"
	"github.com/snapq/snapq/internal/testenv"
	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/ratelimit"
)

// oneBatch is a store that knows one running batch.
type oneBatch struct {
	fakeRepo
	b *jobs.Batch
	// slow delays every read after the first (the route's own load): a
	// store that is slow while the stream prepares its snapshot.
	slow  time.Duration
	reads atomic.Int32
}

func (o *oneBatch) GetBatch(_ context.Context, id string) (*jobs.Batch, error) {
	if id != o.b.ID {
		return nil, jobs.ErrNotFound
	}
	if o.reads.Add(1) > 1 {
		time.Sleep(o.slow)
	}
	return o.b, nil
}

// A stream starts with the snapshot and heartbeats, with proxy-friendly
// headers; past SNAPQ_SSE_MAX_STREAMS the next one gets 503 too_many_streams
// with Retry-After, before the stream starts.
func TestEventStreamLimit(t *testing.T) {
	t.Parallel()
	db := testenv.Redis(t)
	rdb := redis.NewClient(db.Options())
	t.Cleanup(func() { rdb.Close() })
	b := &jobs.Batch{ID: jobs.NewID(), Total: 2, Counts: jobs.Counts{Queued: 2}, CreatedAt: time.Now()}
	s := &Server{Batches: &oneBatch{b: b}, Events: &events.Hub{Redis: rdb, Block: 100 * time.Millisecond},
		SSE:    SSEConfig{MaxStreams: 1, Heartbeat: 50 * time.Millisecond},
		Config: Config{ListenAddr: "127.0.0.1:8080"}}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	get := func() *http.Response {
		req, _ := http.NewRequest("GET", srv.URL+"/v1/batches/"+b.ID+"/events", nil)
		req.Host = "127.0.0.1:8080"
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	first := get()
	defer first.Body.Close()
	if first.StatusCode != http.StatusOK || first.Header.Get("Cache-Control") != "no-cache" || first.Header.Get("X-Accel-Buffering") != "no" {
		t.Fatalf("first stream: %d %v", first.StatusCode, first.Header)
	}
	sc := bufio.NewScanner(first.Body)
	var lines []string
	for sc.Scan() && len(lines) < 6 {
		lines = append(lines, sc.Text())
	}
	got := strings.Join(lines, "\n")
	if !strings.HasPrefix(got, "id: 0-0\nevent: snapshot\ndata: {\"id\":\""+b.ID) || !strings.Contains(got, ": ping") {
		t.Fatalf("stream:\n%s", got)
	}
	second := get()
	second.Body.Close()
	if second.StatusCode != http.StatusServiceUnavailable || second.Header.Get("Retry-After") == "" {
		t.Fatalf("second stream: %d %v", second.StatusCode, second.Header)
	}
}

// A client that resumes after the last change of a finished batch gets the
// entries after its id, then done, and the stream ends; an unknown batch is 404.
func TestEventStreamResumeFinished(t *testing.T) {
	t.Parallel()
	db := testenv.Redis(t)
	rdb := redis.NewClient(db.Options())
	t.Cleanup(func() { rdb.Close() })
	b := &jobs.Batch{ID: jobs.NewID(), Total: 1, Counts: jobs.Counts{Succeeded: 1}, CreatedAt: time.Now()}
	pub := &events.Publisher{Redis: rdb}
	stream := events.BatchStream(b.ID)
	pub.Publish(context.Background(), stream, false, events.Event{Type: events.TypeJob, Data: events.Job{JobID: "j", Status: "running"}})
	first, _ := (&events.Hub{Redis: rdb}).Tail(context.Background(), stream)
	pub.Publish(context.Background(), stream, true, events.Event{Type: events.TypeJob, Data: events.Job{JobID: "j", Status: "succeeded"}})
	s := &Server{Batches: &oneBatch{b: b}, Events: &events.Hub{Redis: rdb, Block: 100 * time.Millisecond},
		Config: Config{ListenAddr: "127.0.0.1:8080"}}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)

	req, _ := http.NewRequest("GET", srv.URL+"/v1/batches/"+b.ID+"/events?last_event_id="+first, nil)
	req.Host = "127.0.0.1:8080"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var types []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() { // ends when the server closes the stream
		if typ, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			types = append(types, typ)
		}
	}
	if strings.Join(types, ",") != "job,done" {
		t.Fatalf("events after %s: %v", first, types)
	}

	req, _ = http.NewRequest("GET", srv.URL+"/v1/batches/"+jobs.NewID()+"/events", nil)
	req.Host = "127.0.0.1:8080"
	resp2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	if resp2.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown batch: %d", resp2.StatusCode)
	}
}

// The server's read and write timeouts (cmd/api sets a minute each) do not
// end a stream: it keeps its heartbeat well past them.
func TestEventStreamOutlivesServerTimeouts(t *testing.T) {
	t.Parallel()
	db := testenv.Redis(t)
	rdb := redis.NewClient(db.Options())
	t.Cleanup(func() { rdb.Close() })
	b := &jobs.Batch{ID: jobs.NewID(), Total: 1, Counts: jobs.Counts{Queued: 1}, CreatedAt: time.Now()}
	// The snapshot read takes longer than the server's write timeout.
	s := &Server{Batches: &oneBatch{b: b, slow: 500 * time.Millisecond}, Events: &events.Hub{Redis: rdb, Block: 100 * time.Millisecond},
		SSE: SSEConfig{Heartbeat: 50 * time.Millisecond}, Config: Config{ListenAddr: "127.0.0.1:8080"}}
	srv := httptest.NewUnstartedServer(s.Handler())
	srv.Config.ReadTimeout, srv.Config.WriteTimeout = 300*time.Millisecond, 300*time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)
	req, _ := http.NewRequest("GET", srv.URL+"/v1/batches/"+b.ID+"/events", nil)
	req.Host = "127.0.0.1:8080"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	start := time.Now()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if sc.Text() == ": ping" && time.Since(start) > time.Second {
			return // alive at three times the timeouts
		}
	}
	t.Fatalf("the stream ended after %s: %v", time.Since(start), sc.Err())
}

// One key holds at most its share of streams (SNAPQ_SSE_MAX_STREAMS_PER_KEY): the next
// gets 429 concurrency_limit with Retry-After, and a closed stream frees its slot.
// Heartbeats do not reload the batch from Postgres each time: over 12 heartbeats of each
// of two streams the store is read at most 8 times (24 when every heartbeat read it).
func TestEventStreamPerKeyShare(t *testing.T) {
	t.Parallel()
	db := testenv.Redis(t)
	rdb := redis.NewClient(db.Options())
	t.Cleanup(func() { rdb.Close() })
	b := &jobs.Batch{ID: jobs.NewID(), Total: 2, Counts: jobs.Counts{Queued: 2}, CreatedAt: time.Now()}
	store := &oneBatch{b: b}
	s := &Server{Batches: store, Events: &events.Hub{Redis: rdb, Block: 100 * time.Millisecond},
		SSE:    SSEConfig{MaxStreams: 100, Heartbeat: 50 * time.Millisecond},
		Budget: ratelimit.NewBudget(rdb, map[string]ratelimit.Cap{jobs.WorkStream: {PerKey: 2, RetryAfter: 3 * time.Second}}),
		Config: Config{ListenAddr: "127.0.0.1:8080"}}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	get := func() *http.Response {
		req, _ := http.NewRequest("GET", srv.URL+"/v1/batches/"+b.ID+"/events", nil)
		req.Host = "127.0.0.1:8080"
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	first, second := get(), get()
	defer second.Body.Close()
	if first.StatusCode != http.StatusOK || second.StatusCode != http.StatusOK {
		t.Fatalf("streams within the share: %d %d", first.StatusCode, second.StatusCode)
	}
	third := get()
	body, _ := io.ReadAll(third.Body)
	third.Body.Close()
	if third.StatusCode != http.StatusTooManyRequests || third.Header.Get("Retry-After") != "3" || !strings.Contains(string(body), `"code":"concurrency_limit"`) {
		t.Fatalf("a stream past the key's share: %d %v %s", third.StatusCode, third.Header, body)
	}
	// Twelve heartbeats on the first stream.
	before := store.reads.Load()
	sc := bufio.NewScanner(first.Body)
	for pings := 0; pings < 12 && sc.Scan(); {
		if sc.Text() == ": ping" {
			pings++
		}
	}
	// Two streams beat meanwhile: 24 reads before (one per heartbeat), 6 now (one per 4).
	if reads := store.reads.Load() - before; reads > 8 {
		t.Errorf("the batch was read %d times in 12 heartbeats of each of two streams, want at most 8", reads)
	}
	first.Body.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		r := get()
		r.Body.Close()
		if r.StatusCode == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a closed stream's slot is still taken: %d", r.StatusCode)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
