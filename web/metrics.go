package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/regression"
)

// MetricsPath is where the Prometheus metrics are served.
const MetricsPath = "/metrics"

// Metrics modes (SNAPQ_METRICS).
const (
	// MetricsOn serves /metrics; with auth on it takes a valid API key as
	// Bearer token (the default).
	MetricsOn = "on"
	// MetricsOff does not mount /metrics and records no request metrics.
	MetricsOff = "off"
	// MetricsPublic serves /metrics without a key even with auth on, for
	// scrapers on a private network.
	MetricsPublic = "public"
)

// defaultScrapeTimeout bounds each scrape-time read (Postgres, Redis).
const defaultScrapeTimeout = 2 * time.Second

// unmatchedRoute is the route label of requests that matched no route, so
// arbitrary paths cannot create new series.
const unmatchedRoute = "unmatched"

// StatusCounter counts jobs and regression runs by status. store.Store
// implements it.
type StatusCounter interface {
	JobCounts(ctx context.Context) (map[string]int64, error)
	RunCounts(ctx context.Context) (map[string]int64, error)
}

// StorageCounter reads the storage figures. store.Store implements it.
type StorageCounter interface {
	StorageStats(ctx context.Context) (*jobs.StorageStats, error)
}

// QueueInspector is the part of *asynq.Inspector the queue gauges read.
type QueueInspector interface {
	Queues() ([]string, error)
	GetQueueInfo(queue string) (*asynq.QueueInfo, error)
}

// MetricsConfig configures the api's Prometheus metrics.
type MetricsConfig struct {
	// Mode is MetricsOn, MetricsOff or MetricsPublic ("" means on).
	Mode string
	// Counts feeds snapq_jobs and snapq_runs; nil: not reported.
	Counts StatusCounter
	// Storage feeds the snapq_storage_* gauges; nil: not reported.
	Storage StorageCounter
	// Queues feeds snapq_queue_tasks; nil: not reported.
	Queues QueueInspector
	// QueueShards is SNAPQ_QUEUE_SHARDS: each kind's gauges sum its shards.
	QueueShards int
	// ScrapeTimeout bounds each source read at scrape time (default 2 s).
	ScrapeTimeout time.Duration
	// Collectors are registered too (the live events' publisher and hub).
	Collectors []prometheus.Collector
}

// Metrics holds the api's own Prometheus registry: request counters and
// durations, job/run/queue gauges read at scrape time, and the Go runtime and
// process collectors. Set it as Server.Metrics.
type Metrics struct {
	mode     string
	registry *prometheus.Registry
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	// limitErrors counts requests let through because a rate limiter could
	// not answer (limiterDown).
	limitErrors *prometheus.CounterVec
}

// ParseMetricsMode checks a SNAPQ_METRICS value; "" is on.
func ParseMetricsMode(v string) (string, error) {
	switch v {
	case "":
		return MetricsOn, nil
	case MetricsOn, MetricsOff, MetricsPublic:
		return v, nil
	}
	return "", fmt.Errorf("SNAPQ_METRICS=%q: want on, off or public", v)
}

// NewMetrics builds the registry and its collectors.
func NewMetrics(cfg MetricsConfig) (*Metrics, error) {
	mode, err := ParseMetricsMode(cfg.Mode)
	if err != nil {
		return nil, err
	}
	m := &Metrics{
		mode:     mode,
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "snapq_http_requests_total",
			Help: "HTTP requests answered by the api, by method, route pattern and status code."},
			[]string{"method", "route", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "snapq_http_request_duration_seconds",
			Help: "Time to answer HTTP requests, by method and route pattern.", Buckets: prometheus.DefBuckets},
			[]string{"method", "route"}),
		limitErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "snapq_rate_limit_errors_total",
			Help: "Requests let through unlimited because a rate limiter (requests, auth_failures) could not reach Redis."},
			[]string{"limiter"}),
	}
	for _, l := range []string{"requests", "auth_failures"} {
		m.limitErrors.WithLabelValues(l) // reported as 0 until the first error
	}
	timeout := cfg.ScrapeTimeout
	if timeout <= 0 {
		timeout = defaultScrapeTimeout
	}
	err = errors.Join(
		m.registry.Register(m.requests),
		m.registry.Register(m.duration),
		m.registry.Register(m.limitErrors),
		m.registry.Register(&stateCollector{counts: cfg.Counts, storage: cfg.Storage, queues: cfg.Queues, shards: cfg.QueueShards, timeout: timeout}),
		m.registry.Register(collectors.NewGoCollector()),
		m.registry.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})),
	)
	for _, c := range cfg.Collectors {
		err = errors.Join(err, m.registry.Register(c))
	}
	if err != nil {
		return nil, fmt.Errorf("register metrics: %w", err)
	}
	return m, nil
}

// enabled reports whether metrics are on (in either mode).
func (m *Metrics) enabled() bool { return m != nil && m.mode != MetricsOff }

// limiterError counts one request let through by a failing limiter.
func (m *Metrics) limiterError(limiter string) {
	if m.enabled() {
		m.limitErrors.WithLabelValues(limiter).Inc()
	}
}

// observeRequests counts every request and its duration by route pattern
// (c.FullPath()), never by raw path: ids would make a series each.
func (s *Server) observeRequests(c *gin.Context) {
	m := s.Metrics
	if !m.enabled() {
		return
	}
	start := time.Now()
	c.Next()
	route := c.FullPath()
	if route == "" {
		route = unmatchedRoute
	}
	method := methodLabel(c.Request.Method)
	m.requests.WithLabelValues(method, route, strconv.Itoa(c.Writer.Status())).Inc()
	m.duration.WithLabelValues(method, route).Observe(time.Since(start).Seconds())
}

// methodLabel keeps the method label to the standard methods.
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions:
		return method
	}
	return "OTHER"
}

// mountMetrics serves GET /metrics unless metrics are off. With auth on and
// mode on, it takes a valid API key as Bearer token (authenticate).
func (s *Server) mountMetrics(r *gin.Engine) {
	m := s.Metrics
	if !m.enabled() {
		return
	}
	h := gin.WrapH(promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	if m.mode == MetricsPublic {
		r.GET(MetricsPath, s.h(s.rateLimit), h) // per client address
		return
	}
	r.GET(MetricsPath, s.h(s.limitAuthFailures(s.authenticate)), s.h(s.rateLimit), h)
}

var (
	jobsDesc = prometheus.NewDesc("snapq_jobs",
		"Capture jobs by status, counted in Postgres at scrape time.", []string{"status"}, nil)
	artifactBytesDesc = prometheus.NewDesc("snapq_artifact_bytes",
		"Bytes of the artifacts rows list, by kind, a shared object counted once per row (Postgres, at scrape time).", []string{"kind"}, nil)
	storageObjectsDesc = prometheus.NewDesc("snapq_storage_objects",
		"Distinct stored objects that artifact and thumbnail rows name.", nil, nil)
	storageBytesDesc = prometheus.NewDesc("snapq_storage_bytes",
		"Bytes of the distinct stored objects rows name, each counted once.", nil, nil)
	storageSavedDesc = prometheus.NewDesc("snapq_storage_deduplicated_bytes",
		"Bytes content-addressed storage did not store again: rows' bytes minus the distinct objects' bytes.", nil, nil)
	runsDesc = prometheus.NewDesc("snapq_runs",
		"Visual-regression runs by status, counted in Postgres at scrape time.", []string{"status"}, nil)
	queueDesc = prometheus.NewDesc("snapq_queue_tasks",
		"Tasks in each kind of asynq queue by state, summed over its shards, read from Redis at scrape time; a queue not created yet is 0.",
		[]string{"queue", "state"}, nil)
	queueLatencyDesc = prometheus.NewDesc("snapq_queue_latency_seconds",
		"How long the oldest pending task of each kind of asynq queue (any shard) has waited, read from Redis at scrape time; 0 when none waits.",
		[]string{"queue"}, nil)
	scrapeErrorDesc = prometheus.NewDesc("snapq_scrape_error",
		"1 when this scrape could not read a source (jobs, runs, queues); its gauges are then missing.",
		[]string{"source"}, nil)
)

// Label values always reported, so a status with no rows shows 0 instead of
// vanishing.
var (
	jobStatuses = []string{string(jobs.StatusQueued), string(jobs.StatusRunning), string(jobs.StatusSucceeded), string(jobs.StatusFailed), string(jobs.StatusCanceled)}
	runStatuses = []string{string(regression.RunRunning), string(regression.RunPassed), string(regression.RunFailed), string(regression.RunNeedsReview), string(regression.RunError), string(regression.RunApproved)}
)

// stateCollector reads job, run and queue counts when Prometheus scrapes.
// Each source gets one query with a timeout; a failing source reports
// snapq_scrape_error{source} = 1 instead of failing the scrape.
type stateCollector struct {
	counts  StatusCounter
	storage StorageCounter
	queues  QueueInspector
	shards  int
	timeout time.Duration
}

// source is one scrape-time read.
type source struct {
	name    string
	collect func(ctx context.Context) ([]prometheus.Metric, error)
}

// Describe implements prometheus.Collector.
func (sc *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- jobsDesc
	ch <- runsDesc
	ch <- artifactBytesDesc
	ch <- storageObjectsDesc
	ch <- storageBytesDesc
	ch <- storageSavedDesc
	ch <- queueDesc
	ch <- queueLatencyDesc
	ch <- scrapeErrorDesc
}

// Collect implements prometheus.Collector; the sources are read in parallel.
func (sc *stateCollector) Collect(ch chan<- prometheus.Metric) {
	var srcs []source
	if sc.counts != nil {
		srcs = append(srcs,
			source{"jobs", func(ctx context.Context) ([]prometheus.Metric, error) {
				return statusGauges(ctx, jobsDesc, jobStatuses, sc.counts.JobCounts)
			}},
			source{"runs", func(ctx context.Context) ([]prometheus.Metric, error) {
				return statusGauges(ctx, runsDesc, runStatuses, sc.counts.RunCounts)
			}})
	}
	if sc.storage != nil {
		srcs = append(srcs, source{"storage", sc.storageGauges})
	}
	if sc.queues != nil {
		srcs = append(srcs, source{"queues", sc.queueGauges})
	}
	ctx, cancel := context.WithTimeout(context.Background(), sc.timeout)
	defer cancel()
	results := make([][]prometheus.Metric, len(srcs))
	errs := make([]error, len(srcs))
	var wg sync.WaitGroup
	for i, src := range srcs {
		wg.Go(func() { results[i], errs[i] = src.collect(ctx) })
	}
	wg.Wait()
	for i, src := range srcs {
		failed := 0.0
		if errs[i] != nil {
			failed = 1
		} else {
			for _, m := range results[i] {
				ch <- m
			}
		}
		ch <- prometheus.MustNewConstMetric(scrapeErrorDesc, prometheus.GaugeValue, failed, src.name)
	}
}

// statusGauges turns counts by status into one gauge per status, known
// statuses included at 0.
func statusGauges(ctx context.Context, desc *prometheus.Desc, known []string,
	count func(context.Context) (map[string]int64, error)) ([]prometheus.Metric, error) {
	n, err := count(ctx)
	if err != nil {
		return nil, err
	}
	statuses := slices.Clone(known)
	for st := range n {
		if !slices.Contains(statuses, st) {
			statuses = append(statuses, st)
		}
	}
	out := make([]prometheus.Metric, 0, len(statuses))
	for _, st := range statuses {
		out = append(out, prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, float64(n[st]), st))
	}
	return out, nil
}

// storageGauges reads the storage figures.
func (sc *stateCollector) storageGauges(ctx context.Context) ([]prometheus.Metric, error) {
	st, err := sc.storage.StorageStats(ctx)
	if err != nil {
		return nil, err
	}
	var listed int64
	out := make([]prometheus.Metric, 0, len(st.BytesByKind)+3)
	for kind, n := range st.BytesByKind {
		listed += n
		out = append(out, prometheus.MustNewConstMetric(artifactBytesDesc, prometheus.GaugeValue, float64(n), kind))
	}
	return append(out,
		prometheus.MustNewConstMetric(storageObjectsDesc, prometheus.GaugeValue, float64(st.Objects)),
		prometheus.MustNewConstMetric(storageBytesDesc, prometheus.GaugeValue, float64(st.Bytes)),
		prometheus.MustNewConstMetric(storageSavedDesc, prometheus.GaugeValue, float64(max(0, listed-st.Bytes)))), nil
}

// queueGauges reads each kind of queue's task counts, summed over its shards
// (the queue label is the kind: capture, regression, webhooks).
func (sc *stateCollector) queueGauges(ctx context.Context) ([]prometheus.Metric, error) {
	counts, err := readQueueCountsCtx(ctx, sc.queues, sc.shards)
	if err != nil {
		return nil, err
	}
	var out []prometheus.Metric
	for _, qc := range counts {
		for _, s := range []struct {
			state string
			n     int
		}{{"pending", qc.Pending}, {"active", qc.Active}, {"scheduled", qc.Scheduled},
			{"retry", qc.Retry}, {"archived", qc.Archived}} {
			out = append(out, prometheus.MustNewConstMetric(queueDesc, prometheus.GaugeValue, float64(s.n), qc.Name, s.state))
		}
		out = append(out, prometheus.MustNewConstMetric(queueLatencyDesc, prometheus.GaugeValue, qc.LatencySeconds, qc.Name))
	}
	return out, nil
}
