package clustertest_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/clustertest"
)

// reassignTimeout bounds a partition move of the few thousand records these tests
// write (it takes well under a second on loopback).
const reassignTimeout = 30 * time.Second

// TestReassignUnderLoad moves every partition of a topic (RF 2 over three nodes) onto
// the node it did not use, under an acks=all idempotent load with a consumer reading
// along; half the moves take the replica that leads away, so leadership hands over in
// the move. Afterwards every acknowledged record is on every replica of the new
// assignment, the consumer read every offset once, and the replicas that left have
// deleted their copies.
func TestReassignUnderLoad(t *testing.T) {
	skipIfShort(t)
	c := startCluster(t, 3)
	topic := topicName(t)
	const parts = 4
	createTopic(t, c, topic, parts, 2)
	h := clustertest.NewHistory()
	load := c.StartLoad(t, h, clustertest.LoadOptions{Topic: topic, Partitions: parts, Rate: 400})
	reader := startReadAlong(t, c, topic, parts)
	waitAcks(t, h, 400, "before the moves")

	adm := c.Admin(t)
	before := map[int32]clustertest.PartitionState{}
	req := kadm.AlterPartitionAssignmentsReq{}
	targets := map[int32][]int32{}
	for p := range int32(parts) {
		c.WaitISR(t, topic, p, 2, waitTimeout)
		full, _ := c.PartitionFrom(context.Background(), int(c.LiveIDs()[0]), topic, p)
		before[p] = full
		spare := spareNode(full.Replicas, 3)
		// Even partitions lose their leader, odd ones their follower.
		leaving := full.Leader
		if p%2 == 1 {
			leaving = otherReplica(t, full.Replicas, full.Leader)
		}
		target := []int32{spare}
		for _, r := range full.Replicas {
			if r != leaving {
				target = append(target, r)
			}
		}
		targets[p] = target
		req.Assign(topic, p, target)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		t.Fatalf("AlterPartitionReassignments: %v", err)
	}
	resp.Each(func(r kadm.AlterPartitionAssignmentsResponse) {
		if r.Err != nil {
			t.Errorf("move of %s-%d: %v (%s)", r.Topic, r.Partition, r.Err, r.ErrMessage)
		}
	})
	start := time.Now()
	waitNoReassignments(t, c, adm, topic)
	t.Logf("every move done %v after AlterPartitionReassignments answered", time.Since(start).Round(time.Millisecond))
	for p := range int32(parts) {
		c.WaitISR(t, topic, p, 2, waitTimeout)
		full := waitReplicas(t, c, topic, p, targets[p])
		if !slices.Contains(targets[p], full.Leader) {
			t.Errorf("%s-%d: leader %d is not a replica of %v", topic, p, full.Leader, targets[p])
		}
		// The replica that left deletes its copy once it applies the completion.
		for _, r := range before[p].Replicas {
			if slices.Contains(targets[p], r) {
				continue
			}
			dir := c.Node(int(r)).PartitionDir(topic, p)
			deadline := time.Now().Add(waitTimeout)
			for {
				if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
					break
				}
				if time.Now().After(deadline) {
					t.Errorf("node %d still has %s after %s-%d moved off it", r, dir, topic, p)
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
	}
	waitAcks(t, h, h.Len()+400, "after the moves")
	stopLoad(t, load, h)
	h.Check(t, c, topic)
	reader.check(t, c, h, topic)
}

// TestReassignSurvivesKillsAndCancels: the active controller, which is also the node
// about to receive a replica, is killed -9; a move onto it is started while it is down
// (and a new controller is being elected) and stays in progress, since the new replica
// cannot catch up; once the node is back the move completes with nothing lost. Then a
// move onto another node that is down is cancelled: the original assignment is back,
// with its ISR. One node is down at a time, so the metadata quorum keeps a majority.
func TestReassignSurvivesKillsAndCancels(t *testing.T) {
	skipIfShort(t)
	c := startCluster(t, 3)
	topic := topicName(t)
	const parts = 3 // RF 2 over 3 nodes: every node is left out of some partition
	createTopic(t, c, topic, parts, 2)
	h := clustertest.NewHistory()
	load := c.StartLoad(t, h, clustertest.LoadOptions{Topic: topic, Partitions: parts, Rate: 300})
	waitAcks(t, h, 300, "before the moves")
	adm := c.Admin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	ctrl := c.WaitController(t, -1, waitTimeout)
	var moved int32 = -1
	var p0 clustertest.PartitionState
	for p := range int32(parts) {
		st, _ := c.PartitionFrom(context.Background(), int(ctrl), topic, p)
		if !slices.Contains(st.Replicas, ctrl) {
			moved, p0 = p, st
			break
		}
	}
	if moved < 0 {
		t.Fatalf("no partition of %s without node %d", topic, ctrl)
	}
	c.Kill(int(ctrl))
	target := []int32{p0.Leader, ctrl}
	alter(t, ctx, adm, topic, moved, target)
	if got := listReassignments(t, c, adm, topic); !slices.Equal(got, []int32{moved}) {
		t.Fatalf("reassignments in progress with node %d down: %v, want [%d]", ctrl, got, moved)
	}
	// runnel cluster status shows the move in progress.
	status := runCLI("-b", c.Bootstrap(), "cluster", "status")
	if want := "Reassignments in progress (1;"; status.code != 0 || !strings.Contains(status.stdout, want) ||
		!strings.Contains(status.stdout, fmt.Sprintf("%s-%d  replicas", topic, moved)) {
		t.Errorf("cluster status during the move (exit %d) does not show it:\n%s%s", status.code, status.stdout, status.stderr)
	}
	waitAcks(t, h, h.Len()+200, "with the controller and the receiving node killed during the move")
	c.Restart(int(ctrl))
	waitNoReassignments(t, c, adm, topic)
	waitReplicas(t, c, topic, moved, target)
	// Cancel a move half-way: another partition onto a node that is down (not the
	// controller, so that the quorum stays up).
	ctrl = c.WaitController(t, -1, waitTimeout)
	var other int32 = -1
	var p1 clustertest.PartitionState
	var dest1 int32
	for p := range int32(parts) {
		st, _ := c.PartitionFrom(context.Background(), int(ctrl), topic, p)
		if spare := spareNode(st.Replicas, 3); p != moved && spare != ctrl {
			other, p1, dest1 = p, st, spare
			break
		}
	}
	if other < 0 {
		t.Fatalf("no partition of %s whose spare node is not the controller %d", topic, ctrl)
	}
	c.Kill(int(dest1))
	alter(t, ctx, adm, topic, other, []int32{dest1, p1.Leader})
	if got := listReassignments(t, c, adm, topic); !slices.Equal(got, []int32{other}) {
		t.Fatalf("reassignments in progress: %v, want [%d]", got, other)
	}
	creq := kadm.AlterPartitionAssignmentsReq{}
	creq.CancelAssign(topic, other)
	cresp, err := adm.AlterPartitionAssignments(ctx, creq)
	if err != nil {
		t.Fatal(err)
	}
	cresp.Each(func(r kadm.AlterPartitionAssignmentsResponse) {
		if r.Err != nil {
			t.Errorf("cancel of %s-%d: %v", r.Topic, r.Partition, r.Err)
		}
	})
	if got := listReassignments(t, c, adm, topic); len(got) != 0 {
		t.Fatalf("still in progress after the cancel: %v", got)
	}
	after, _ := c.PartitionFrom(context.Background(), int(ctrl), topic, other)
	if !sameSet(after.Replicas, p1.Replicas) || slices.Contains(after.ISR, dest1) {
		t.Fatalf("after the cancel: replicas %v ISR %v, want the original %v without %d", after.Replicas, after.ISR, p1.Replicas, dest1)
	}
	// Cancelling again: nothing in progress.
	cresp, err = adm.AlterPartitionAssignments(ctx, creq)
	if err != nil {
		t.Fatal(err)
	}
	cresp.Each(func(r kadm.AlterPartitionAssignmentsResponse) {
		if !errors.Is(r.Err, kerr.NoReassignmentInProgress) {
			t.Errorf("second cancel of %s-%d: %v, want NO_REASSIGNMENT_IN_PROGRESS", r.Topic, r.Partition, r.Err)
		}
	})
	c.Restart(int(dest1))
	waitAcks(t, h, h.Len()+200, "after the cancel")
	stopLoad(t, load, h)
	for p := range int32(parts) {
		c.WaitISR(t, topic, p, 2, waitTimeout)
	}
	h.Check(t, c, topic)
}

// waitReplicas waits until every live node's metadata shows targets as the replicas
// of topic-p (a move completes on its own, after ListPartitionReassignments was asked),
// and returns the partition as the last node saw it.
func waitReplicas(t *testing.T, c *clustertest.Cluster, topic string, p int32, target []int32) clustertest.PartitionState {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		var st clustertest.PartitionState
		var behind []string
		for _, id := range c.LiveIDs() {
			s, err := c.PartitionFrom(context.Background(), int(id), topic, p)
			st = s
			if err != nil || !slices.Equal(s.Replicas, target) {
				behind = append(behind, fmt.Sprintf("node %d: %v %v", id, s.Replicas, err))
			}
		}
		if len(behind) == 0 {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s-%d: replicas never %v on every node: %v", topic, p, target, behind)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// spareNode is the node of 1..n that is not in replicas (RF n-1).
func spareNode(replicas []int32, n int32) int32 {
	for id := int32(1); id <= n; id++ {
		if !slices.Contains(replicas, id) {
			return id
		}
	}
	panic(fmt.Sprintf("no spare node among 1..%d besides %v", n, replicas))
}

func sameSet(a, b []int32) bool {
	return len(a) == len(b) && !slices.ContainsFunc(a, func(x int32) bool { return !slices.Contains(b, x) })
}

func alter(t *testing.T, ctx context.Context, adm *kadm.Client, topic string, p int32, target []int32) {
	t.Helper()
	req := kadm.AlterPartitionAssignmentsReq{}
	req.Assign(topic, p, target)
	resp, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		t.Fatalf("AlterPartitionReassignments of %s-%d to %v: %v", topic, p, target, err)
	}
	resp.Each(func(r kadm.AlterPartitionAssignmentsResponse) {
		if r.Err != nil {
			t.Fatalf("move of %s-%d to %v: %v (%s)", r.Topic, r.Partition, target, r.Err, r.ErrMessage)
		}
	})
}

// listReassignments returns the partitions of topic with a reassignment in progress
// (kadm asks nothing for an empty set, so every partition is named).
func listReassignments(t *testing.T, c *clustertest.Cluster, adm *kadm.Client, topic string) []int32 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	set := kadm.TopicsSet{}
	set.Add(topic, c.Partitions(t, topic)...)
	resp, err := adm.ListPartitionReassignments(ctx, set)
	if err != nil {
		t.Fatalf("ListPartitionReassignments: %v", err)
	}
	var out []int32
	resp.Each(func(r kadm.ListPartitionReassignmentsResponse) {
		if r.Topic == topic {
			out = append(out, r.Partition)
		}
	})
	slices.Sort(out)
	return out
}

// waitNoReassignments waits until no partition of topic is being reassigned.
func waitNoReassignments(t *testing.T, c *clustertest.Cluster, adm *kadm.Client, topic string) {
	t.Helper()
	deadline := time.Now().Add(reassignTimeout)
	for {
		got := listReassignments(t, c, adm, topic)
		if len(got) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("partitions %v of %s still being reassigned after %v", got, topic, reassignTimeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestReassignThrottled moves a replica holding D bytes under KIP-73 throttles of T
// bytes/s on both sides, as kafka-reassign-partitions.sh sets them (the broker rates,
// the leaders' replicas on the leader side, the moving replica on the follower side),
// while an acks=all load writes to the same partition. The move takes at least 0.8 ×
// D/T (the throttle allows a burst of one second's worth, replication.quota.window
// .size.seconds), and the load's acknowledgements keep flowing: the ISR's traffic is not
// throttled.
func TestReassignThrottled(t *testing.T) {
	skipIfShort(t)
	c := startCluster(t, 3)
	topic := topicName(t)
	createTopic(t, c, topic, 1, 2)
	st, _ := c.PartitionFrom(context.Background(), int(c.LiveIDs()[0]), topic, 0)
	dest := spareNode(st.Replicas, 3)

	// D bytes on the partition, before the move.
	const record, count = 64 << 10, 96 // 6 MiB
	const rate = 768 << 10             // T: 768 KiB/s, so D/T = 8 s
	cl := c.Client(t, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerBatchCompression(kgo.NoCompression()))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for range count {
		r := &kgo.Record{Topic: topic, Partition: 0, Value: make([]byte, record)}
		rand.Read(r.Value) // incompressible: D bytes on disk
		cl.Produce(ctx, r, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	adm := c.Admin(t)
	r := fmt.Sprint(rate)
	bresp, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
		{Name: "leader.replication.throttled.rate", Value: &r},
		{Name: "follower.replication.throttled.rate", Value: &r},
	})
	if err == nil {
		for _, b := range bresp {
			err = errors.Join(err, b.Err)
		}
	}
	if err != nil {
		t.Fatalf("setting the throttle rates: %v", err)
	}
	var leaders []string
	for _, id := range st.Replicas {
		leaders = append(leaders, fmt.Sprintf("0:%d", id))
	}
	lv, fv := strings.Join(leaders, ","), fmt.Sprintf("0:%d", dest)
	tresp, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Name: "leader.replication.throttled.replicas", Value: &lv},
		{Name: "follower.replication.throttled.replicas", Value: &fv},
	}, topic)
	if err == nil {
		for _, tr := range tresp {
			err = errors.Join(err, tr.Err)
		}
	}
	if err != nil {
		t.Fatalf("setting the throttled replicas: %v", err)
	}

	h := clustertest.NewHistory()
	load := c.StartLoad(t, h, clustertest.LoadOptions{Topic: topic, Partitions: 1, Rate: 200})
	waitAcks(t, h, 100, "before the move")
	load.ResetStalls()
	start := time.Now()
	alter(t, ctx, adm, topic, 0, []int32{st.Leader, dest})
	time.Sleep(time.Second) // into the move: the progress metric must show what is left
	if left := metricValue(t, c.Node(int(st.Leader)), "runnel_reassignment_bytes_remaining"); left <= 0 {
		t.Errorf("runnel_reassignment_bytes_remaining on the leader during the move = %v, want > 0", left)
	}
	waitNoReassignments(t, c, adm, topic)
	took := time.Since(start)
	if sent := metricValue(t, c.Node(int(dest)), `runnel_replication_throttled_bytes_total{side="follower"}`); sent < 0.9*float64(record*count) {
		t.Errorf("node %d counted %v throttled bytes fetched, want about %d", dest, sent, record*count)
	}
	stall, _ := load.MaxStall()
	d := float64(record * count)
	t.Logf("moved %.1f MiB under a %d KiB/s throttle in %v (D/T %.1f s); longest gap between acknowledgements meanwhile %v",
		d/(1<<20), rate>>10, took.Round(time.Millisecond), d/rate, stall.Round(time.Millisecond))
	if min := time.Duration(0.8 * d / rate * float64(time.Second)); took < min {
		t.Errorf("the throttled move took %v, less than 0.8 × D/T = %v: the throttle did not hold", took.Round(time.Millisecond), min.Round(time.Millisecond))
	}
	if stall > 2*time.Second {
		t.Errorf("acks=all stalled %v during the throttled move: the ISR's traffic was throttled", stall.Round(time.Millisecond))
	}
	stopLoad(t, load, h)
	waitReplicas(t, c, topic, 0, []int32{st.Leader, dest})
	h.Check(t, c, topic)
}

// TestScaleOutBalancesNewNode: three nodes hold a topic of 6 partitions at RF 2 (four
// replicas and two preferred leaderships each); a fourth node joins under an acks=all
// load with a consumer reading along. With partition.autobalancing.mode=node_add (the
// default) the controller moves it its share: afterwards every node holds 3 replicas
// (12 / 4) and leads 1 or 2 partitions, nothing acknowledged is lost, and the consumer
// read every offset once.
func TestScaleOutBalancesNewNode(t *testing.T) {
	skipIfShort(t)
	c := startCluster(t, 3)
	topic := topicName(t)
	const parts = 6
	createTopic(t, c, topic, parts, 2)
	h := clustertest.NewHistory()
	load := c.StartLoad(t, h, clustertest.LoadOptions{Topic: topic, Partitions: parts, Rate: 300})
	reader := startReadAlong(t, c, topic, parts)
	waitAcks(t, h, 300, "before the new node")

	joined := time.Now()
	n := c.AddNode(t)
	t.Logf("node %d joined in %v", n.ID, time.Since(joined).Round(time.Millisecond))
	adm := c.Admin(t)
	deadline := time.Now().Add(waitTimeout)
	var replicas, leaders map[int32]int
	for {
		replicas, leaders = map[int32]int{}, map[int32]int{}
		settled := len(listReassignments(t, c, adm, topic)) == 0
		for p := range int32(parts) {
			st, err := c.PartitionFrom(context.Background(), int(n.ID), topic, p)
			if err != nil || len(st.ISR) != 2 {
				settled = false
				break
			}
			for _, r := range st.Replicas {
				replicas[r]++
			}
			leaders[st.Leader]++
		}
		if settled && replicas[n.ID] == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %d never got its share: replicas per node %v, leaders %v", n.ID, replicas, leaders)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("balanced %v after the join: replicas per node %v, leaders per node %v", time.Since(joined).Round(time.Millisecond), replicas, leaders)
	for id := int32(1); id <= 4; id++ {
		if replicas[id] != 3 {
			t.Errorf("node %d holds %d replicas, want 3 (12 over 4 nodes)", id, replicas[id])
		}
		if leaders[id] < 1 || leaders[id] > 2 {
			t.Errorf("node %d leads %d partitions, want 1 or 2 (6 over 4 nodes)", id, leaders[id])
		}
	}
	waitAcks(t, h, h.Len()+300, "after the balance")
	stopLoad(t, load, h)
	h.Check(t, c, topic)
	reader.check(t, c, h, topic)
}

// TestDecommission drains a node under load (every replica moved off it by
// reassignment), then unregisters it: refused while it holds replicas and while it
// runs, accepted once it is drained and stopped; the cluster then lists three nodes and
// nothing acknowledged was lost.
func TestDecommission(t *testing.T) {
	skipIfShort(t)
	c := clustertest.Start(t, clustertest.Options{Nodes: 3, StartTimeout: startTimeout,
		Sets: append(slices.Clone(clustertest.FastFailureDetection), "partition.autobalancing.mode=off")})
	n := c.AddNode(t)
	topic := topicName(t)
	const parts = 4
	createTopic(t, c, topic, parts, 2)
	h := clustertest.NewHistory()
	load := c.StartLoad(t, h, clustertest.LoadOptions{Topic: topic, Partitions: parts, Rate: 300})
	waitAcks(t, h, 300, "before the drain")
	cl := c.Client(t)
	unregister := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		req := kmsg.NewPtrUnregisterBrokerRequest()
		req.BrokerID = n.ID
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return fmt.Errorf("%w: %s", err, kmsgString(resp.ErrorMessage))
		}
		return nil
	}
	var holding []int32
	for p := range int32(parts) {
		st, _ := c.PartitionFrom(context.Background(), int(c.LiveIDs()[0]), topic, p)
		if slices.Contains(st.Replicas, n.ID) {
			holding = append(holding, p)
		}
	}
	if len(holding) == 0 {
		t.Fatalf("node %d holds no replica of %s to drain", n.ID, topic)
	}
	if err := unregister(); !errors.Is(err, kerr.InvalidRequest) || !strings.Contains(err.Error(), "holds replicas") {
		t.Fatalf("unregistering node %d that holds replicas: %v, want INVALID_REQUEST naming the replicas", n.ID, err)
	}
	adm := c.Admin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, p := range holding {
		st, _ := c.PartitionFrom(context.Background(), int(c.LiveIDs()[0]), topic, p)
		var target []int32
		for _, r := range st.Replicas {
			if r != n.ID {
				target = append(target, r)
			}
		}
		for id := int32(1); id <= 3; id++ {
			if !slices.Contains(target, id) && len(target) < len(st.Replicas) {
				target = append(target, id)
			}
		}
		alter(t, ctx, adm, topic, p, target)
	}
	waitNoReassignments(t, c, adm, topic)
	if err := unregister(); !errors.Is(err, kerr.InvalidRequest) || !strings.Contains(err.Error(), "running") {
		t.Fatalf("unregistering running node %d: %v, want INVALID_REQUEST saying it runs", n.ID, err)
	}
	if err := c.Stop(int(n.ID)); err != nil {
		t.Logf("stopping node %d: %v", n.ID, err)
	}
	deadline := time.Now().Add(waitTimeout)
	for {
		err := unregister()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("unregistering stopped, drained node %d: %v", n.ID, err)
		}
		time.Sleep(200 * time.Millisecond) // until the controller has fenced the stopped node
	}
	md, err := c.MetadataFrom(context.Background(), int(c.LiveIDs()[0]), topic)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range md.Brokers {
		if b.NodeID == n.ID {
			t.Errorf("node %d still listed after it was unregistered", n.ID)
		}
	}
	// Started again, the unregistered node (no longer in the metadata quorum's
	// configuration, its own Raft state still naming it) registers afresh and serves.
	c.Restart(int(n.ID))
	waitAcks(t, h, h.Len()+300, "after the decommission")
	stopLoad(t, load, h)
	h.Check(t, c, topic)
}

func kmsgString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// metricValue scrapes one sample (name with its labels, as /metrics prints it) from a
// node's /metrics; -1 when it is absent.
func metricValue(t *testing.T, n *clustertest.Node, sample string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + n.HTTPAddr + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics of node %d: %v", n.ID, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, sample+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("node %d: %s: %v", n.ID, line, err)
			}
			return f
		}
	}
	return -1
}
