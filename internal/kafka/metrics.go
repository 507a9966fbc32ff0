package kafka

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/runnel-io/runnel/internal/quota"
)

// Metrics are the protocol server's Prometheus metrics.
type Metrics struct {
	requests    *prometheus.CounterVec
	errors      *prometheus.CounterVec
	latency     *prometheus.HistogramVec
	bytesIn     prometheus.Counter
	bytesOut    prometheus.Counter
	connections prometheus.Gauge
	// quota are the per-entity client quota metrics (internal/quota).
	quota *quota.Metrics
	// Per-API children are cached so the hot path does no label lookup.
	byAPI map[string]apiMetrics
}

type apiMetrics struct {
	requests prometheus.Counter
	errors   prometheus.Counter
	latency  prometheus.Observer
}

// NewMetrics registers the server's metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "runnel_requests_total", Help: "Kafka requests handled, by API.",
		}, []string{"api"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "runnel_request_failures_total", Help: "Kafka requests that closed their connection, by API.",
		}, []string{"api"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "runnel_request_duration_seconds", Help: "Time from reading a request to its response being ready, by API.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}, []string{"api"}),
		bytesIn:     prometheus.NewCounter(prometheus.CounterOpts{Name: "runnel_network_bytes_in_total", Help: "Bytes read from Kafka clients."}),
		bytesOut:    prometheus.NewCounter(prometheus.CounterOpts{Name: "runnel_network_bytes_out_total", Help: "Bytes written to Kafka clients."}),
		connections: prometheus.NewGauge(prometheus.GaugeOpts{Name: "runnel_connections", Help: "Open Kafka client connections."}),
		byAPI:       map[string]apiMetrics{},
		quota:       quota.NewMetrics(reg),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.errors, m.latency, m.bytesIn, m.bytesOut, m.connections)
	}
	for key := range handlers {
		name := apiName(key)
		m.byAPI[name] = apiMetrics{
			requests: m.requests.WithLabelValues(name),
			errors:   m.errors.WithLabelValues(name),
			latency:  m.latency.WithLabelValues(name),
		}
	}
	return m
}

func (m *Metrics) observe(api string, d time.Duration, err error) {
	a, ok := m.byAPI[api]
	if !ok {
		a = apiMetrics{m.requests.WithLabelValues(api), m.errors.WithLabelValues(api), m.latency.WithLabelValues(api)}
	}
	a.requests.Inc()
	a.latency.Observe(d.Seconds())
	if err != nil {
		a.errors.Inc()
	}
}
