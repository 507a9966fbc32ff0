package clustertest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/clustertest"
	"github.com/runnel-io/runnel/internal/log/logtest"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestNewPartitionFirstAck: followers park their fetches for replica.fetch.wait.max.ms
// (5 s here) on the partitions they already follow. A partition created meanwhile is
// in its ISR from the start, so its first acks=all write waits for both followers to
// fetch it; they must not first wait out the fetch they have parked.
func TestNewPartitionFirstAck(t *testing.T) {
	skipIfShort(t)
	c := clustertest.Start(t, clustertest.Options{Nodes: 3, StartTimeout: startTimeout,
		Sets: []string{"replica.fetch.wait.max.ms=5000"}})
	createTopic(t, c, topicName(t)+"-idle", 3, 3)
	time.Sleep(time.Second) // every follower has a fetch parked on the idle topic
	cl := c.Client(t)
	for round := range 3 {
		topic := fmt.Sprintf("%s-%d", topicName(t), round)
		createTopic(t, c, topic, 1, 3)
		leader, _ := c.WaitLeader(t, topic, 0, waitTimeout) // the request goes straight to it
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 15000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = logtest.Batch(1, 16)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		start := time.Now()
		resp, err := req.RequestWith(ctx, cl.Broker(int(leader)))
		took := time.Since(start)
		cancel()
		if err != nil {
			t.Fatalf("round %d: acks=all produce to %s-0 at leader %d: %v", round, topic, leader, err)
		}
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("round %d: acks=all produce to %s-0: %v", round, topic, kerr.ErrorForCode(code))
		}
		t.Logf("round %d: first acks=all write to %s-0 acknowledged after %v", round, topic, took.Round(time.Millisecond))
		if took > 2*time.Second {
			t.Errorf("round %d: the first acks=all write to new partition %s-0 took %v: a follower waited out its parked fetch (5 s)",
				round, topic, took.Round(time.Millisecond))
		}
	}
}
