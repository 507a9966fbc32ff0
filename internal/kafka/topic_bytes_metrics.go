package kafka

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Bytes out per topic, runnel_topic_bytes_out_total{topic}: the record bytes of the
// fetch responses this node sends to consumers (fetches with replica id -1, whether it
// read them as the leader or as a follower, KIP-392), per topic, counted once per
// response sent. Replication fetches are not counted: this is what consumers read.
// A topic's series stays after the topic is deleted (a counter that stops), until
// the node restarts.

// topicBytesOut is one server's counter vector and its children by topic.
type topicBytesOut struct {
	vec     *prometheus.CounterVec
	byTopic sync.Map // topic name → prometheus.Counter
}

func newTopicBytesOut(reg prometheus.Registerer) *topicBytesOut {
	t := &topicBytesOut{vec: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "runnel_topic_bytes_out_total",
		Help: "Record bytes sent to consumers in fetch responses, by topic (replication fetches are not counted). " +
			"Counted once per response sent, on the node that sent it.",
	}, []string{"topic"})}
	if reg != nil {
		reg.MustRegister(t.vec)
	}
	return t
}

func (t *topicBytesOut) counter(topic string) prometheus.Counter {
	if c, ok := t.byTopic.Load(topic); ok {
		return c.(prometheus.Counter)
	}
	c, _ := t.byTopic.LoadOrStore(topic, t.vec.WithLabelValues(topic))
	return c.(prometheus.Counter)
}

// recordTopicBytesOut counts the record bytes of a consumer's fetch response being
// sent, per topic.
func (m *Metrics) recordTopicBytesOut(parts []*fetchPart) {
	t := m.topicBytes
	if t == nil {
		t = unregisteredTopicBytesOut()
	}
	for _, fp := range parts {
		if fp.served > 0 && fp.sp != nil {
			t.counter(fp.sp.tp.Topic).Add(float64(fp.served))
		}
	}
}

// TopicBytesOut is what runnel_topic_bytes_out_total holds now, by topic: the bytes
// this node sent consumers since it started.
func (m *Metrics) TopicBytesOut() map[string]float64 {
	out := map[string]float64{}
	if m == nil || m.topicBytes == nil {
		return out
	}
	m.topicBytes.byTopic.Range(func(k, v any) bool {
		out[k.(string)] = counterValue(v.(prometheus.Counter))
		return true
	})
	return out
}

func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if c.Write(&m) != nil || m.Counter == nil {
		return 0
	}
	return m.Counter.GetValue()
}

// unregisteredTopicBytesOut is where a Metrics not built by NewMetrics (a zero value
// in a test) counts.
var unregisteredTopicBytesOut = sync.OnceValue(func() *topicBytesOut { return newTopicBytesOut(nil) })

// TopicBytesOut is runnel_topic_bytes_out_total of the server, by topic.
func (s *Server) TopicBytesOut() map[string]float64 { return s.metrics.TopicBytesOut() }
