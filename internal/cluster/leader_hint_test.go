package cluster_test

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/cluster"
	"github.com/runnel-io/runnel/internal/recordbatch"
)

// TestNotLeaderNamesLeader: a produce (v10+) and a fetch (v16) sent to a follower are
// answered NOT_LEADER_OR_FOLLOWER with the partition's leader and leader epoch
// (CurrentLeader) and the leader's endpoint among the response's brokers (KIP-951).
func TestNotLeaderNamesLeader(t *testing.T) {
	skipIfShort(t)
	c := startCluster(t, 3)
	topic := topicName(t)
	createTopic(t, c, topic, 1, 3)
	c.WaitISR(t, topic, 0, 3, waitTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := c.PartitionFrom(ctx, int(c.LiveIDs()[0]), topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	follower := otherReplica(t, st.Replicas, st.Leader)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Node(int(follower)).KafkaAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	leaderAddr := c.Node(int(st.Leader)).KafkaAddr

	b := recordbatch.NewBuilder(64)
	b.Add(nil, []byte("to a follower"), nil, time.Now().UnixMilli())
	batch := []byte(b.Build())
	preq := kmsg.NewPtrProduceRequest()
	preq.Acks, preq.TimeoutMillis = -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	preq.Topics = append(preq.Topics, rt)
	pres, err := preq.RequestWith(ctx, cl.Broker(int(follower)))
	if err != nil {
		t.Fatal(err)
	}
	if pres.Version < 10 {
		t.Fatalf("produce answered at v%d, want v10 or later", pres.Version)
	}
	pp := pres.Topics[0].Partitions[0]
	checkHint(t, "produce", pp.ErrorCode, pp.CurrentLeader.LeaderID, pp.CurrentLeader.LeaderEpoch, st, leaderAddr, brokersOf(pres.Brokers))

	freq := kmsg.NewPtrFetchRequest()
	freq.ReplicaID, freq.MaxWaitMillis, freq.MaxBytes = -1, 100, 1<<20
	tds, err := c.Admin(t).ListTopics(ctx, topic)
	if err != nil || tds[topic].Err != nil {
		t.Fatalf("topic id of %s: %v %v", topic, err, tds[topic].Err)
	}
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic, ft.TopicID = topic, tds[topic].ID // v13+ names topics by id
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.CurrentLeaderEpoch, fp.PartitionMaxBytes = st.LeaderEpoch, 1<<20
	ft.Partitions = append(ft.Partitions, fp)
	freq.Topics = append(freq.Topics, ft)
	fres, err := freq.RequestWith(ctx, cl.Broker(int(follower)))
	if err != nil {
		t.Fatal(err)
	}
	if fres.Version < 16 {
		t.Fatalf("fetch answered at v%d, want v16", fres.Version)
	}
	fpr := fres.Topics[0].Partitions[0]
	var fb []brokerAddr
	for _, b := range fres.Brokers {
		fb = append(fb, brokerAddr{b.NodeID, b.Host, b.Port})
	}
	checkHint(t, "fetch", fpr.ErrorCode, fpr.CurrentLeader.LeaderID, fpr.CurrentLeader.LeaderEpoch, st, leaderAddr, fb)

}

type brokerAddr struct {
	id   int32
	host string
	port int32
}

func brokersOf(bs []kmsg.ProduceResponseBroker) []brokerAddr {
	var out []brokerAddr
	for _, b := range bs {
		out = append(out, brokerAddr{b.NodeID, b.Host, b.Port})
	}
	return out
}

func checkHint(t *testing.T, what string, code int16, leader, epoch int32, st cluster.PartitionState, leaderAddr string, brokers []brokerAddr) {
	t.Helper()
	if code != kerr.NotLeaderForPartition.Code {
		t.Fatalf("%s to a follower: error %v, want NOT_LEADER_OR_FOLLOWER", what, kerr.ErrorForCode(code))
	}
	if leader != st.Leader || epoch != st.LeaderEpoch {
		t.Errorf("%s: CurrentLeader %d at epoch %d, want %d at epoch %d", what, leader, epoch, st.Leader, st.LeaderEpoch)
	}
	for _, b := range brokers {
		if b.id == st.Leader {
			if got := net.JoinHostPort(b.host, strconv.Itoa(int(b.port))); got != leaderAddr {
				t.Errorf("%s: the leader's endpoint is %s, want %s", what, got, leaderAddr)
			}
			return
		}
	}
	t.Errorf("%s: the response's brokers %v do not include the leader %d", what, brokers, st.Leader)
}
