package kafka

import (
	"math"
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
	// stages are the produce latency breakdown, one observer per ProduceStage.
	stages [numProduceStages]prometheus.Observer
	// fetchStages are the fetch latency breakdown (fetch_metrics.go).
	fetchStages *fetchMetrics
	// quota are the per-entity client quota metrics (internal/quota).
	quota *quota.Metrics
	// topicBytes is runnel_topic_bytes_out_total (topic_bytes_metrics.go).
	topicBytes *topicBytesOut
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
		fetchStages: newFetchMetrics(reg),
		topicBytes:  newTopicBytesOut(reg),
	}
	stages := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "runnel_produce_stage_seconds",
		Help: "Where a produce request's time goes, by stage: read (from its first bytes to its frame read whole, " +
			"with the waits for a request slot and queued.max.request.bytes), schedule (until its handler runs), " +
			"order (waiting for the connection's previous produce to append), append (into the page cache), " +
			"flush (the fsync the flush policy asks for, shared by a group commit), replicate (acks=all: until the ISR has it), " +
			"respond (from the response being ready to its being handed to the socket, behind the connection's earlier responses).",
		// Factors of sqrt(2) from 25 us to about 20 s: fine enough to read a p99.9 from.
		Buckets: prometheus.ExponentialBuckets(25e-6, math.Sqrt2, 40),
	}, []string{"stage"})
	for st := range numProduceStages {
		m.stages[st] = stages.WithLabelValues(st.String())
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.errors, m.latency, m.bytesIn, m.bytesOut, m.connections, stages)
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

// ProduceStage is one stage of a produce request (runnel_produce_stage_seconds).
type ProduceStage int

const (
	StageRead ProduceStage = iota
	StageSchedule
	StageOrder
	StageAppend
	StageFlush
	StageReplicate
	StageRespond
	numProduceStages
)

func (st ProduceStage) String() string {
	return [...]string{"read", "schedule", "order", "append", "flush", "replicate", "respond"}[st]
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
