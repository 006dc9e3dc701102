package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/snapq/snapq/capture"
	"github.com/snapq/snapq/cmd/internal/sweepmetrics"
	"github.com/snapq/snapq/session"
)

// Task outcomes, derived from the handler's returned error.
const (
	outcomeSucceeded = "succeeded" // nil
	outcomeFailed    = "failed"    // wraps asynq.SkipRetry: final, not retried
	outcomeRetried   = "retried"   // any other error: asynq retries it
)

// workerMetrics are the worker's Prometheus metrics, on a registry of their
// own (SNAPQ_METRICS_ADDR).
type workerMetrics struct {
	registry    *prometheus.Registry
	jobs        *prometheus.CounterVec
	jobDuration prometheus.Histogram
	compares    *prometheus.CounterVec
	// uploads counts artifact bytes by whether they were uploaded or found
	// already stored (content-addressed storage, SNAPQ_CONTENT_ADDRESSED).
	uploads *prometheus.CounterVec
	// sweeps counts the maintenance passes this worker runs (maintenance:sweep).
	sweeps *sweepmetrics.Metrics
	// renders counts captures a browser rendered, cacheHits jobs that reused
	// a recent capture instead (options.max_age_s).
	renders, cacheHits prometheus.Counter
	// decodedSegments counts the segment images aligned comparisons decoded
	// (regression.Comparer.Decoded).
	decodedSegments prometheus.Counter
	// stages times each stage of successful capture attempts (jobs.Handler.Stage).
	stages *prometheus.HistogramVec
}

// captureBuckets cover a capture attempt: from a fast page (0.25 s) to the
// longest job timeouts (several minutes).
var captureBuckets = []float64{0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300}

// stageBuckets cover one stage of a capture: from a Redis or Postgres round
// trip (1 ms) to a queue wait or a slow load (several minutes); ~1.5× apart,
// so a quantile read from them is within a bucket's width.
var stageBuckets = prometheus.ExponentialBucketsRange(0.001, 300, 32)

func newWorkerMetrics() *workerMetrics {
	m := &workerMetrics{
		registry: prometheus.NewRegistry(),
		jobs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "snapq_worker_jobs_total",
			Help: "Capture task attempts by outcome: succeeded, failed (final) or retried."}, []string{"outcome"}),
		jobDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "snapq_worker_job_duration_seconds",
			Help: "Duration of capture task attempts.", Buckets: captureBuckets}),
		compares: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "snapq_worker_compares_total",
			Help: "Regression comparison task attempts by outcome: succeeded, failed (final) or retried."}, []string{"outcome"}),
		uploads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "snapq_worker_artifact_bytes_total",
			Help: "Artifact bytes stored by this worker: uploaded, or reused (identical bytes already stored, nothing uploaded)."},
			[]string{"outcome"}),
		renders: prometheus.NewCounter(prometheus.CounterOpts{Name: "snapq_worker_renders_total",
			Help: "Job captures a browser rendered (successful attempts)."}),
		cacheHits: prometheus.NewCounter(prometheus.CounterOpts{Name: "snapq_result_cache_hits_total",
			Help: "Jobs that reused a recent capture of the same URL and options (options.max_age_s) instead of rendering."}),
		decodedSegments: prometheus.NewCounter(prometheus.CounterOpts{Name: "snapq_compare_decoded_segments_total",
			Help: "Segment images aligned comparisons decoded (segments with a manifest are decoded only where their pixels are needed)."}),
		stages: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "snapq_worker_stage_seconds",
			Help: "Time of each stage of successful capture attempts: the keys of result.timings_ms (queue, start, slot, tab, " +
				"navigate, wait, prepare, quality, capture, encode, reset, upload, thumbnail, …), commit and events; " +
				"capture_band: each screenshot call inside capture, once per call.",
			Buckets: stageBuckets}, []string{"stage"}),
	}
	m.uploads.WithLabelValues("uploaded")
	m.uploads.WithLabelValues("reused")
	for _, o := range []string{outcomeSucceeded, outcomeFailed, outcomeRetried} {
		// Every outcome is exported from the start, at 0.
		m.jobs.WithLabelValues(o)
		m.compares.WithLabelValues(o)
	}
	m.sweeps = sweepmetrics.New()
	m.registry.MustRegister(m.jobs, m.jobDuration, m.compares, m.uploads, m.renders, m.cacheHits, m.decodedSegments, m.stages,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.registry.MustRegister(m.sweeps.Collectors()...)
	return m
}

// upload counts one artifact's bytes (jobs.Handler.Uploads).
func (m *workerMetrics) upload(reused bool, n int64) {
	o := "uploaded"
	if reused {
		o = "reused"
	}
	m.uploads.WithLabelValues(o).Add(float64(n))
}

// stage observes one stage of a capture attempt (jobs.Handler.Stage).
func (m *workerMetrics) stage(name string, d time.Duration) {
	m.stages.WithLabelValues(name).Observe(d.Seconds())
}

// decoded counts the segments one aligned comparison decoded (regression.Comparer.Decoded).
func (m *workerMetrics) decoded(n int) { m.decodedSegments.Add(float64(n)) }

// captured counts a job's capture: rendered or a cache hit (jobs.Handler.Captured).
func (m *workerMetrics) captured(cached bool) {
	if cached {
		m.cacheHits.Inc()
	} else {
		m.renders.Inc()
	}
}

// outcome classifies a handler's result the way asynq treats it.
func outcome(err error) string {
	switch {
	case err == nil:
		return outcomeSucceeded
	case errors.Is(err, asynq.SkipRetry):
		return outcomeFailed
	default:
		return outcomeRetried
	}
}

// captures is an asynq middleware counting and timing capture attempts.
func (m *workerMetrics) captures(next asynq.Handler) asynq.Handler {
	return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		start := time.Now()
		err := next.ProcessTask(ctx, t)
		m.jobDuration.Observe(time.Since(start).Seconds())
		m.jobs.WithLabelValues(outcome(err)).Inc()
		return err
	})
}

// comparisons is an asynq middleware counting comparison attempts.
func (m *workerMetrics) comparisons(next asynq.Handler) asynq.Handler {
	return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		err := next.ProcessTask(ctx, t)
		m.compares.WithLabelValues(outcome(err)).Inc()
		return err
	})
}

// serveMetrics serves GET /metrics on ln until ctx ends.
func (m *workerMetrics) serve(ctx context.Context, ln net.Listener, log *slog.Logger) {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	log.Info("metrics listening", "addr", ln.Addr().String())
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Warn("metrics server stopped", "err", err)
	}
}

// watchSessions exports the sessions this worker holds and the pages open in their
// Chromium, read from Chromium at each scrape: a closed or expired session's tab is gone
// from snapq_worker_session_pages, not only from the bookkeeping.
func (m *workerMetrics) watchSessions(h *session.Host, b *capture.Browser) {
	m.registry.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "snapq_worker_sessions_held",
			Help: "Interactive sessions this worker holds a tab for."}, func() float64 { return float64(h.Held()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "snapq_worker_session_pages",
			Help: "Pages open in the sessions' Chromium (session tabs and their popups), counted by Chromium at scrape; -1 when it did not answer."},
			func() float64 {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				n, err := b.OpenPages(ctx)
				if err != nil {
					return -1
				}
				return float64(n)
			}),
	)
}
