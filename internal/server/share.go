package server

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/internal/replica"
	"github.com/runnel-io/runnel/internal/share"
)

// startShare creates the node's share group membership and returns the replica hook
// that follows its __consumer_offsets leaderships, chained after next. Call it after
// startGroups: group ids are exclusive across kinds, each side asking the other.
func (n *Node) startShare(next func(p *replica.Partition, leader bool, leaderEpoch int32)) func(p *replica.Partition, leader bool, leaderEpoch int32) {
	n.shareGroups = share.NewGroups(share.GroupsConfig{
		NumPartitions:     n.cfg.OffsetsTopicNumPartitions,
		SessionTimeout:    time.Duration(n.cfg.GroupShareSessionTimeoutMs) * time.Millisecond,
		HeartbeatInterval: time.Duration(n.cfg.GroupShareHeartbeatIntervalMs) * time.Millisecond,
		MaxSize:           int(n.cfg.GroupShareMaxSize),
		Serving:           n.lease.Valid,
		OtherKind:         n.groups.Kind,
	})
	n.groups.SetShareGroups(n.shareGroups.IsShareGroup)
	return func(p *replica.Partition, leader bool, leaderEpoch int32) {
		next(p, leader, leaderEpoch)
		n.shareGroups.OnLeadershipChange(p, leader, leaderEpoch)
	}
}

// wireShare gives the Kafka server share groups, their state kept in
// __share_group_state through a client of this node's inter-broker listener, and
// registers their metrics. Call it after the listeners are bound (the client's seed
// is this node).
func (n *Node) wireShare(reg prometheus.Registerer) {
	n.shareStore = &share.KgoStore{
		Opts: func() []kgo.Opt {
			return append(n.peerClient(5*time.Second), kgo.SeedBrokers(n.kafkaAddr.String()),
				kgo.ClientID(share.StoreClientID), kgo.WithLogger(nil))
		},
		Ensure: func(ctx context.Context) (int32, error) { return n.kafka.EnsureShareStateTopic(ctx) },
	}
	n.kafka.SetShare(n.shareGroups, n.shareStore)
	reg.MustRegister(&shareCollector{n: n,
		inflight: prometheus.NewDesc("runnel_share_inflight_records",
			"Records of a share partition acquired by a member and not yet acknowledged (state=acquired), or released and waiting for redelivery (state=available), exported by the data partition's leader.",
			[]string{"group", "topic", "partition", "state"}, nil),
		redelivered: prometheus.NewDesc("runnel_share_redelivered_records_total",
			"Records of a share group delivered again after an earlier delivery (released, lock timed out, or in flight at a failover), on this node since it started.",
			[]string{"group"}, nil),
	})
}

// shareCollector exports the share partitions this node leads.
type shareCollector struct {
	n                     *Node
	inflight, redelivered *prometheus.Desc
}

func (c *shareCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.inflight; ch <- c.redelivered }

func (c *shareCollector) Collect(ch chan<- prometheus.Metric) {
	if c.n.kafka == nil || c.n.kafka.ShareManager() == nil {
		return
	}
	parts, again := c.n.kafka.ShareManager().Stats()
	im := c.n.leadership.Image()
	for _, p := range parts {
		if im == nil {
			break
		}
		t := im.TopicByID(p.Key.TopicID)
		if t == nil {
			continue
		}
		part := fmt.Sprint(p.Key.Partition)
		ch <- prometheus.MustNewConstMetric(c.inflight, prometheus.GaugeValue, float64(p.Acquired), p.Key.Group, t.Name, part, "acquired")
		ch <- prometheus.MustNewConstMetric(c.inflight, prometheus.GaugeValue, float64(p.Available), p.Key.Group, t.Name, part, "available")
	}
	for g, n := range again {
		ch <- prometheus.MustNewConstMetric(c.redelivered, prometheus.CounterValue, float64(n), g)
	}
}

// closeShare closes the state client and the membership; call it after the Kafka
// server stopped.
func (n *Node) closeShare() {
	if n.shareStore != nil {
		n.shareStore.Close()
	}
	if n.shareGroups != nil {
		n.shareGroups.Close()
	}
}
