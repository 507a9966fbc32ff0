package clustertest_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/clustertest"
)

// TestPerBrokerThrottleRate sets the replication throttle rates on broker 2 alone
// (IncrementalAlterConfigs on the broker resource "2", as kadm and
// kafka-configs --entity-name 2 send it). DescribeConfigs shows them on broker 2 with
// source DYNAMIC_BROKER_CONFIG and the synonyms in Kafka's order, and broker 1
// unchanged. Then one partition led by node 1 moves onto node 2 and another onto
// node 3, both throttled by their topic's throttled-replicas lists: only node 2's copy
// is throttled (it takes at least 0.8 × D/T), node 3's runs at full speed. A restart of node 2 keeps its rate (the
// metadata quorum holds it).
func TestPerBrokerThrottleRate(t *testing.T) {
	skipIfShort(t)
	// No balancer: its moves of the partitions placed on node 1 alone would race the
	// test's, under throttle rates of its own.
	c := clustertest.Start(t, clustertest.Options{Nodes: 3, StartTimeout: startTimeout,
		Sets: append(slices.Clone(clustertest.FastFailureDetection), "partition.autobalancing.mode=off")})
	topic := topicName(t)
	adm := c.Admin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	createAssigned(t, c, topic, [][]int32{{1}, {1}})

	const record, count = 64 << 10, 48 // D: 3 MiB per partition
	// T: 384 KiB/s on node 2, so D/T = 8 s. The throttle lets one second of its rate
	// through at once (replication.quota.window.size.seconds), so the copy takes
	// about D/T - 1 s.
	const rate = 384 << 10
	cl := c.Client(t, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerBatchCompression(kgo.NoCompression()))
	h := clustertest.NewHistory()
	for i := range 2 * count {
		r := &kgo.Record{Topic: topic, Partition: int32(i % 2), Value: make([]byte, record)}
		rand.Read(r.Value) // incompressible: D bytes on disk
		r.Value = append(h.NextValue(r.Partition), r.Value...)
		cl.Produce(ctx, r, h.Record)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	rv := fmt.Sprint(rate)
	resps, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
		{Name: "leader.replication.throttled.rate", Value: &rv},
		{Name: "follower.replication.throttled.rate", Value: &rv},
	}, 2)
	if err == nil {
		err = resps[0].Err
	}
	if err != nil {
		t.Fatalf("setting the throttle rates on broker 2: %v", err)
	}
	checkRate := func(node int32, wantValue, wantSource string, wantSynonyms ...string) {
		t.Helper()
		rcs, err := adm.DescribeBrokerConfigs(ctx, node)
		if err != nil {
			t.Fatalf("DescribeConfigs of broker %d: %v", node, err)
		}
		rc, err := rcs.On(fmt.Sprint(node), nil)
		if err == nil {
			err = rc.Err
		}
		if err != nil {
			t.Fatalf("DescribeConfigs of broker %d: %v", node, err)
		}
		for _, cfg := range rc.Configs {
			if cfg.Key != "follower.replication.throttled.rate" {
				continue
			}
			var syns []string
			for _, s := range cfg.Synonyms {
				v := "(null)"
				if s.Value != nil {
					v = *s.Value
				}
				syns = append(syns, s.Source.String()+"="+v)
			}
			if cfg.MaybeValue() != wantValue || cfg.Source.String() != wantSource || !slices.Equal(syns, wantSynonyms) {
				t.Errorf("broker %d: follower.replication.throttled.rate = %s from %s, synonyms %v; want %s from %s, synonyms %v",
					node, cfg.MaybeValue(), cfg.Source, syns, wantValue, wantSource, wantSynonyms)
			}
			return
		}
		t.Errorf("broker %d describes no follower.replication.throttled.rate", node)
	}
	unlimited := fmt.Sprint(int64(1<<63 - 1))
	checkRate(2, rv, "DYNAMIC_BROKER_CONFIG", "DYNAMIC_BROKER_CONFIG="+rv, "DEFAULT_CONFIG="+unlimited)
	checkRate(1, unlimited, "DEFAULT_CONFIG", "DEFAULT_CONFIG="+unlimited)

	tresp, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Name: "leader.replication.throttled.replicas", Value: kmsg.StringPtr("0:1,1:1")},
		{Name: "follower.replication.throttled.replicas", Value: kmsg.StringPtr("0:2,1:3")},
	}, topic)
	if err == nil {
		err = tresp[0].Err
	}
	if err != nil {
		t.Fatalf("setting the throttled replicas: %v", err)
	}
	start := time.Now()
	alter(t, ctx, adm, topic, 0, []int32{1, 2})
	alter(t, ctx, adm, topic, 1, []int32{1, 3})
	fast := waitMoved(t, c, topic, 1, 3, start)
	slow := waitMoved(t, c, topic, 0, 2, start)
	d := float64(record * count)
	t.Logf("%.0f MiB onto node 2 (throttled at %d KiB/s) in %v, onto node 3 (no rate of its own) in %v; D/T %.1f s",
		d/(1<<20), rate>>10, slow.Round(time.Millisecond), fast.Round(time.Millisecond), d/rate)
	if min := time.Duration(0.8 * d / rate * float64(time.Second)); slow < min {
		t.Errorf("the copy onto node 2 took %v, less than 0.8 × D/T = %v: broker 2's rate did not hold", slow.Round(time.Millisecond), min.Round(time.Millisecond))
	}
	if fast > slow/2 {
		t.Errorf("the copy onto node 3 took %v, the throttled one onto node 2 %v: node 3 looks throttled too", fast, slow)
	}
	if got := metricValue(t, c.Node(2), `runnel_replication_throttled_bytes_total{side="follower"}`); got < 0.9*d {
		t.Errorf("node 2 counted %v throttled bytes fetched, want about %v", got, d)
	}

	if err := c.Stop(2); err != nil {
		t.Fatal(err)
	}
	c.Restart(2)
	checkRate(2, rv, "DYNAMIC_BROKER_CONFIG", "DYNAMIC_BROKER_CONFIG="+rv, "DEFAULT_CONFIG="+unlimited)
	c.WaitISR(t, topic, 0, 2, waitTimeout)
	h.Check(t, c, topic)
}

// waitMoved waits until node is in the ISR of topic-p and returns the time since start.
func waitMoved(t *testing.T, c *clustertest.Cluster, topic string, p, node int32, start time.Time) time.Duration {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		st, err := c.PartitionFrom(context.Background(), 1, topic, p)
		if err == nil && slices.Contains(st.ISR, node) {
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %d never joined the ISR of %s-%d: %+v %v", node, topic, p, st, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
