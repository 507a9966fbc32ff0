package clustertest_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/clustertest"
	"github.com/runnel-io/runnel/internal/recordbatch"
)

// leaderMoveBound is how long a default franz-go producer may go without an
// acknowledgement on a partition whose leader a preferred leader election moved.
// Without KIP-951's hints it went 3.7-5 s (franz-go's MetadataMinAge); with hints read
// from an image behind the replicas (no hint in the refusal), 3.7 s in some runs.
const leaderMoveBound = 1500 * time.Millisecond

// TestLeaderMoveDefaultClient moves the leader of every partition twice (replicas
// rotated, then a preferred leader election) under a default franz-go producer, and
// requires it to be acknowledged again on every partition within leaderMoveBound of
// each election: the old leader's NOT_LEADER_OR_FOLLOWER names the new leader
// (KIP-951).
func TestLeaderMoveDefaultClient(t *testing.T) {
	skipIfShort(t)
	c := startCluster(t, 3)
	topic := topicName(t)
	createTopic(t, c, topic, 3, 3)
	all := []int32{0, 1, 2}
	for _, p := range all {
		c.WaitISR(t, topic, p, 3, waitTimeout)
	}
	acks := startFranzDefault(t, c, topic)
	if !acks.waitAll(time.Time{}, all, time.Now().Add(waitTimeout)) {
		t.Fatalf("no acknowledgement on every partition within %v: %s", waitTimeout, acks.failures())
	}
	adm := c.Admin(t)
	for round := range 2 {
		// Round 0 comes while the producer's metadata is fresh (it has just loaded
		// it), round 1 once it is older than franz-go's MetadataMinAge. Without the
		// hints, a refused produce in round 0 waited for the refresh MetadataMinAge
		// after the last one: 3.7-5 s.
		if round > 0 {
			time.Sleep(franzMetadataMinAge + time.Second)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		req := kadm.AlterPartitionAssignmentsReq{}
		for _, p := range all {
			st, err := c.PartitionFrom(ctx, int(c.LiveIDs()[0]), topic, p)
			if err != nil {
				t.Fatal(err)
			}
			// Rotate: the second replica becomes the preferred leader.
			req.Assign(topic, p, append(slices.Clone(st.Replicas[1:]), st.Replicas[0]))
		}
		resp, err := adm.AlterPartitionAssignments(ctx, req)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			t.Fatalf("round %d: reorder the replicas: %v", round, err)
		}
		elected := time.Now()
		res, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{topic: {0: {}, 1: {}, 2: {}}})
		if err != nil {
			t.Fatalf("round %d: elect leaders: %v", round, err)
		}
		for _, ps := range res {
			for p, r := range ps {
				if r.Err != nil && !errors.Is(r.Err, kerr.ElectionNotNeeded) {
					t.Fatalf("round %d: elect leaders: partition %d: %v", round, p, r.Err)
				}
			}
		}
		cancel()
		if !acks.waitAll(elected, all, elected.Add(leaderMoveBound)) {
			var gaps []string
			for _, p := range all {
				before, after := acks.around(p, elected)
				gaps = append(gaps, gapText(p, before, after))
			}
			t.Errorf("round %d: not acknowledged again on every partition within %v of the election: %v (%s)", round, leaderMoveBound, gaps, acks.failures())
		} else {
			t.Logf("round %d: acknowledged again on every partition %v after the election", round, time.Since(elected).Round(time.Millisecond))
		}
	}
}

// gapText says how long partition p went without an acknowledgement around a fault.
func gapText(p int32, before, after time.Time) string {
	if after.IsZero() {
		return fmt.Sprintf("partition %d: none since", p)
	}
	return fmt.Sprintf("partition %d: %s ms without an ack", p, ms(after.Sub(before)))
}

// TestNotLeaderNamesLeader: a produce (v10+) sent to a follower and a fetch (v16) sent
// to a node that holds no replica are answered NOT_LEADER_OR_FOLLOWER with the
// partition's leader and leader epoch (CurrentLeader) and the leader's endpoint among
// the response's brokers (KIP-951). (A follower serves a consumer's fetch from v11 on,
// as Kafka: KIP-392.)
func TestNotLeaderNamesLeader(t *testing.T) {
	skipIfShort(t)
	c := startCluster(t, 3)
	topic := topicName(t)
	createTopic(t, c, topic, 1, 2)
	c.WaitISR(t, topic, 0, 2, waitTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := c.PartitionFrom(ctx, int(c.LiveIDs()[0]), topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	follower := otherReplica(t, st.Replicas, st.Leader)
	outsider := int32(0) // the node that holds no replica
	for _, id := range c.LiveIDs() {
		if !slices.Contains(st.Replicas, id) {
			outsider = id
		}
	}
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
	var pb []brokerAddr
	for _, b := range pres.Brokers {
		pb = append(pb, brokerAddr{b.NodeID, b.Host, b.Port})
	}
	checkHint(t, "produce", pp.ErrorCode, pp.CurrentLeader.LeaderID, pp.CurrentLeader.LeaderEpoch, st, leaderAddr, pb)

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
	fres, err := freq.RequestWith(ctx, cl.Broker(int(outsider)))
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

// brokerAddr is one entry of a response's NodeEndpoints.
type brokerAddr struct {
	id   int32
	host string
	port int32
}

// checkHint requires a refusal naming st's leader and epoch, with the leader's
// endpoint (leaderAddr) among brokers.
func checkHint(t *testing.T, what string, code int16, leader, epoch int32, st clustertest.PartitionState, leaderAddr string, brokers []brokerAddr) {
	t.Helper()
	if code != kerr.NotLeaderForPartition.Code {
		t.Fatalf("%s to a node that does not lead: error %v, want NOT_LEADER_OR_FOLLOWER", what, kerr.ErrorForCode(code))
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
