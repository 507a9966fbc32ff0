package kafka

import (
	"math"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// The fetch latency breakdown (docs/monitoring.md), runnel_fetch_stage_seconds{stage,fetcher}:
// where a fetch's time goes, as runnel_produce_stage_seconds does for a produce, so
// that an end-to-end outlier can be placed on the broker's fetch side or not. fetcher
// is "consumer" or "follower" (a replica fetcher: acks=all waits on its round trips).

// FetchStage is one stage of a fetch request.
type FetchStage int

const (
	// FetchStageRead: from the request's first bytes to its frame read whole.
	FetchStageRead FetchStage = iota
	// FetchStageSchedule: until its handler runs.
	FetchStageSchedule
	// FetchStageWait: the long poll, from parking to being woken or timing out (not
	// latency: the time nothing new was there).
	FetchStageWait
	// FetchStageWake: from the partition waking its waiters (the high watermark moved,
	// or with followers the log end) to the parked fetch running again, for fetches
	// woken by data: the scheduler's share of a consumer's latency.
	FetchStageWake
	// FetchStageCollect: the read pass whose result is sent (the logs read, or the
	// file ranges planned for sendfile).
	FetchStageCollect
	// FetchStageServe: from the wake-up that made the response's data readable to the
	// handler returning (wake + collect + the re-reads between), for fetches woken by
	// data; what the broker adds after the high watermark moved, before encoding.
	FetchStageServe
	numFetchStages
)

func (st FetchStage) String() string {
	return [...]string{"read", "schedule", "wait", "wake", "collect", "serve"}[st]
}

// fetchMetrics are one server's fetch stage observers, [follower][stage], and the
// record bytes it served to consumers, [as a follower] (KIP-392): runnel_consumer_fetch_bytes_total{replica}.
type fetchMetrics struct {
	obs           [2][numFetchStages]prometheus.Observer
	consumerBytes [2]prometheus.Counter
}

// fetchStageHistogram is the histogram vector of the fetch breakdown, with the produce
// breakdown's buckets (factors of sqrt(2) from 25 us to about 20 s).
func fetchStageHistogram() *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "runnel_fetch_stage_seconds",
		Help: "Where a fetch request's time goes, by stage and fetcher (consumer or follower): read (from its first bytes " +
			"to its frame read whole), schedule (until its handler runs), wait (the long poll, parked until woken or timed out), " +
			"wake (from the partition's high watermark, or log end for followers, moving to the woken fetch running again), " +
			"collect (the read pass whose result is sent), serve (from that wake-up to the response being ready to encode).",
		Buckets: prometheus.ExponentialBuckets(25e-6, math.Sqrt2, 40),
	}, []string{"stage", "fetcher"})
}

// consumerBytesCounter counts the record bytes a node sends to consumers, by whether it
// served them as the partition's leader or as a follower (fetch from the closest
// replica, KIP-392): where consumers read, and so where the cross-rack traffic is.
func consumerBytesCounter() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "runnel_consumer_fetch_bytes_total",
		Help: "Record bytes sent to consumers (fetches with replica id -1), by the replica this node served them as: " +
			"leader, or follower (a consumer sent to its rack's follower by a preferred read replica, KIP-392). " +
			"Counted once per response sent; replication fetches are not counted.",
	}, []string{"replica"})
}

func newFetchMetrics(reg prometheus.Registerer) *fetchMetrics {
	vec := fetchStageHistogram()
	bytes := consumerBytesCounter()
	fm := &fetchMetrics{}
	for i, who := range []string{"consumer", "follower"} {
		for st := range numFetchStages {
			fm.obs[i][st] = vec.WithLabelValues(st.String(), who)
		}
	}
	for i, as := range []string{"leader", "follower"} {
		fm.consumerBytes[i] = bytes.WithLabelValues(as)
	}
	if reg != nil {
		reg.MustRegister(vec, bytes)
	}
	return fm
}

// recordConsumerBytes counts the record bytes of a consumer's fetch response being
// sent, by the role each partition was read in.
func (m *Metrics) recordConsumerBytes(parts []*fetchPart) {
	var n [2]int
	for _, fp := range parts {
		if fp.served > 0 {
			i := 0
			if fp.asFollower {
				i = 1
			}
			n[i] += fp.served
		}
	}
	for i, b := range n {
		if b > 0 {
			m.fetch().consumerBytes[i].Add(float64(b))
		}
	}
}

func (m *Metrics) fetch() *fetchMetrics {
	if m.fetchStages == nil {
		return unregisteredFetchStages()
	}
	return m.fetchStages
}

// unregisteredFetchStages are where a Metrics not built by NewMetrics (a zero value
// in a test) observes its fetch stages.
var unregisteredFetchStages = sync.OnceValue(func() *fetchMetrics { return newFetchMetrics(nil) })
