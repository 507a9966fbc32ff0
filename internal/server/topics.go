package server

import (
	"fmt"
	"maps"
	"sort"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/runnel-io/runnel/internal/config"
	"github.com/runnel-io/runnel/internal/log"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/replica"
)

// resolveTopic computes a topic's effective settings: the broker's static defaults, the
// cluster's dynamic defaults, then the topic's overrides.
func (n *Node) resolveTopic(im *metadata.Image, t *metadata.Topic) replica.TopicSettings {
	overrides := maps.Clone(im.Configs)
	if overrides == nil {
		overrides = map[string]string{}
	}
	// The dynamic broker properties (the replication throttles' rates) share the
	// cluster-wide configs with the topic defaults; they are not topic configs.
	maps.DeleteFunc(overrides, func(k, _ string) bool { return config.IsDynamicBrokerProperty(k) })
	if t != nil {
		maps.Copy(overrides, t.Configs)
	}
	tc, err := n.cfg.ResolveTopic(overrides)
	if err != nil {
		// The controller validated every key; fall back to the defaults rather than
		// refuse to host the partition, and say why.
		n.logger.Error("topic config does not resolve; using defaults", "topic", topicName(t), "err", err)
		tc, _ = n.cfg.ResolveTopic(nil)
	}
	return replica.TopicSettings{
		MinISR:                    tc.MinInsyncReplicas,
		LeaderThrottledReplicas:   tc.LeaderReplicationThrottledReplicas,
		FollowerThrottledReplicas: tc.FollowerReplicationThrottledReplicas,
		Log: log.Config{
			SegmentBytes: tc.SegmentBytes, SegmentMs: tc.SegmentMs, SegmentIndexBytes: tc.SegmentIndexBytes,
			IndexIntervalBytes: tc.IndexIntervalBytes, RetentionMs: tc.RetentionMs, RetentionBytes: tc.RetentionBytes,
			FlushMessages: tc.FlushMessages, FlushMs: tc.FlushMs, MaxMessageBytes: tc.MaxMessageBytes,
			MessageTimestampType: tc.MessageTimestampType, FileDeleteDelayMs: tc.FileDeleteDelayMs,
			CleanupPolicy: tc.CleanupPolicy, DeleteRetentionMs: tc.DeleteRetentionMs,
			MinCompactionLagMs: tc.MinCompactionLagMs, MaxCompactionLagMs: tc.MaxCompactionLagMs,
			MinCleanableDirtyRatio: tc.MinCleanableDirtyRatio,
		},
	}
}

func (n *Node) logDefaults() log.Config { return n.resolveTopic(metadata.Empty(), nil).Log }

func topicName(t *metadata.Topic) string {
	if t == nil {
		return ""
	}
	return t.Name
}

// partitionCollector exports per-partition offsets at scrape time, so the produce path
// does no metric work per partition.
type partitionCollector struct {
	replicas                  *replica.Manager
	logEnd, logStart, hw, isr *prometheus.Desc
	underReplicated           *prometheus.Desc
	underMinISR, atMinISR     *prometheus.Desc
	followerLag               *prometheus.Desc
	isrShrinks, isrExpands    *prometheus.Desc
	// Reassignment and replication throttles (docs/scale-out.md).
	reassignBytes, reassigning *prometheus.Desc
	throttledBytes, throttled  *prometheus.Desc
}

func newPartitionCollector(r *replica.Manager) *partitionCollector {
	labels := []string{"topic", "partition"}
	return &partitionCollector{
		replicas:        r,
		logEnd:          prometheus.NewDesc("runnel_log_end_offset", "Log end offset of each local partition.", labels, nil),
		logStart:        prometheus.NewDesc("runnel_log_start_offset", "Log start offset of each local partition.", labels, nil),
		hw:              prometheus.NewDesc("runnel_high_watermark", "High watermark of each partition this node leads.", labels, nil),
		isr:             prometheus.NewDesc("runnel_isr_size", "In-sync replicas of each partition this node leads.", labels, nil),
		underReplicated: prometheus.NewDesc("runnel_under_replicated_partitions", "Partitions led here whose ISR is smaller than their replica set.", nil, nil),
		underMinISR:     prometheus.NewDesc("runnel_under_min_isr_partitions", "Partitions led here whose ISR is smaller than min.insync.replicas (acks=all produce fails).", nil, nil),
		atMinISR: prometheus.NewDesc("runnel_at_min_isr_partitions",
			"Partitions led here whose ISR is exactly min.insync.replicas: one more replica out and acks=all produce fails (Kafka's AtMinIsrPartitionCount).", nil, nil),
		followerLag: prometheus.NewDesc("runnel_follower_lag_offsets", "On the leader: offsets each follower is behind the log end, as of its last fetch.",
			[]string{"topic", "partition", "follower"}, nil),
		isrShrinks: prometheus.NewDesc("runnel_isr_shrinks_total", "ISR shrinks this node proposed as leader.", nil, nil),
		isrExpands: prometheus.NewDesc("runnel_isr_expands_total", "ISR expansions this node proposed as leader.", nil, nil),
		reassignBytes: prometheus.NewDesc("runnel_reassignment_bytes_remaining",
			"On the leader: bytes the replicas being added by reassignments still have to copy (an estimate from offsets).", nil, nil),
		reassigning: prometheus.NewDesc("runnel_reassigning_partitions", "Partitions led here with replicas being added by a reassignment.", nil, nil),
		throttledBytes: prometheus.NewDesc("runnel_replication_throttled_bytes_total",
			"Bytes of throttled catch-up traffic (KIP-73) this node sent as leader or fetched as follower.", []string{"side"}, nil),
		throttled: prometheus.NewDesc("runnel_replication_throttled_total",
			"Times a read or fetch left throttled partitions out because the replication throttle was spent.", []string{"side"}, nil),
	}
}

func (c *partitionCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.logEnd
	ch <- c.logStart
	ch <- c.hw
	ch <- c.isr
	ch <- c.underReplicated
	ch <- c.underMinISR
	ch <- c.atMinISR
	ch <- c.followerLag
	ch <- c.isrShrinks
	ch <- c.isrExpands
	ch <- c.reassignBytes
	ch <- c.reassigning
	ch <- c.throttledBytes
	ch <- c.throttled
}

func (c *partitionCollector) Collect(ch chan<- prometheus.Metric) {
	under, underMin, atMin := 0, 0, 0
	var remaining int64
	moving := 0
	for _, p := range c.replicas.Partitions() {
		if b, ok := p.ReassignmentBytesRemaining(); ok {
			remaining += b
			moving++
		}
		tp := p.TopicPartition()
		part := fmt.Sprint(tp.Partition)
		st := p.State()
		ch <- prometheus.MustNewConstMetric(c.logEnd, prometheus.GaugeValue, float64(st.LogEndOffset), tp.Topic, part)
		ch <- prometheus.MustNewConstMetric(c.logStart, prometheus.GaugeValue, float64(st.LogStartOffset), tp.Topic, part)
		if p.IsLeader() {
			ch <- prometheus.MustNewConstMetric(c.hw, prometheus.GaugeValue, float64(st.HighWatermark), tp.Topic, part)
			ch <- prometheus.MustNewConstMetric(c.isr, prometheus.GaugeValue, float64(len(st.ISR)), tp.Topic, part)
			if len(st.ISR) < len(st.Replicas) {
				under++
			}
			if int32(len(st.ISR)) < st.MinISR {
				underMin++
			}
			if int32(len(st.ISR)) == st.MinISR {
				atMin++
			}
			for id, lag := range st.FollowerLag {
				ch <- prometheus.MustNewConstMetric(c.followerLag, prometheus.GaugeValue, float64(lag), tp.Topic, part, fmt.Sprint(id))
			}
		}
	}
	ch <- prometheus.MustNewConstMetric(c.underReplicated, prometheus.GaugeValue, float64(under))
	ch <- prometheus.MustNewConstMetric(c.underMinISR, prometheus.GaugeValue, float64(underMin))
	ch <- prometheus.MustNewConstMetric(c.atMinISR, prometheus.GaugeValue, float64(atMin))
	stats := c.replicas.Stats()
	ch <- prometheus.MustNewConstMetric(c.isrShrinks, prometheus.CounterValue, float64(stats.IsrShrinks))
	ch <- prometheus.MustNewConstMetric(c.isrExpands, prometheus.CounterValue, float64(stats.IsrExpands))
	ch <- prometheus.MustNewConstMetric(c.reassignBytes, prometheus.GaugeValue, float64(remaining))
	ch <- prometheus.MustNewConstMetric(c.reassigning, prometheus.GaugeValue, float64(moving))
	ts := c.replicas.ThrottleStats()
	ch <- prometheus.MustNewConstMetric(c.throttledBytes, prometheus.CounterValue, ts.LeaderBytes, "leader")
	ch <- prometheus.MustNewConstMetric(c.throttledBytes, prometheus.CounterValue, ts.FollowerBytes, "follower")
	ch <- prometheus.MustNewConstMetric(c.throttled, prometheus.CounterValue, float64(ts.LeaderSkipped), "leader")
	ch <- prometheus.MustNewConstMetric(c.throttled, prometheus.CounterValue, float64(ts.FollowerSkipped), "follower")
}

// status is the plain-text console page.
func (n *Node) status() string {
	var b strings.Builder
	im := n.leadership.Image()
	fmt.Fprintf(&b, "Runnel node %d  cluster %s  controller %d  ready %v\n\n", n.cfg.NodeID, im.ClusterID, n.admin.ControllerID(), n.ready.Load())
	fmt.Fprintf(&b, "%-40s %9s %7s %12s %12s %12s\n", "PARTITION", "LEADER", "EPOCH", "LOG-START", "HIGH-WATER", "LOG-END")
	ps := n.replicas.Partitions()
	sort.Slice(ps, func(i, j int) bool {
		a, b := ps[i].TopicPartition(), ps[j].TopicPartition()
		return a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition
	})
	for _, p := range ps {
		st := p.State()
		tp := p.TopicPartition()
		fmt.Fprintf(&b, "%-40s %9d %7d %12d %12d %12d\n", fmt.Sprintf("%s-%d", tp.Topic, tp.Partition),
			st.Leader, st.LeaderEpoch, st.LogStartOffset, st.HighWatermark, st.LogEndOffset)
	}
	return b.String()
}
