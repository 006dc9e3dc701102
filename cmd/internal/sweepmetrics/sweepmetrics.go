// Package sweepmetrics counts maintenance passes (maintenance.Maintenance) in
// Prometheus: the api runs them on demand, workers on schedule, and both
// export the same series.
package sweepmetrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/snapq/snapq/maintenance"
)

// Metrics are the maintenance pass's series.
type Metrics struct {
	passes  *prometheus.CounterVec
	objects *prometheus.CounterVec
	bytes   *prometheus.CounterVec
	batches prometheus.Counter
	missing prometheus.Gauge
	found   prometheus.Counter
	last    prometheus.Gauge
}

// New builds the metrics, every label exported from the start at 0.
func New() *Metrics {
	m := &Metrics{
		passes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "snapq_sweep_passes_total",
			Help: "Maintenance passes (retention, orphan sweep, missing-object check) run here, by dry_run."}, []string{"dry_run"}),
		objects: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "snapq_sweep_deleted_objects_total",
			Help: "Objects deleted by reason: retention (expired batches and runs) or orphan (no row names them). Dry runs delete nothing and count nothing."},
			[]string{"reason"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "snapq_sweep_deleted_bytes_total",
			Help: "Bytes of the objects deleted, by reason (retention or orphan)."}, []string{"reason"}),
		batches: prometheus.NewCounter(prometheus.CounterOpts{Name: "snapq_sweep_deleted_batches_total",
			Help: "Batches (with their jobs, artifacts and runs) deleted by retention."}),
		missing: prometheus.NewGauge(prometheus.GaugeOpts{Name: "snapq_sweep_missing_objects",
			Help: "Rows whose object the bucket does not hold, found by the last pass's check."}),
		found: prometheus.NewCounter(prometheus.CounterOpts{Name: "snapq_sweep_missing_objects_total",
			Help: "Rows whose object was missing, summed over passes (a key found again is counted again)."}),
		last: prometheus.NewGauge(prometheus.GaugeOpts{Name: "snapq_sweep_last_pass_timestamp_seconds",
			Help: "When the last maintenance pass here finished (Unix seconds)."}),
	}
	for _, r := range []string{"retention", "orphan"} {
		m.objects.WithLabelValues(r)
		m.bytes.WithLabelValues(r)
	}
	m.passes.WithLabelValues("true")
	m.passes.WithLabelValues("false")
	return m
}

// Collectors are the series to register.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.passes, m.objects, m.bytes, m.batches, m.missing, m.found, m.last}
}

// Observe records one pass (maintenance.Maintenance.Observe).
func (m *Metrics) Observe(r maintenance.SweepReport) {
	m.passes.WithLabelValues(strconv.FormatBool(r.DryRun)).Inc()
	m.missing.Set(float64(r.Missing.Missing))
	m.found.Add(float64(r.Missing.Missing))
	m.last.Set(float64(r.FinishedAt.Unix()))
	if r.DryRun {
		return
	}
	m.batches.Add(float64(r.Retention.Batches))
	m.objects.WithLabelValues("retention").Add(float64(r.Retention.Objects))
	m.bytes.WithLabelValues("retention").Add(float64(r.Retention.Bytes))
	m.objects.WithLabelValues("orphan").Add(float64(r.Orphans.Deleted))
	m.bytes.WithLabelValues("orphan").Add(float64(r.Orphans.Bytes))
}
