package cluster_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/cluster"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestKillLeaderUnderLoad kills -9 the leader of partition 0 three times while a
// producer writes four partitions at acks=all, restarting the node each time, and
// measures how long partition 0 refuses writes after each kill (failover_ms).
func TestKillLeaderUnderLoad(t *testing.T) {
	skipIfShort(t)
	c := startCluster(t, 3)
	topic := topicName(t)
	const parts = 4
	createTopic(t, c, topic, parts, 3)
	h := cluster.NewHistory()
	load := c.StartLoad(t, h, cluster.LoadOptions{Topic: topic, Partitions: parts, Rate: 400})
	fo := c.Client(t, cluster.LoadDefaults()...) // the client that measures the failover
	var worst time.Duration
	for round := 1; round <= 3; round++ {
		waitAcks(t, h, h.Len()+300, "before the kill")
		leader, epoch := c.WaitLeader(t, topic, 0, waitTimeout)
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		if err := produceSync(ctx, fo, h, topic, 0); err != nil {
			t.Fatalf("round %d: produce to %s-0 before the kill: %v", round, topic, err)
		}
		killed := time.Now()
		c.Kill(int(leader))
		err := produceSync(ctx, fo, h, topic, 0)
		took := time.Since(killed)
		cancel()
		if err != nil {
			t.Fatalf("round %d: %s-0 accepted no write within %v of killing its leader %d: %v", round, topic, waitTimeout, leader, err)
		}
		worst = max(worst, took)
		t.Logf("failover_ms=%s round=%d killed_leader=%d epoch=%d", ms(took), round, leader, epoch)
		next, nextEpoch := c.WaitLeader(t, topic, 0, waitTimeout)
		if next == leader || nextEpoch <= epoch {
			t.Errorf("round %d: after killing leader %d (epoch %d) the leader is %d epoch %d", round, leader, epoch, next, nextEpoch)
		}
		c.Restart(int(leader))
		if !waitAllISR(t, c, topic, parts, 3) {
			break
		}
	}
	t.Logf("failover_ms_max=%s", ms(worst))
	stopLoad(t, load, h)
	h.Check(t, c, topic)
}

// TestPausedLeader stops the leader of partition 0 with SIGSTOP for twice the broker
// session timeout, so that the controller fences it and elects another leader, then
// resumes it. The resumed node must step down and acknowledge nothing that the new
// leader does not hold: every acknowledged record must be in every ISR replica.
func TestPausedLeader(t *testing.T) {
	skipIfShort(t)
	c := startCluster(t, 3)
	topic := topicName(t)
	const parts = 3
	createTopic(t, c, topic, parts, 3)
	h := cluster.NewHistory()
	load := c.StartLoad(t, h, cluster.LoadOptions{Topic: topic, Partitions: parts, Rate: 300})
	waitAcks(t, h, 300, "before the pause")
	leader, epoch := c.WaitLeader(t, topic, 0, waitTimeout)
	led := ledBy(t, c, topic, parts, leader)

	paused := time.Now()
	c.Pause(int(leader))
	next, nextEpoch := c.WaitLeader(t, topic, 0, waitTimeout)
	elected := time.Since(paused)
	if next == leader || nextEpoch <= epoch {
		t.Errorf("with leader %d paused, %s-0 is led by %d epoch %d (was epoch %d)", leader, topic, next, nextEpoch, epoch)
	}
	if d := 2*sessionTimeout - time.Since(paused); d > 0 {
		time.Sleep(d) // the fault itself: stay paused past the session timeout
	}
	resumed := time.Now()
	c.Resume(int(leader))
	t.Logf("paused leader %d (epoch %d) of %v for %v; node %d led %s-0 at epoch %d after %v",
		leader, epoch, led, resumed.Sub(paused).Round(time.Millisecond), next, topic, nextEpoch, elected.Round(time.Millisecond))
	waitStepDown(t, c, topic, leader, led)
	waitAcks(t, h, h.Len()+300, "after the resume")
	waitAllISR(t, c, topic, parts, 3)
	stopLoad(t, load, h)
	res := h.Check(t, c, topic)
	logWindow(t, h, res, led, paused, resumed)
}

// ledBy returns the partitions of topic that node leads.
func ledBy(t *testing.T, c *cluster.Cluster, topic string, parts int32, node int32) []int32 {
	var out []int32
	for p := range parts {
		if l, _ := c.WaitLeader(t, topic, p, waitTimeout); l == node {
			out = append(out, p)
		}
	}
	return out
}

// waitStepDown waits until node no longer calls itself the leader of any of led.
func waitStepDown(t *testing.T, c *cluster.Cluster, topic string, node int32, led []int32) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for _, p := range led {
		for {
			st, err := c.PartitionFrom(context.Background(), int(node), topic, p)
			if err == nil && st.Leader != node {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("resumed node %d still reports itself leader of %s-%d (%+v, %v)", node, topic, p, st, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// logWindow logs the acknowledgements of the paused node's partitions during and after
// the pause, by the leader epoch of the batch that holds them.
func logWindow(t *testing.T, h *cluster.History, res *cluster.CheckResult, led []int32, paused, resumed time.Time) {
	during, after := map[int32]int{}, map[int32]int{}
	for _, a := range h.Acks() {
		if !slices.Contains(led, a.Partition) || a.At.Before(paused) {
			continue
		}
		e := res.Epochs[a.Partition][a.Offset]
		if a.At.Before(resumed) {
			during[e]++
		} else {
			after[e]++
		}
	}
	t.Logf("acks on %v by batch leader epoch: during the pause %v, after it %v", led, during, after)
}

// TestFollowerRestart kills a follower of partition 0 under load, waits until the ISR
// drops it, restarts it after the leader has moved on, and waits until it has caught
// up and rejoined the ISR of every partition.
func TestFollowerRestart(t *testing.T) {
	c := startCluster(t, 3)
	topic := topicName(t)
	const parts = 3
	createTopic(t, c, topic, parts, 3)
	h := cluster.NewHistory()
	load := c.StartLoad(t, h, cluster.LoadOptions{Topic: topic, Partitions: parts, Rate: 400})
	waitAcks(t, h, 200, "before the kill")
	leader, _ := c.WaitLeader(t, topic, 0, waitTimeout)
	st, err := c.PartitionFrom(context.Background(), int(leader), topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	follower := otherReplica(t, st.Replicas, leader)
	killed := time.Now()
	c.Kill(int(follower))
	isr := c.WaitISR(t, topic, 0, 2, waitTimeout)
	if slices.Contains(isr, follower) {
		t.Fatalf("ISR %v of %s-0 still holds the killed follower %d", isr, topic, follower)
	}
	t.Logf("killed follower %d left the ISR of %s-0 after %v", follower, topic, time.Since(killed).Round(time.Millisecond))
	waitAcks(t, h, h.Len()+1000, "while the follower is down")
	restarted := time.Now()
	c.Restart(int(follower))
	waitAllISR(t, c, topic, parts, 3)
	t.Logf("follower %d back in every ISR %v after its restart began", follower, time.Since(restarted).Round(time.Millisecond))
	stopLoad(t, load, h)
	h.Check(t, c, topic)
}

// TestRollingRestart stops every node in turn with SIGTERM under load, restarting it
// and waiting for full ISRs before the next. A controlled shutdown hands leadership
// over, so no partition may stall as long as the broker session timeout, which is how
// long a move waits when the stopped leader is only fenced.
func TestRollingRestart(t *testing.T) {
	skipIfShort(t)
	c := startCluster(t, 3)
	topic := topicName(t)
	const parts = 6
	createTopic(t, c, topic, parts, 3)
	h := cluster.NewHistory()
	load := c.StartLoad(t, h, cluster.LoadOptions{Topic: topic, Partitions: parts, Rate: 600})
	waitAcks(t, h, 300, "before the rolling restart")
	load.ResetStalls()
	for i := 1; i <= c.Size(); i++ {
		start := time.Now()
		if err := c.Stop(i); err != nil {
			t.Errorf("node %d after SIGTERM: %v", i, err)
		}
		t.Logf("node %d stopped in %v", i, time.Since(start).Round(time.Millisecond))
		c.Restart(i)
		if !waitAllISR(t, c, topic, parts, 3) {
			break
		}
		waitAcks(t, h, h.Len()+200, "after restarting a node")
	}
	stopLoad(t, load, h)
	stall, p := load.MaxStall()
	t.Logf("max_produce_stall_ms=%s partition=%d", ms(stall), p)
	if stall >= sessionTimeout {
		t.Errorf("%s-%d acknowledged nothing for %v during the rolling restart, not less than the session timeout %v: leadership was not handed over on SIGTERM",
			topic, p, stall.Round(time.Millisecond), sessionTimeout)
	}
	h.Check(t, c, topic)
}

// TestKillActiveController kills -9 the active controller under load, waits for
// another, creates a topic with the node still down, then restarts the node and
// creates one more.
func TestKillActiveController(t *testing.T) {
	c := startCluster(t, 3)
	topic := topicName(t)
	createTopic(t, c, topic, 3, 3)
	h := cluster.NewHistory()
	load := c.StartLoad(t, h, cluster.LoadOptions{Topic: topic, Partitions: 3, Rate: 300})
	waitAcks(t, h, 200, "before the kill")
	ctrl := c.WaitController(t, 0, waitTimeout)
	killed := time.Now()
	c.Kill(int(ctrl))
	next := c.WaitController(t, ctrl, waitTimeout)
	t.Logf("controller %d killed; node %d active after %v", ctrl, next, time.Since(killed).Round(time.Millisecond))
	c.WaitBrokers(t, c.LiveIDs(), waitTimeout)

	after := topic + "-after"
	createTopic(t, c, after, 2, 2)
	h2 := cluster.NewHistory()
	cl := c.Client(t, cluster.LoadDefaults()...)
	for p := range int32(2) {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		if err := produceSync(ctx, cl, h2, after, p); err != nil {
			t.Errorf("produce to %s-%d, created after the controller died: %v", after, p, err)
		}
		cancel()
	}
	c.Restart(int(ctrl))
	createTopic(t, c, topic+"-restarted", 2, 3)
	waitAllISR(t, c, topic, 3, 3)
	stopLoad(t, load, h)
	h.Check(t, c, topic)
	h2.Check(t, c, after)
}

// TestNotEnoughReplicas kills two of a partition's three replicas: an acks=all produce
// must fail with NOT_ENOUGH_REPLICAS (min.insync.replicas=2) instead of succeeding, and
// succeed again once they are back.
//
// With five voters the metadata quorum survives the two kills, so the controller can
// fence them and shrink the ISR to the survivor. With three voters (QuorumLost) no
// quorum is left to shrink the ISR, and Kafka answers such a produce with a timeout
// instead; there the test only demands that nothing is acknowledged.
func TestNotEnoughReplicas(t *testing.T) {
	t.Run("QuorumKept", func(t *testing.T) { testNotEnoughReplicas(t, 5, true) })
	t.Run("QuorumLost", func(t *testing.T) { skipIfShort(t); testNotEnoughReplicas(t, 3, false) })
}

func testNotEnoughReplicas(t *testing.T, nodes int, quorum bool) {
	c := startCluster(t, nodes)
	topic := topicName(t)
	createTopic(t, c, topic, 1, 3)
	h := cluster.NewHistory()
	good := c.Client(t, cluster.LoadDefaults()...)
	for range 20 {
		mustProduce(t, good, h, topic)
	}
	leader, _ := c.WaitLeader(t, topic, 0, waitTimeout)
	st, err := c.PartitionFrom(context.Background(), int(leader), topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	follower := otherReplica(t, st.Replicas, leader)
	c.Kill(int(leader))
	c.Kill(int(follower))
	if quorum {
		isr := c.WaitISR(t, topic, 0, 1, waitTimeout)
		t.Logf("replicas %v, killed %d and %d, ISR now %v", st.Replicas, leader, follower, isr)
	}
	refused(t, c, h, topic, quorum)
	c.Restart(int(leader))
	c.Restart(int(follower))
	if waitAllISR(t, c, topic, 1, 3) {
		for range 20 {
			mustProduce(t, good, h, topic)
		}
	}
	h.Check(t, c, topic)
}

// refused produces three records that must not be acknowledged; wantNER demands
// NOT_ENOUGH_REPLICAS as the reason.
func refused(t *testing.T, c *cluster.Cluster, h *cluster.History, topic string, wantNER bool) {
	t.Helper()
	cl := c.Client(t, append(cluster.LoadDefaults(), kgo.RecordRetries(3), kgo.RecordDeliveryTimeout(15*time.Second))...)
	for i := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		err := produceSync(ctx, cl, h, topic, 0)
		cancel()
		switch {
		case err == nil:
			t.Errorf("record %d acknowledged at acks=all with two of three replicas dead", i)
		case wantNER && !errors.Is(err, kerr.NotEnoughReplicas):
			t.Errorf("record %d: %v, want NOT_ENOUGH_REPLICAS", i, err)
		default:
			t.Logf("record %d refused: %v", i, err)
		}
	}
}

func mustProduce(t *testing.T, cl *kgo.Client, h *cluster.History, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := produceSync(ctx, cl, h, topic, 0); err != nil {
		t.Fatalf("produce to %s-0: %v", topic, err)
	}
}

// TestNetworkPartition would isolate the leader from the other nodes.
func TestNetworkPartition(t *testing.T) {
	t.Skip("needs an injectable network: the server's listeners and dialers cannot be cut yet " +
		"(DESIGN.md: internal/cluster Partition/Heal and a Virtual() mode); processes can only be killed, stopped or paused")
}
