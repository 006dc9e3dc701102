package events

import "github.com/prometheus/client_golang/prometheus"

// Collectors are the publisher's Prometheus metrics, for the registry of
// the process that publishes.
func (p *Publisher) Collectors() []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "snapq_events_published_total",
			Help: "Live events (job, batch, comparison, run) published to Redis Streams."},
			func() float64 { return float64(p.Published()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "snapq_events_publish_failures_total",
			Help: "Publishes of live events that failed (logged; clients fall back to the database's state)."},
			func() float64 { return float64(p.Failures()) }),
	}
}

// Collectors are the hub's Prometheus metrics.
func (h *Hub) Collectors() []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "snapq_sse_streams_followed",
			Help: "Batch and run event streams this api replica reads for its SSE clients."},
			func() float64 { return float64(h.Streams()) }),
	}
}
