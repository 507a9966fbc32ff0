package clustertest_test

import (
	"context"
	"crypto/rand"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// throttledBy is a kgo hook that collects the nodes that reported a throttle.
type throttledBy struct {
	mu    sync.Mutex
	nodes map[int32]time.Duration
}

func (h *throttledBy) OnBrokerThrottle(meta kgo.BrokerMetadata, d time.Duration, _ bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if d > 0 {
		h.nodes[meta.NodeID] = max(h.nodes[meta.NodeID], d)
	}
}

// TestQuotaEveryNodeAndRestart: AlterClientQuotas sent to a node that is not the
// controller is forwarded; once it answers, every node describes the quota and
// throttles a produce to the partition it leads; the quota survives a restart.
func TestQuotaEveryNodeAndRestart(t *testing.T) {
	c := startCluster(t, 3)
	topic := topicName(t)
	createTopic(t, c, topic, 3, 3)
	leaders := map[int32]int32{} // partition -> leader
	for p := range int32(3) {
		leaders[p], _ = c.WaitLeader(t, topic, p, waitTimeout)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	md, err := c.MetadataFrom(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	via := int32(1)
	if md.ControllerID == 1 {
		via = 2
	}
	cl := c.Client(t)
	alter := kmsg.NewPtrAlterClientQuotasRequest()
	e := kmsg.NewAlterClientQuotasRequestEntry()
	ent := kmsg.NewAlterClientQuotasRequestEntryEntity()
	ent.Type, ent.Name = "client-id", kmsg.StringPtr("slow")
	op := kmsg.NewAlterClientQuotasRequestEntryOp()
	op.Key, op.Value = "producer_byte_rate", 1000
	e.Entity, e.Ops = append(e.Entity, ent), append(e.Ops, op)
	alter.Entries = append(alter.Entries, e)
	resp, err := alter.RequestWith(ctx, cl.Broker(int(via)))
	if err != nil || resp.Entries[0].ErrorCode != 0 {
		t.Fatalf("AlterClientQuotas through node %d (controller %d): %v %+v", via, md.ControllerID, err, resp)
	}

	check := func(when string, nodes ...int32) {
		t.Helper()
		cl := c.Client(t)
		for _, id := range nodes {
			req := kmsg.NewPtrDescribeClientQuotasRequest()
			got, err := req.RequestWith(ctx, cl.Broker(int(id)))
			if err != nil || len(got.Entries) != 1 || len(got.Entries[0].Values) != 1 || got.Entries[0].Values[0].Value != 1000 {
				t.Fatalf("%s: node %d describes %+v (%v), want client-id=slow producer_byte_rate=1000", when, id, got, err)
			}
		}
		h := &throttledBy{nodes: map[int32]time.Duration{}}
		p := c.Client(t, kgo.ClientID("slow"), kgo.WithHooks(h), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		// 12 KiB against 1000 B/s with a burst of 1000 B: a throttle of 11 s (the cap).
		value := make([]byte, 12<<10)
		rand.Read(value)
		var wg sync.WaitGroup
		for part := range int32(3) {
			wg.Add(1)
			p.Produce(ctx, &kgo.Record{Topic: topic, Partition: part, Value: value}, func(_ *kgo.Record, err error) {
				defer wg.Done()
				if err != nil {
					t.Errorf("%s: produce to partition %d: %v", when, part, err)
				}
			})
		}
		wg.Wait()
		p.Close()
		for part, leader := range leaders {
			if h.nodes[leader] == 0 {
				t.Errorf("%s: node %d, leader of partition %d, did not throttle client-id slow (throttles: %v)", when, leader, part, h.nodes)
			}
		}
	}
	check("right after AlterClientQuotas answered", 1, 2, 3)

	c.Kill(3)
	c.Restart(3)
	for p := range int32(3) {
		leaders[p], _ = c.WaitLeader(t, topic, p, waitTimeout)
	}
	check("after node 3 restarted", 3)
}
