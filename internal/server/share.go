package server

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/internal/replica"
	"github.com/runnel-io/runnel/internal/share"
)

// startShare creates the node's share group membership and returns the replica hook
// that follows its __consumer_offsets leaderships, chained after next.
func (n *Node) startShare(next func(p *replica.Partition, leader bool, leaderEpoch int32)) func(p *replica.Partition, leader bool, leaderEpoch int32) {
	n.shareGroups = share.NewGroups(share.GroupsConfig{
		NumPartitions:     n.cfg.OffsetsTopicNumPartitions,
		SessionTimeout:    time.Duration(n.cfg.GroupShareSessionTimeoutMs) * time.Millisecond,
		HeartbeatInterval: time.Duration(n.cfg.GroupShareHeartbeatIntervalMs) * time.Millisecond,
		MaxSize:           int(n.cfg.GroupShareMaxSize),
		Serving:           n.lease.Valid,
	})
	return func(p *replica.Partition, leader bool, leaderEpoch int32) {
		next(p, leader, leaderEpoch)
		n.shareGroups.OnLeadershipChange(p, leader, leaderEpoch)
	}
}

// wireShare gives the Kafka server share groups, their state kept in
// __share_group_state through a client of this node's inter-broker listener. Call it
// after the listeners are bound (the client's seed is this node).
func (n *Node) wireShare() {
	n.shareStore = &share.KgoStore{
		Opts: func() []kgo.Opt {
			return append(n.peerClient(5*time.Second), kgo.SeedBrokers(n.kafkaAddr.String()),
				kgo.ClientID("runnel-share-state"), kgo.WithLogger(nil))
		},
		Ensure: func(ctx context.Context) (int32, error) { return n.kafka.EnsureShareStateTopic(ctx) },
	}
	n.kafka.SetShare(n.shareGroups, n.shareStore)
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
