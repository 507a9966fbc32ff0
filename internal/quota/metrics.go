package quota

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the per-entity quota metrics, for entities a quota applies to (others
// are not tracked: their client ids are unbounded).
type Metrics struct {
	throttle *prometheus.CounterVec
	bytes    *prometheus.CounterVec
	reqTime  *prometheus.CounterVec
}

// NewMetrics registers the quota metrics with reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	labels := []string{"quota", "user", "client_id"}
	m := &Metrics{
		throttle: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "runnel_throttle_time_seconds_total",
			Help: "Time connections were throttled (muted, throttle_time_ms) by client quotas, by quota type (produce, fetch, request) and the entity whose rate it is (a dimension the quota does not name is empty).",
		}, labels),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "runnel_quota_bytes_total",
			Help: "Bytes counted against producer_byte_rate (quota=produce) and consumer_byte_rate (quota=fetch) quotas, by entity.",
		}, labels),
		reqTime: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "runnel_quota_request_time_seconds_total",
			Help: "Request handling time counted against request_percentage quotas, by entity.",
		}, labels),
	}
	if reg != nil {
		reg.MustRegister(m.throttle, m.bytes, m.reqTime)
	}
	return m
}

func (m *Metrics) values(t Type) *prometheus.CounterVec {
	if t == Request {
		return m.reqTime
	}
	return m.bytes
}

func (m *Metrics) children(t Type, tags Tags) (value, throttle prometheus.Counter) {
	return m.values(t).WithLabelValues(t.String(), tags.User, tags.ClientID),
		m.throttle.WithLabelValues(t.String(), tags.User, tags.ClientID)
}

func (m *Metrics) drop(t Type, tags Tags) {
	m.values(t).DeleteLabelValues(t.String(), tags.User, tags.ClientID)
	m.throttle.DeleteLabelValues(t.String(), tags.User, tags.ClientID)
}
