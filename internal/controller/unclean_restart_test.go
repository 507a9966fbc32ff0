package controller

import (
	"testing"

	"github.com/runnel-io/runnel/internal/metadata"
)

// KIP-966: a broker that was the last in-sync replica comes back after an unclean
// shutdown. Where the topic's durability is relaxed (acknowledged records may have been
// only in its page cache) it is not elected: the partition stays offline with an empty
// ISR. Where every acknowledged record was fsynced, it leads again. A clean restart
// changes nothing.
func TestUncleanRestartOfLastReplica(t *testing.T) {
	cfg := testConfig(t)
	cfg.RelaxedDurability = func(_ *metadata.Image, topic string) bool { return topic == "relaxed" || topic == "single" }
	c := startController(t, cfg)
	epochs := map[metadata.NodeID]int64{}
	for id := metadata.NodeID(1); id <= 2; id++ {
		epochs[id] = registerLive(t, c, metadata.Broker{ID: id})
	}
	mustCreate(t, c, named("relaxed", assign(ids(1, 2))), named("safe", assign(ids(1, 2))), named("single", assign(ids(1))))
	for _, topic := range []string{"relaxed", "safe"} {
		if _, err := c.AlterPartition(testCtx(t), metadata.TopicPartition{Topic: topic}, 1, 0, 0, ids(1)); err != nil {
			t.Fatal(err)
		}
	}
	// Broker 1 stops (fenced, its partitions offline with ISR [1]), then restarts
	// after a crash.
	if _, err := c.BrokerHeartbeat(testCtx(t), Heartbeat{ID: 1, Epoch: epochs[1], MetadataOffset: c.Image().Offset, WantShutdown: true}); err != nil {
		t.Fatal(err)
	}
	partitionIs(t, c, "relaxed", 0, "replicas=[1 2] isr=[1] leader=-1 le=1 pe=2")
	epoch, err := c.RegisterBroker(testCtx(t), Registration{Broker: metadata.Broker{ID: 1}, IncarnationID: "after-crash", UncleanShutdown: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.BrokerHeartbeat(testCtx(t), Heartbeat{ID: 1, Epoch: epoch, MetadataOffset: c.Image().Offset}); err != nil {
		t.Fatal(err)
	}
	partitionIs(t, c, "relaxed", 0, "replicas=[1 2] isr=[] leader=-1 le=1 pe=3")
	partitionIs(t, c, "safe", 0, "replicas=[1 2] isr=[1] leader=1 le=2 pe=3")
	partitionIs(t, c, "single", 0, "replicas=[1] isr=[1] leader=1 le=2 pe=2") // nobody better to wait for

	// A clean restart of the same broker does not distrust it.
	if _, err := c.BrokerHeartbeat(testCtx(t), Heartbeat{ID: 1, Epoch: epoch, MetadataOffset: c.Image().Offset, WantShutdown: true}); err != nil {
		t.Fatal(err)
	}
	epoch, err = c.RegisterBroker(testCtx(t), Registration{Broker: metadata.Broker{ID: 1}, IncarnationID: "clean"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.BrokerHeartbeat(testCtx(t), Heartbeat{ID: 1, Epoch: epoch, MetadataOffset: c.Image().Offset}); err != nil {
		t.Fatal(err)
	}
	partitionIs(t, c, "safe", 0, "replicas=[1 2] isr=[1] leader=1 le=4 pe=5")
}
