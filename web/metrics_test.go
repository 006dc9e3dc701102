package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hibiken/asynq"

	"github.com/snapq/snapq/jobs"
)

// fakeCounts answers fixed job and run counts, or err.
type fakeCounts struct {
	jobs, runs map[string]int64
	err        error
}

func (f *fakeCounts) JobCounts(context.Context) (map[string]int64, error) { return f.jobs, f.err }
func (f *fakeCounts) RunCounts(context.Context) (map[string]int64, error) { return f.runs, f.err }

// fakeInspector knows some queues; block makes every call hang.
type fakeInspector struct {
	infos map[string]*asynq.QueueInfo
	block chan struct{}
}

func (f *fakeInspector) Queues() ([]string, error) {
	if f.block != nil {
		<-f.block
	}
	var qs []string
	for q := range f.infos {
		qs = append(qs, q)
	}
	return qs, nil
}

func (f *fakeInspector) GetQueueInfo(q string) (*asynq.QueueInfo, error) {
	info, ok := f.infos[q]
	if !ok {
		return nil, errors.New("queue not found")
	}
	return info, nil
}

// metricsSetup builds a router with the given auth and metrics mode.
func metricsSetup(t *testing.T, auth bool, cfg MetricsConfig) (http.Handler, string) {
	t.Helper()
	secret, _, err := jobs.NewAPIKey("test")
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewMetrics(cfg)
	if err != nil {
		t.Fatal(err)
	}
	repo := &fakeRepo{}
	s := &Server{Service: &jobs.Service{Repo: repo, Queue: &fakeQueue{}}, Batches: repo,
		Keys: &fakeKeys{sum: jobs.HashKey(secret)}, Metrics: m, Config: Config{Auth: auth, AllowedHosts: testHosts}}
	return s.Handler(), secret
}

func bearer(key string) func(*http.Request) {
	return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+key) }
}

// scrape fetches /metrics and fails unless it answers 200.
func scrape(t *testing.T, h http.Handler, mod func(*http.Request)) string {
	t.Helper()
	rec := get(h, "/metrics", mod)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", rec.Code, rec.Body)
	}
	return rec.Body.String()
}

func wantLines(t *testing.T, body string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !strings.Contains(body, "\n"+l+"\n") {
			t.Errorf("no line %q in the scrape", l)
		}
	}
}

func TestMetricsRequestsByRoutePattern(t *testing.T) {
	t.Parallel()
	h, _ := metricsSetup(t, false, MetricsConfig{})
	ids := []string{"0190a0a0-0000-7000-8000-0000000000aa", "0190a0a0-0000-7000-8000-0000000000bb"}
	for _, id := range ids {
		if rec := get(h, "/v1/jobs/"+id, nil); rec.Code != http.StatusNotFound {
			t.Fatalf("GET /v1/jobs/%s: %d", id, rec.Code)
		}
	}
	for _, p := range []string{"/no/such/path-1", "/no/such/path-2", "/v1/jobs/x/y"} {
		get(h, p, nil)
	}
	body := scrape(t, h, nil)
	wantLines(t, body,
		`snapq_http_requests_total{method="GET",route="/v1/jobs/:id",status="404"} 2`,
		`snapq_http_request_duration_seconds_count{method="GET",route="/v1/jobs/:id"} 2`,
		`snapq_http_requests_total{method="GET",route="unmatched",status="404"} 3`,
	)
	for _, raw := range append(ids, "path-1", "/v1/jobs/x") {
		if strings.Contains(body, raw) {
			t.Errorf("the scrape names a raw path %q; labels must be route patterns", raw)
		}
	}
	// Go runtime and process collectors are registered.
	for _, name := range []string{"go_goroutines ", "process_resident_memory_bytes "} {
		if !strings.Contains(body, "\n"+name) {
			t.Errorf("no %s metric", strings.TrimSpace(name))
		}
	}
}

func TestMetricsGauges(t *testing.T) {
	t.Parallel()
	counts := &fakeCounts{jobs: map[string]int64{"succeeded": 7, "queued": 2}, runs: map[string]int64{"needs_review": 1}}
	queues := &fakeInspector{infos: map[string]*asynq.QueueInfo{
		"capture":    {Pending: 3, Active: 2, Retry: 1, Latency: 90 * time.Second},
		"regression": {Scheduled: 4, Archived: 5},
	}}
	h, _ := metricsSetup(t, false, MetricsConfig{Counts: counts, Queues: queues})
	wantLines(t, scrape(t, h, nil),
		`snapq_jobs{status="succeeded"} 7`,
		`snapq_jobs{status="queued"} 2`,
		`snapq_jobs{status="canceled"} 0`,
		`snapq_runs{status="needs_review"} 1`,
		`snapq_runs{status="passed"} 0`,
		`snapq_queue_tasks{queue="capture",state="pending"} 3`,
		`snapq_queue_latency_seconds{queue="capture"} 90`,
		`snapq_queue_latency_seconds{queue="webhooks"} 0`,
		`snapq_queue_tasks{queue="capture",state="active"} 2`,
		`snapq_queue_tasks{queue="capture",state="retry"} 1`,
		`snapq_queue_tasks{queue="regression",state="scheduled"} 4`,
		`snapq_queue_tasks{queue="regression",state="archived"} 5`,
		`snapq_queue_tasks{queue="webhooks",state="pending"} 0`, // never created: 0, not an error
		`snapq_scrape_error{source="jobs"} 0`,
		`snapq_scrape_error{source="runs"} 0`,
		`snapq_scrape_error{source="queues"} 0`,
	)
}

// A source that fails or hangs is reported, and the rest of the scrape
// still answers within the timeout.
func TestMetricsScrapeErrors(t *testing.T) {
	t.Parallel()
	block := make(chan struct{})
	t.Cleanup(func() { close(block) })
	counts := &fakeCounts{err: errors.New("postgres is down")}
	h, _ := metricsSetup(t, false, MetricsConfig{Counts: counts, Queues: &fakeInspector{block: block},
		ScrapeTimeout: 100 * time.Millisecond})
	start := time.Now()
	body := scrape(t, h, nil)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the scrape took %v with a hanging source; want the 100 ms timeout", d)
	}
	wantLines(t, body,
		`snapq_scrape_error{source="jobs"} 1`,
		`snapq_scrape_error{source="runs"} 1`,
		`snapq_scrape_error{source="queues"} 1`,
	)
	for _, name := range []string{"snapq_jobs{", "snapq_runs{", "snapq_queue_tasks{"} {
		if strings.Contains(body, name) {
			t.Errorf("%s reported although its source failed", name)
		}
	}
	if !strings.Contains(body, "\ngo_goroutines ") {
		t.Error("a failing source dropped the rest of the scrape")
	}
}

func TestMetricsAccess(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		auth       bool
		mode       string
		key        string // "valid", "wrong" or "" (none)
		wantStatus int
	}{
		{name: "auth on, no key", auth: true, mode: MetricsOn, wantStatus: http.StatusUnauthorized},
		{name: "auth on, wrong key", auth: true, mode: MetricsOn, key: "wrong", wantStatus: http.StatusUnauthorized},
		{name: "auth on, valid key", auth: true, mode: MetricsOn, key: "valid", wantStatus: http.StatusOK},
		{name: "default mode is on", auth: true, mode: "", wantStatus: http.StatusUnauthorized},
		{name: "auth off", auth: false, mode: MetricsOn, wantStatus: http.StatusOK},
		{name: "public with auth on", auth: true, mode: MetricsPublic, wantStatus: http.StatusOK},
		{name: "off is not mounted", auth: false, mode: MetricsOff, wantStatus: http.StatusNotFound},
		{name: "off with a key", auth: true, mode: MetricsOff, key: "valid", wantStatus: http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h, secret := metricsSetup(t, tt.auth, MetricsConfig{Mode: tt.mode})
			var mod func(*http.Request)
			switch tt.key {
			case "valid":
				mod = bearer(secret)
			case "wrong":
				other, _, _ := jobs.NewAPIKey("other")
				mod = bearer(other)
			}
			rec := get(h, "/metrics", mod)
			if rec.Code != tt.wantStatus {
				t.Fatalf("GET /metrics = %d %s; want %d", rec.Code, rec.Body, tt.wantStatus)
			}
			if tt.wantStatus == http.StatusOK && !strings.Contains(rec.Body.String(), "\ngo_goroutines ") {
				t.Errorf("not a scrape:\n%.500s", rec.Body)
			}
			if tt.wantStatus == http.StatusUnauthorized && rec.Header().Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
		})
	}
}

func TestParseMetricsMode(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"": MetricsOn, "on": MetricsOn, "off": MetricsOff, "public": MetricsPublic} {
		if got, err := ParseMetricsMode(in); got != want || err != nil {
			t.Errorf("ParseMetricsMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseMetricsMode("yes"); err == nil {
		t.Error(`ParseMetricsMode("yes") accepted`)
	}
}

// With shards, each kind's gauges are the sum of its shards (and of the plain
// queue workers still drain); latency is the oldest of any shard.
func TestMetricsSumShards(t *testing.T) {
	t.Parallel()
	queues := &fakeInspector{infos: map[string]*asynq.QueueInfo{
		"capture-00":  {Pending: 3, Active: 1, Latency: 5 * time.Second},
		"capture-01":  {Pending: 4, Retry: 2, Latency: 40 * time.Second},
		"capture":     {Pending: 1},
		"webhooks-01": {Archived: 2},
		"capture-02":  {Pending: 100}, // not a shard with 2 shards: not counted
	}}
	h, _ := metricsSetup(t, false, MetricsConfig{Queues: queues, QueueShards: 2})
	body := scrape(t, h, nil)
	wantLines(t, body,
		`snapq_queue_tasks{queue="capture",state="pending"} 8`,
		`snapq_queue_tasks{queue="capture",state="active"} 1`,
		`snapq_queue_tasks{queue="capture",state="retry"} 2`,
		`snapq_queue_latency_seconds{queue="capture"} 40`,
		`snapq_queue_tasks{queue="webhooks",state="archived"} 2`,
		`snapq_queue_tasks{queue="regression",state="pending"} 0`,
	)
	if strings.Contains(body, `queue="capture-0`) {
		t.Error("a shard is reported on its own; the gauges are per kind")
	}
}

// GET /v1/queues gives any key the counts per kind, summed over shards, and
// no task of anyone.
func TestQueueCountsEndpoint(t *testing.T) {
	t.Parallel()
	secret, _, err := jobs.NewAPIKey("test")
	if err != nil {
		t.Fatal(err)
	}
	repo := &fakeRepo{}
	ins := &fakeInspector{infos: map[string]*asynq.QueueInfo{
		"capture-00": {Pending: 2, Latency: 3 * time.Second}, "capture-02": {Active: 5}, "regression-01": {Scheduled: 1},
	}}
	s := &Server{Service: &jobs.Service{Repo: repo, Queue: &fakeQueue{}}, Batches: repo, Keys: &fakeKeys{sum: jobs.HashKey(secret)},
		QueueInspector: ins, QueueShards: 4, Config: Config{Auth: true, AllowedHosts: testHosts}}
	h := s.Handler()
	if rec := get(h, "/v1/queues", nil); rec.Code != http.StatusUnauthorized {
		t.Errorf("GET /v1/queues without a key = %d, want 401", rec.Code)
	}
	rec := get(h, "/v1/queues", bearer(secret))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /v1/queues = %d %s", rec.Code, rec.Body)
	}
	var got queueList
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := queueList{Queues: []QueueCounts{
		{Name: "capture", Shards: 4, Pending: 2, Active: 5, LatencySeconds: 3},
		{Name: "regression", Shards: 4, Scheduled: 1},
		{Name: "webhooks", Shards: 4},
		{Name: "reports", Shards: 4},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GET /v1/queues (-want +got):\n%s", diff)
	}
}
