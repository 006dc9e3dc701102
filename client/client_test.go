package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/snapq/snapq/jobs"
)

func setup(t *testing.T, h http.Handler) *Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c, err := New(Config{BaseURL: srv.URL, APIKey: "sq_test", PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func apiError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"code": code, "message": msg, "field": ""}})
}

func TestWaitsOut429(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	c := setup(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer sq_test" {
			t.Errorf("Authorization = %q", r.Header.Get("Authorization"))
		}
		body, _ := io.ReadAll(r.Body)
		if string(body) != `{"urls":["http://127.0.0.1/"]}` {
			t.Errorf("body of attempt %d = %s", calls.Load()+1, body)
		}
		if calls.Add(1) < 3 {
			w.Header().Set("Retry-After", "0")
			apiError(w, http.StatusTooManyRequests, "rate_limited", "slow down")
			return
		}
		writeJSON(w, http.StatusAccepted, map[string]any{"id": "b1", "status": "queued", "total": 1,
			"jobs": []map[string]any{{"id": "j1", "url": "http://127.0.0.1/", "name": "x", "status": "queued"}}})
	}))
	b, err := c.CreateBatch(context.Background(), BatchRequest{URLs: []string{"http://127.0.0.1/"}})
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 3 || b.ID != "b1" || len(b.Jobs) != 1 || b.Jobs[0].Name != "x" {
		t.Fatalf("calls %d, batch %+v; want 3 calls and batch b1 with one job", calls.Load(), b)
	}
}

func TestGivesUpOn429(t *testing.T) {
	t.Parallel()
	c := setup(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "3600")
		apiError(w, http.StatusTooManyRequests, "too_many_jobs_in_flight", "wait")
	}))
	start := time.Now()
	_, err := c.GetBatch(context.Background(), "b1")
	var e *Error
	if !errors.As(err, &e) || e.StatusCode != 429 || e.Code != "too_many_jobs_in_flight" || e.RetryAfter != time.Hour {
		t.Fatalf("err = %v, want the 429 with Retry-After 1h", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Error("waited for a Retry-After past MaxRetryWait")
	}

	// A wait within the bound still ends with the context.
	c2 := setup(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "30")
		apiError(w, http.StatusTooManyRequests, "rate_limited", "wait")
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := c2.GetBatch(ctx, "b1"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the context's deadline", err)
	}
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, in string
		want     time.Duration
		ok       bool
	}{
		{"seconds", "7", 7 * time.Second, true},
		{"date", now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{"past date", now.Add(-time.Minute).Format(http.TimeFormat), 0, true},
		{"empty", "", 0, false},
		{"junk", "soon", 0, false},
		{"negative", "-1", 0, false},
	} {
		got, ok := retryAfter(tc.in, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: retryAfter(%q) = %v, %v; want %v, %v", tc.name, tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestTypedErrors(t *testing.T) {
	t.Parallel()
	c := setup(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/batches":
			writeJSON(w, 400, map[string]any{"error": map[string]any{"code": "invalid_url",
				"message": "targets[1].url: must be http or https (and 1 more problems, see fields)", "field": "targets[1].url",
				"fields": []map[string]string{{"code": "invalid_url", "field": "targets[1].url", "message": "must be http or https"},
					{"code": "invalid_option", "field": "options.viewport.width", "message": "must be at most 4096"}}}})
		case "/v1/jobs/j1":
			http.Error(w, "bad gateway", http.StatusBadGateway)
		default:
			apiError(w, 404, "not_found", "batch x: not found")
		}
	}))
	ctx := context.Background()
	_, err := c.CreateBatch(ctx, BatchRequest{URLs: []string{"a", "b"}})
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v, want *Error", err)
	}
	want := &Error{StatusCode: 400, Code: "invalid_url", Field: "targets[1].url",
		Message: "targets[1].url: must be http or https (and 1 more problems, see fields)",
		Fields: []FieldError{{Code: "invalid_url", Field: "targets[1].url", Message: "must be http or https"},
			{Code: "invalid_option", Field: "options.viewport.width", Message: "must be at most 4096"}}}
	if diff := cmp.Diff(want, e); diff != "" {
		t.Errorf("error (-want +got):\n%s", diff)
	}
	if _, err := c.GetBatch(ctx, "x"); !IsNotFound(err) {
		t.Errorf("GetBatch of an unknown id: %v, want a 404", err)
	}
	_, err = c.GetJob(ctx, "j1")
	if !errors.As(err, &e) || e.StatusCode != 502 || e.Code != "http_502" || e.Message != "bad gateway" {
		t.Errorf("a non-JSON error answer: %#v", err)
	}
}

func TestIteratesCursorPages(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var cursors []string
	c := setup(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		mu.Lock()
		cursors = append(cursors, q.Get("cursor"))
		mu.Unlock()
		if q.Get("status") != "failed" || q.Get("limit") != "2" {
			t.Errorf("query %v, want status=failed limit=2", q)
		}
		pages := map[string]map[string]any{
			"":   {"jobs": []map[string]any{{"id": "j1"}, {"id": "j2"}}, "next_cursor": "j2"},
			"j2": {"jobs": []map[string]any{{"id": "j3"}, {"id": "j4"}}, "next_cursor": "j4"},
			"j4": {"jobs": []map[string]any{{"id": "j5"}}, "next_cursor": nil},
		}
		writeJSON(w, 200, pages[q.Get("cursor")])
	}))
	var ids []string
	for j, err := range c.ListJobs(context.Background(), "b1", ListOptions{Status: "failed", Limit: 2}) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.ID)
	}
	if diff := cmp.Diff([]string{"j1", "j2", "j3", "j4", "j5"}, ids); diff != "" {
		t.Errorf("jobs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"", "j2", "j4"}, cursors); diff != "" {
		t.Errorf("cursors sent (-want +got):\n%s", diff)
	}
	// Stopping early fetches no further page.
	cursors = nil
	for j := range c.ListJobs(context.Background(), "b1", ListOptions{Status: "failed", Limit: 2}) {
		if j.ID == "j1" {
			break
		}
	}
	if len(cursors) != 1 {
		t.Errorf("an iteration stopped on the first item fetched %d pages", len(cursors))
	}
}

func TestEventReader(t *testing.T) {
	t.Parallel()
	stream := ": ping\n\nid: 1\nevent: snapshot\ndata: {\"a\":1}\n\n" +
		"id: 2\r\nevent: job\r\ndata: {\"b\":\r\ndata: 2}\r\n\r\n" +
		": ping\n\n" +
		"data: no type, no id\n\n" +
		"id: 4\nevent: done\ndata: {}\n" // no blank line: cut off, dropped
	er := newEventReader(strings.NewReader(stream))
	var got []Event
	for {
		ev, err := er.next()
		if err != nil {
			if err != io.EOF {
				t.Fatal(err)
			}
			break
		}
		got = append(got, ev)
	}
	want := []Event{
		{ID: "1", Type: "snapshot", Data: json.RawMessage(`{"a":1}`)},
		{ID: "2", Type: "job", Data: json.RawMessage("{\"b\":\n2}")},
		{ID: "2", Type: "message", Data: json.RawMessage("no type, no id")},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// sseServer serves the batch stream of one batch in two connections: the
// first is cut after the job event, the second must resume after it.
func TestWaitBatchResumesStream(t *testing.T) {
	t.Parallel()
	var conns atomic.Int32
	c := setup(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/batches/b1/events" || r.Header.Get("Accept") != "text/event-stream" {
			t.Errorf("unexpected %s %s", r.Method, r.URL.Path)
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		switch conns.Add(1) {
		case 1:
			if id := r.Header.Get("Last-Event-ID"); id != "" {
				t.Errorf("first connection sent Last-Event-ID %q", id)
			}
			fmt.Fprint(w, "id: 10\nevent: snapshot\ndata: {\"id\":\"b1\",\"status\":\"queued\",\"total\":2,\"counts\":{\"queued\":2}}\n\n")
			fmt.Fprint(w, ": ping\n\n")
			fmt.Fprint(w, "id: 11\nevent: job\ndata: {\"batch_id\":\"b1\",\"job_id\":\"j1\",\"name\":\"a\",\"status\":\"running\",\"attempt\":1}\n\n")
			// the connection drops here
		case 2:
			if id := r.Header.Get("Last-Event-ID"); id != "11" {
				t.Errorf("reconnect sent Last-Event-ID %q, want 11", id)
			}
			fmt.Fprint(w, "id: 12\nevent: batch\ndata: {\"batch_id\":\"b1\",\"status\":\"running\",\"counts\":{\"queued\":1,\"running\":1}}\n\n")
			fmt.Fprint(w, "id: 13\nevent: job\ndata: {\"batch_id\":\"b1\",\"job_id\":\"j1\",\"name\":\"a\",\"status\":\"failed\",\"attempt\":1,\"error\":{\"code\":\"dns_failure\",\"message\":\"no such host\"}}\n\n")
			fmt.Fprint(w, "id: 14\nevent: done\ndata: {\"id\":\"b1\",\"status\":\"completed\",\"total\":2,\"counts\":{\"succeeded\":1,\"failed\":1}}\n\n")
		default:
			t.Error("a third connection after done")
		}
	}))
	var seen []string
	b, err := c.WaitBatch(context.Background(), "b1", func(e BatchEvent) {
		s := e.ID + " " + e.Type + " " + e.Batch.Status
		if e.Job != nil {
			s += " " + e.Job.JobID + ":" + e.Job.Status
			if e.Job.Error != nil {
				s += ":" + e.Job.Error.Code
			}
		}
		seen = append(seen, s)
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"10 snapshot queued", "11 job queued j1:running", "12 batch running",
		"13 job running j1:failed:dns_failure", "14 done completed"}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if b.Status != "completed" || b.Counts.Failed != 1 || b.Total != 2 {
		t.Errorf("final batch %+v", b)
	}
}

// A stream that goes silent (no event, no heartbeat) is taken as dead and
// reopened from the last event.
func TestWaitBatchReopensSilentStream(t *testing.T) {
	t.Parallel()
	var conns atomic.Int32
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	c := setup(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		if conns.Add(1) == 1 {
			fmt.Fprint(w, "id: a1\nevent: snapshot\ndata: {\"id\":\"b1\",\"status\":\"running\",\"total\":1,\"counts\":{\"running\":1}}\n\n")
			w.(http.Flusher).Flush()
			select { // silent, neither closed nor sending heartbeats
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		if id := r.Header.Get("Last-Event-ID"); id != "a1" {
			t.Errorf("reopened with Last-Event-ID %q, want a1", id)
		}
		fmt.Fprint(w, "id: a2\nevent: done\ndata: {\"id\":\"b1\",\"status\":\"completed\",\"total\":1,\"counts\":{\"succeeded\":1}}\n\n")
	}))
	c.idle = 200 * time.Millisecond
	b, err := c.WaitBatch(context.Background(), "b1", nil)
	if err != nil || b.Status != "completed" || conns.Load() != 2 {
		t.Fatalf("batch %+v, %v after %d connections; want completed after 2", b, err, conns.Load())
	}
}

func TestWaitBatchPollsWithoutStream(t *testing.T) {
	t.Parallel()
	var gets atomic.Int32
	c := setup(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/batches/b1/events": // an api without the stream: its NoRoute answer
			apiError(w, 404, "not_found", "no such endpoint: "+r.URL.Path)
		case "/v1/batches/b1":
			n := gets.Add(1)
			status, counts := "running", map[string]int{"running": 1, "queued": 1}
			if n >= 3 {
				status, counts = "completed", map[string]int{"succeeded": 2}
			}
			writeJSON(w, 200, map[string]any{"id": "b1", "status": status, "total": 2, "counts": counts})
		default:
			http.NotFound(w, r)
		}
	}))
	var polls []string
	b, err := c.WaitBatch(context.Background(), "b1", func(e BatchEvent) { polls = append(polls, e.Type+" "+e.Batch.Status) })
	if err != nil {
		t.Fatal(err)
	}
	if b.Status != "completed" || b.Counts.Succeeded != 2 {
		t.Errorf("batch %+v", b)
	}
	if diff := cmp.Diff([]string{"poll running", "poll completed"}, polls); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}

	// A batch that does not exist is the poll's 404, not a hang.
	c2 := setup(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		apiError(w, 404, "not_found", "batch b2: not found")
	}))
	if _, err := c2.WaitBatch(context.Background(), "b2", nil); !IsNotFound(err) {
		t.Errorf("WaitBatch of an unknown batch: %v", err)
	}
}

func TestWaitStopsOnUnauthorized(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	c := setup(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		apiError(w, 401, "unauthorized", "the API key is not valid")
	}))
	_, err := c.WaitRun(context.Background(), "r1", nil)
	var e *Error
	if !errors.As(err, &e) || e.StatusCode != 401 || calls.Load() != 1 {
		t.Fatalf("err = %v after %d calls, want the 401 at once", err, calls.Load())
	}
}

func TestWaitRunPolls(t *testing.T) {
	t.Parallel()
	var gets atomic.Int32
	c := setup(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/events") {
			w.Header().Set("Content-Type", "text/html") // a catch-all page, not a stream
			fmt.Fprint(w, "<html>")
			return
		}
		status := "running"
		if gets.Add(1) > 1 {
			status = "needs_review"
		}
		writeJSON(w, 200, map[string]any{"id": "r1", "status": status, "counts": map[string]int{"total": 2, "new": 2},
			"comparisons": []map[string]any{{"id": "c1", "target": "home", "status": "new"}}})
	}))
	r, err := c.WaitRun(context.Background(), "r1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != RunNeedsReview || len(r.Comparisons) != 1 || r.Counts.New != 2 {
		t.Errorf("run %+v", r)
	}
}

func TestOpenArtifactDropsKeyOnRedirect(t *testing.T) {
	t.Parallel()
	store := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h := r.Header.Get("Authorization"); h != "" {
			t.Errorf("the object store got Authorization %q", h)
		}
		w.Header().Set("Content-Type", "image/png")
		fmt.Fprint(w, "PNGDATA")
	}))
	t.Cleanup(store.Close)
	c := setup(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/artifacts/a1" {
			http.Redirect(w, r, store.URL+"/bucket/obj?X-Amz-Signature=x", http.StatusFound)
			return
		}
		apiError(w, 404, "not_found", "artifact: not found")
	}))
	var buf strings.Builder
	n, err := c.DownloadArtifact(context.Background(), "a1", &buf)
	if err != nil || n != 7 || buf.String() != "PNGDATA" {
		t.Fatalf("download: %d bytes %q, %v", n, buf.String(), err)
	}
	if _, err := c.DownloadArtifact(context.Background(), "a2", io.Discard); !IsNotFound(err) {
		t.Errorf("unknown artifact: %v", err)
	}
}

// TestOptionsMatchServer holds Options to the server's wire form: the same
// JSON names at every level, so every server option can be set.
func TestOptionsMatchServer(t *testing.T) {
	t.Parallel()
	if diff := cmp.Diff(jsonFields(reflect.TypeOf(jobs.OptionsInput{}), ""), jsonFields(reflect.TypeOf(Options{}), "")); diff != "" {
		t.Errorf("option fields (-server +client):\n%s", diff)
	}
	if diff := cmp.Diff(jsonFields(reflect.TypeOf(jobs.BatchRequest{}), ""), jsonFields(reflect.TypeOf(BatchRequest{}), "")); diff != "" {
		t.Errorf("batch request fields (-server +client):\n%s", diff)
	}
}

// jsonFields lists the JSON paths of t's fields, descending into structs,
// pointers, slices and maps of structs.
func jsonFields(t reflect.Type, prefix string) []string {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t.PkgPath() == "time" {
		return nil
	}
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" || name == "" {
			continue
		}
		out = append(out, prefix+name)
		out = append(out, jsonFields(f.Type, prefix+name+".")...)
	}
	return out
}
