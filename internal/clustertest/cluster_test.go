package clustertest_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/clustertest"
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
	h := clustertest.NewHistory()
	load := c.StartLoad(t, h, clustertest.LoadOptions{Topic: topic, Partitions: parts, Rate: 400})
	fo := c.Client(t, clustertest.LoadDefaults()...) // the client that measures the failover
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

// TestPausedLeader stops the leader of partition 0 with SIGSTOP past the broker
// session timeout, so that the controller fences it and elects other leaders, writes
// through a new producer while it is paused, then resumes it. Everything acknowledged
// after the election and before the resume must come from the new leaders (a batch of
// their epoch), the resumed node must step down, and every acknowledged record must be
// in every ISR replica: the old leader acknowledged nothing the new leader lacks.
func TestPausedLeader(t *testing.T) {
	skipIfShort(t)
	c := startCluster(t, 3)
	topic := topicName(t)
	const parts = 3
	createTopic(t, c, topic, parts, 3)
	h := clustertest.NewHistory()
	load := c.StartLoad(t, h, clustertest.LoadOptions{Topic: topic, Partitions: parts, Rate: 300})
	waitAcks(t, h, 300, "before the pause")
	leader, epoch := c.WaitLeader(t, topic, 0, waitTimeout)
	led := ledBy(t, c, topic, parts, leader)

	paused := time.Now()
	c.Pause(int(leader))
	newEpochs := newLeaders(t, c, topic, leader, led)
	elected := time.Now()
	writeDuringPause(t, c, h, topic, led)
	if d := 2*sessionTimeout - time.Since(paused); d > 0 {
		time.Sleep(d) // the fault itself: stay paused past the session timeout
	}
	resumed := time.Now()
	c.Resume(int(leader))
	t.Logf("leader %d (epoch %d) of %v paused for %v; new leaders elected after %v, epochs %v",
		leader, epoch, led, resumed.Sub(paused).Round(time.Millisecond), elected.Sub(paused).Round(time.Millisecond), newEpochs)
	waitStepDown(t, c, topic, leader, led)
	waitAcks(t, h, h.Len()+300, "after the resume")
	waitAllISR(t, c, topic, parts, 3)
	stopLoad(t, load, h)
	res := h.Check(t, c, topic)
	checkPauseWindow(t, h, res, newEpochs, paused, elected, resumed)
}

// ledBy returns the partitions of topic that node leads.
func ledBy(t *testing.T, c *clustertest.Cluster, topic string, parts int32, node int32) []int32 {
	var out []int32
	for p := range parts {
		if l, _ := c.WaitLeader(t, topic, p, waitTimeout); l == node {
			out = append(out, p)
		}
	}
	return out
}

// newLeaders waits until each partition of led has a live leader other than old, and
// returns their epochs.
func newLeaders(t *testing.T, c *clustertest.Cluster, topic string, old int32, led []int32) map[int32]int32 {
	t.Helper()
	out := map[int32]int32{}
	for _, p := range led {
		l, e := c.WaitLeader(t, topic, p, waitTimeout)
		if l == old {
			t.Fatalf("%s-%d: the paused node %d is reported as a live leader", topic, p, old)
		}
		out[p] = e
	}
	return out
}

// writeDuringPause produces 10 records to each partition of led with a new producer,
// whose requests cannot be stuck on the paused node, and waits for their acks.
func writeDuringPause(t *testing.T, c *clustertest.Cluster, h *clustertest.History, topic string, led []int32) {
	t.Helper()
	cl := c.Client(t, clustertest.LoadDefaults()...)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	for _, p := range led {
		for range 10 {
			if err := produceSync(ctx, cl, h, topic, p); err != nil {
				t.Fatalf("produce to %s-%d while its old leader is paused: %v", topic, p, err)
			}
		}
	}
}

// waitStepDown waits until node no longer calls itself the leader of any of led.
func waitStepDown(t *testing.T, c *clustertest.Cluster, topic string, node int32, led []int32) {
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

// checkPauseWindow demands that every acknowledgement of a partition the paused node
// led that arrived between the new leader's election and the resume is of a batch
// written at the new leader's epoch or later, and logs them all by epoch.
func checkPauseWindow(t *testing.T, h *clustertest.History, res *clustertest.CheckResult, newEpochs map[int32]int32, paused, elected, resumed time.Time) {
	t.Helper()
	during, after := map[int32]int{}, map[int32]int{}
	inWindow := 0
	for _, a := range h.Acks() {
		newEpoch, ok := newEpochs[a.Partition]
		if !ok || a.At.Before(paused) {
			continue
		}
		e := res.Epochs[a.Partition][a.Offset]
		if a.At.Before(resumed) {
			during[e]++
		} else {
			after[e]++
		}
		if a.At.Before(elected) || !a.At.Before(resumed) {
			continue
		}
		inWindow++
		if e < newEpoch {
			t.Errorf("partition %d offset %d %q acknowledged at %s, while its old leader was paused, is in a batch of epoch %d < the new leader's %d",
				a.Partition, a.Offset, a.Value, a.At.Format(time.StampMilli), e, newEpoch)
		}
	}
	t.Logf("acks of the paused node's partitions by batch leader epoch: during the pause %v, after it %v", during, after)
	if inWindow == 0 {
		t.Errorf("nothing acknowledged between the election and the resume: the window checks nothing")
	}
}

// TestFollowerRestart kills a follower of partition 0 under load, waits until the ISR
// drops it, restarts it after the leader has moved on, and waits until it has caught
// up and rejoined the ISR of every partition.
func TestFollowerRestart(t *testing.T) {
	c := startCluster(t, 3)
	topic := topicName(t)
	const parts = 3
	createTopic(t, c, topic, parts, 3)
	h := clustertest.NewHistory()
	load := c.StartLoad(t, h, clustertest.LoadOptions{Topic: topic, Partitions: parts, Rate: 400})
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
	h := clustertest.NewHistory()
	load := c.StartLoad(t, h, clustertest.LoadOptions{Topic: topic, Partitions: parts, Rate: 600})
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
	h := clustertest.NewHistory()
	load := c.StartLoad(t, h, clustertest.LoadOptions{Topic: topic, Partitions: 3, Rate: 300})
	waitAcks(t, h, 200, "before the kill")
	ctrl := c.WaitController(t, 0, waitTimeout)
	killed := time.Now()
	c.Kill(int(ctrl))
	next := c.WaitController(t, ctrl, waitTimeout)
	t.Logf("controller %d killed; node %d active after %v", ctrl, next, time.Since(killed).Round(time.Millisecond))
	c.WaitBrokers(t, c.LiveIDs(), waitTimeout)

	after := topic + "-after"
	createTopic(t, c, after, 2, 2)
	h2 := clustertest.NewHistory()
	cl := c.Client(t, clustertest.LoadDefaults()...)
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
// must fail instead of succeeding (min.insync.replicas=2), and succeed again once the
// replicas are back.
//
// QuorumKept runs five voters, so the metadata quorum survives; it kills the leader and
// a follower, and the controller must elect the survivor with an ISR of one, which
// answers NOT_ENOUGH_REPLICAS. QuorumLost runs three voters and kills both followers:
// no quorum is left to shrink the ISR, so the leader cannot know that it is alone (Kafka
// times such a produce out); the test demands only that nothing is acknowledged.
func TestNotEnoughReplicas(t *testing.T) {
	t.Run("QuorumKept", func(t *testing.T) { testNotEnoughReplicas(t, 5, true) })
	t.Run("QuorumLost", func(t *testing.T) { skipIfShort(t); testNotEnoughReplicas(t, 3, false) })
}

func testNotEnoughReplicas(t *testing.T, nodes int, quorum bool) {
	c := startCluster(t, nodes)
	topic := topicName(t)
	createTopic(t, c, topic, 1, 3)
	h := clustertest.NewHistory()
	good := c.Client(t, clustertest.LoadDefaults()...)
	// strict gives up on a record after three failed tries or 15 s; it has its producer
	// id and the partition's leader before the kills. NOT_ENOUGH_REPLICAS is a definite
	// answer that an idempotent producer may fail a record on; REQUEST_TIMED_OUT (the
	// leader waiting for an ISR it cannot shrink) is not, and without
	// AllowIdempotentProduceCancellation kgo would wait for ever.
	strictOpts := append(clustertest.LoadDefaults(), kgo.RecordRetries(3), kgo.RecordDeliveryTimeout(15*time.Second))
	if !quorum {
		strictOpts = append(strictOpts, kgo.AllowIdempotentProduceCancellation())
	}
	strict := c.Client(t, strictOpts...)
	for range 20 {
		mustProduce(t, good, h, topic)
	}
	mustProduce(t, strict, h, topic)
	leader, _ := c.WaitLeader(t, topic, 0, waitTimeout)
	st, err := c.PartitionFrom(context.Background(), int(leader), topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	killed := []int32{leader, otherReplica(t, st.Replicas, leader)}
	if !quorum {
		killed = slices.DeleteFunc(slices.Clone(st.Replicas), func(r int32) bool { return r == leader })
	}
	for _, k := range killed {
		c.Kill(int(k))
	}
	t.Logf("replicas %v led by %d: killed %v", st.Replicas, leader, killed)
	if quorum {
		t.Logf("ISR now %v", c.WaitISR(t, topic, 0, 1, waitTimeout))
		refused(t, strict, h, topic, 3, true)
	} else {
		refused(t, strict, h, topic, 1, false)
	}
	for _, k := range killed {
		c.Restart(int(k))
	}
	if waitAllISR(t, c, topic, 1, 3) {
		for range 20 {
			mustProduce(t, good, h, topic)
		}
	}
	h.Check(t, c, topic)
}

// refused produces n records with cl that must not be acknowledged; wantNER demands
// NOT_ENOUGH_REPLICAS as the reason.
func refused(t *testing.T, cl *kgo.Client, h *clustertest.History, topic string, n int, wantNER bool) {
	t.Helper()
	for i := range n {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		start := time.Now()
		err := produceSync(ctx, cl, h, topic, 0)
		cancel()
		switch {
		case err == nil:
			t.Errorf("record %d acknowledged at acks=all with two of three replicas dead", i)
		case wantNER && !errors.Is(err, kerr.NotEnoughReplicas):
			t.Errorf("record %d: %v, want NOT_ENOUGH_REPLICAS", i, err)
		default:
			t.Logf("record %d refused after %v: %v", i, time.Since(start).Round(time.Millisecond), err)
		}
	}
}

func mustProduce(t *testing.T, cl *kgo.Client, h *clustertest.History, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := produceSync(ctx, cl, h, topic, 0); err != nil {
		t.Fatalf("produce to %s-0: %v", topic, err)
	}
}
