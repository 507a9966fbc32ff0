package clustertest_test

import (
	"context"
	"crypto/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/clustertest"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestBalancerThrottledJoin: a node joins three that hold D bytes over 4 partitions at
// RF 3, under an acks=all load, with partition.autobalancing.throttled.rate=T. The
// node_add balancer gives it its share (3 of the 12 replicas) by throttled moves: the
// moves take at least 0.8 × D/T, where D is what the new node copied (its follower
// throttle counted it: the balancer listed the moving replicas), the load's
// acknowledgements keep flowing meanwhile (the ISR's traffic is not throttled), and
// afterwards the balancer has removed the replica lists it added and left the one an
// operator set; nothing acknowledged is lost.
func TestBalancerThrottledJoin(t *testing.T) {
	skipIfShort(t)
	const rate = 1 << 20 // T: 1 MiB/s
	c := clustertest.Start(t, clustertest.Options{Nodes: 3, StartTimeout: startTimeout,
		Sets: append(slices.Clone(clustertest.FastFailureDetection), "partition.autobalancing.throttled.rate=1048576")})
	topic := topicName(t)
	const parts = 4
	createTopic(t, c, topic, parts, 3)

	// An operator's throttled replica on the leader side, which must survive.
	const operatorList = "0:1"
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	adm := c.Admin(t)
	setTopicConfig(t, ctx, adm, topic, "leader.replication.throttled.replicas", operatorList)

	// 3 MiB of incompressible records per partition before the join.
	const record, perPart = 64 << 10, 48
	cl := c.Client(t, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerBatchCompression(kgo.NoCompression()))
	for p := range int32(parts) {
		for range perPart {
			r := &kgo.Record{Topic: topic, Partition: p, Value: make([]byte, record)}
			rand.Read(r.Value)
			cl.Produce(ctx, r, nil)
		}
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	h := clustertest.NewHistory()
	load := c.StartLoad(t, h, clustertest.LoadOptions{Topic: topic, Partitions: parts, Rate: 200})
	waitAcks(t, h, 200, "before the join")
	load.ResetStalls()
	start := time.Now()
	n := c.AddNode(t)
	// The moves start within a liveness tick of the node being live. The balancer
	// proposes the moves and their throttles in one batch, so one node's image has both
	// or neither; both reads go to node 1, which answers both from its own image
	// (DescribeConfigs through kadm would go to any node, and one that had not applied
	// the batch yet answered without the throttle in a CI run, as a Kafka broker's
	// metadata cache can).
	direct := c.Client(t)
	deadline := time.Now().Add(30 * time.Second)
	for len(reassigningOn(t, ctx, direct, 1, topic)) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the balancer started no move onto node %d within 30 s of its join", n.ID)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if v := topicConfigOn(t, ctx, direct, 1, topic, "follower.replication.throttled.replicas"); !strings.Contains(v, ":4") {
		t.Errorf("during the moves node 1 shows follower.replication.throttled.replicas = %q, want node 4's moving replicas listed", v)
	}
	waitNoReassignments(t, c, adm, topic)
	took := time.Since(start)
	d := metricValue(t, n, `runnel_replication_throttled_bytes_total{side="follower"}`)
	stall, _ := load.MaxStall()
	t.Logf("node %d copied %.1f MiB under the balancer's %d KiB/s throttle in %v (D/T %.1f s); longest gap between acknowledgements %v",
		n.ID, d/(1<<20), rate>>10, took.Round(time.Millisecond), d/rate, stall.Round(time.Millisecond))
	if want := 0.9 * 3 * record * perPart; d < want {
		t.Errorf("node %d fetched %.0f throttled bytes, want at least %.0f (3 partitions of %d bytes): the moving replicas were not throttled",
			n.ID, d, want, record*perPart)
	}
	if min := time.Duration(0.8 * d / rate * float64(time.Second)); took < min {
		t.Errorf("the balancer's moves took %v, less than 0.8 × D/T = %v: the throttle did not hold", took.Round(time.Millisecond), min.Round(time.Millisecond))
	}
	if stall > 2*time.Second {
		t.Errorf("acks=all stalled %v during the balancer's throttled moves", stall.Round(time.Millisecond))
	}

	// The balancer removes what it added once nothing moves (its next tick).
	deadline = time.Now().Add(10 * time.Second)
	for {
		lv := topicConfigOn(t, ctx, direct, 1, topic, "leader.replication.throttled.replicas")
		fv := topicConfigOn(t, ctx, direct, 1, topic, "follower.replication.throttled.replicas")
		if lv == operatorList && fv == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the moves the throttled replicas are leader %q, follower %q; want the operator's %q and none", lv, fv, operatorList)
		}
		time.Sleep(100 * time.Millisecond)
	}
	replicas := map[int32]int{}
	for p := range int32(parts) {
		st, err := c.PartitionFrom(ctx, int(n.ID), topic, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range st.Replicas {
			replicas[r]++
		}
	}
	if replicas[n.ID] != 3 {
		t.Errorf("node %d holds %d replicas after the balance, want 3 (replicas per node %v)", n.ID, replicas[n.ID], replicas)
	}
	waitAcks(t, h, h.Len()+200, "after the balance")
	stopLoad(t, load, h)
	h.Check(t, c, topic)
}

func setTopicConfig(t *testing.T, ctx context.Context, adm *kadm.Client, topic, key, value string) {
	t.Helper()
	resp, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: key, Value: &value}}, topic)
	if err == nil {
		for _, r := range resp {
			if r.Err != nil {
				err = r.Err
			}
		}
	}
	if err != nil {
		t.Fatalf("setting %s=%s on topic %s: %v", key, value, topic, err)
	}
}

// reassigningOn lists topic's partitions being reassigned, as node answers from its
// own metadata image.
func reassigningOn(t *testing.T, ctx context.Context, cl *kgo.Client, node int32, topic string) []int32 {
	t.Helper()
	req := kmsg.NewPtrListPartitionReassignmentsRequest()
	req.TimeoutMillis = 10000
	resp, err := req.RequestWith(ctx, cl.Broker(int(node)))
	if err != nil {
		t.Fatalf("ListPartitionReassignments to node %d: %v", node, err)
	}
	var out []int32
	for _, rt := range resp.Topics {
		if rt.Topic == topic {
			for _, rp := range rt.Partitions {
				out = append(out, rp.Partition)
			}
		}
	}
	return out
}

// topicConfigOn returns topic's dynamic value of key, as node answers it from its own
// image ("" when the topic does not override it).
func topicConfigOn(t *testing.T, ctx context.Context, cl *kgo.Client, node int32, topic, key string) string {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName, rr.ConfigNames = kmsg.ConfigResourceTypeTopic, topic, []string{key}
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(ctx, cl.Broker(int(node)))
	if err != nil {
		t.Fatalf("DescribeConfigs of topic %q to node %d: %v", topic, node, err)
	}
	for _, res := range resp.Resources {
		if res.ErrorCode != 0 {
			t.Fatalf("DescribeConfigs of topic %q on node %d: error code %d", topic, node, res.ErrorCode)
		}
		for _, cfg := range res.Configs {
			if cfg.Name == key && cfg.Source == kmsg.ConfigSourceDynamicTopicConfig && cfg.Value != nil {
				return *cfg.Value
			}
		}
	}
	return ""
}
