package controller

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/config"
	"github.com/runnel-io/runnel/internal/metadata"
)

// The balancer's defaults are the documented defaults of its properties, and its
// state key is one the config layer keeps out of the topics' settings and refuses
// from AlterConfigs.
func TestBalancerDefaultsMatchConfig(t *testing.T) {
	b := config.Default()
	if got := b.PartitionAutobalancingThrottledRate; got != DefaultBalancerThrottleRate {
		t.Errorf("partition.autobalancing.throttled.rate default %d, controller's %d", got, DefaultBalancerThrottleRate)
	}
	if got := time.Duration(b.PartitionAutobalancingNodeTimeoutSec) * time.Second; got != DefaultNodeAvailability {
		t.Errorf("partition.autobalancing.node.availability.timeout.sec default %v, controller's %v", got, DefaultNodeAvailability)
	}
	if got := int(b.PartitionAutobalancingMaxDiskUsedPercent); got != DefaultMaxDiskUsedPercent {
		t.Errorf("partition.autobalancing.max.disk.usage.percent default %d, controller's %d", got, DefaultMaxDiskUsedPercent)
	}
	if got := time.Duration(b.PartitionAutobalancingTickIntervalMs) * time.Millisecond; got != DefaultBalancerDiskPollEvery {
		t.Errorf("partition.autobalancing.tick.interval.ms default %v, controller's %v", got, DefaultBalancerDiskPollEvery)
	}
	if !strings.HasPrefix(balancerThrottlesKey, config.ControllerStatePrefix) || !config.IsDynamicBrokerProperty(balancerThrottlesKey) {
		t.Errorf("%s is not a controller-state key of internal/config", balancerThrottlesKey)
	}
	if err := config.ValidateDynamicBrokerConfig(balancerThrottlesKey, "{}"); err == nil {
		t.Errorf("AlterConfigs would accept %s from a client", balancerThrottlesKey)
	}
}

// A balancer move lists the moving partition's current replicas on the leader side
// and the new ones on the follower side, sets the rates an operator did not set, and
// the clear removes exactly that: the operator's list items and rate stay.
func TestBalancerThrottlesKeepOperators(t *testing.T) {
	im := metadata.Empty()
	im.Configs = map[string]string{followerThrottledRate: "5000"} // an operator's
	im.Topics = map[string]*metadata.Topic{"t": {Name: "t",
		Configs: map[string]string{leaderThrottledReplicas: "0:1,1:3"}, // an operator's
		Partitions: []metadata.Partition{
			{Replicas: []metadata.NodeID{1, 2}, ISR: []metadata.NodeID{1, 2}, Leader: 1},
			{Replicas: []metadata.NodeID{2, 3}, ISR: []metadata.NodeID{2, 3}, Leader: 2},
		}}}
	live := func(metadata.NodeID) bool { return true }
	p, _ := im.Partition(metadata.TopicPartition{Topic: "t", Partition: 0})
	next, err := startReassignment(p, []metadata.NodeID{1, 4}, live, nil)
	if err != nil {
		t.Fatal(err)
	}
	after := im.Apply(metadata.Record{Type: metadata.PartitionChangeType, TopicName: "t", Partition: 0, PartitionState: &next}, 1)
	moving := after
	for _, r := range balancerThrottleRecords(im, after, []metadata.TopicPartition{{Topic: "t", Partition: 0}}, 1000) {
		moving = moving.Apply(r, 2)
	}
	if got := moving.Topics["t"].Configs[leaderThrottledReplicas]; got != "0:1,1:3,0:2" {
		t.Errorf("leader side during the move %q, want the operator's 0:1,1:3 and the balancer's 0:2", got)
	}
	if got := moving.Topics["t"].Configs[followerThrottledReplica]; got != "0:4" {
		t.Errorf("follower side during the move %q, want 0:4", got)
	}
	if got := moving.Configs[leaderThrottledRate]; got != "1000" {
		t.Errorf("leader rate during the move %q, want the balancer's 1000", got)
	}
	if got := moving.Configs[followerThrottledRate]; got != "5000" {
		t.Errorf("follower rate during the move %q, want the operator's 5000", got)
	}
	if !hasBalancerThrottles(moving) {
		t.Fatal("the balancer did not record what it set")
	}
	cleared := moving
	for _, r := range clearThrottleRecords(moving) {
		cleared = cleared.Apply(r, 3)
	}
	if got := cleared.Topics["t"].Configs[leaderThrottledReplicas]; got != "0:1,1:3" {
		t.Errorf("leader side after the clear %q, want the operator's 0:1,1:3", got)
	}
	if v, ok := cleared.Topics["t"].Configs[followerThrottledReplica]; ok {
		t.Errorf("follower side after the clear %q, want none", v)
	}
	if v, ok := cleared.Configs[leaderThrottledRate]; ok {
		t.Errorf("leader rate after the clear %q, want none", v)
	}
	if got := cleared.Configs[followerThrottledRate]; got != "5000" {
		t.Errorf("follower rate after the clear %q, want the operator's 5000", got)
	}
	if hasBalancerThrottles(cleared) {
		t.Error("the balancer's record outlived the clear")
	}
}

// A broker that registers for the first time awaits its share in the metadata
// (Broker.AwaitsShare), not in the active controller's memory: a controller that
// takes over before the balancer planned still gives it its share, and the proposal
// that starts the moves clears the mark. (Kept in memory, the share was lost whenever
// the active controller died between a node's registration and the balancer's tick:
// TestNemesis, seed 54.)
func TestBalancerShareSurvivesFailover(t *testing.T) {
	cs := startQuorumWith(t, 3, func(c *Config) {
		c.BalanceOnNodeAdd, c.SessionTimeout, c.DisableAutoLeaderRebalance = true, time.Minute, true
	})
	leader := leaderOf(t, cs)
	for i := 1; i <= 3; i++ {
		registerLive(t, leader, metadata.Broker{ID: metadata.NodeID(i), Host: "localhost", Port: int32(9091 + i)})
	}
	mustCreate(t, leader, topicSpec("t", 6, 2))
	// Node 4 registers and does not heartbeat yet: fenced, it is not live, so the
	// balancer leaves it be until the controller has changed.
	epoch, err := leader.RegisterBroker(testCtx(t), Registration{Broker: metadata.Broker{ID: 4, Host: "localhost", Port: 9095}, IncarnationID: "inc-4"})
	if err != nil {
		t.Fatal(err)
	}
	if b := leader.Image().Brokers[4]; !b.AwaitsShare {
		t.Fatalf("new broker 4 registered as %+v, want it awaiting its share", b)
	}
	// A restart keeps the mark.
	if epoch, err = leader.RegisterBroker(testCtx(t), Registration{Broker: metadata.Broker{ID: 4, Host: "localhost", Port: 9095}, IncarnationID: "inc-4b"}); err != nil {
		t.Fatal(err)
	}
	if b := leader.Image().Brokers[4]; !b.AwaitsShare || b.Epoch != epoch {
		t.Fatalf("broker 4 registered again as %+v, want it still awaiting its share", b)
	}
	leader.Close()
	var rest []*Controller
	for _, c := range cs {
		if c != leader {
			rest = append(rest, c)
		}
	}
	next := leaderOf(t, rest)
	eventually(t, 10*time.Second, func() error {
		reply, err := next.BrokerHeartbeat(testCtx(t), Heartbeat{ID: 4, Epoch: epoch, MetadataOffset: next.Image().Offset})
		if err != nil || reply.IsFenced {
			return fmt.Errorf("heartbeat of broker 4 to the new controller: %+v %v", reply, err)
		}
		return nil
	})
	eventually(t, 10*time.Second, func() error {
		im := next.Image()
		held := 0
		for _, p := range im.Topics["t"].Partitions {
			if slices.Contains(p.Replicas, 4) {
				held++
			}
		}
		if held < 3 || im.Brokers[4].AwaitsShare {
			return fmt.Errorf("broker 4 is a replica of %d partitions (want 3 of the 12 replicas), awaiting its share %v", held, im.Brokers[4].AwaitsShare)
		}
		return nil
	})
}
