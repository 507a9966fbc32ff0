package clustertest_test

import (
	"context"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/clustertest"
	"github.com/twmb/franz-go/pkg/kgo"
)

// replicaLagMax is replica.lag.time.max.ms in cluster.FastFailureDetection.
const replicaLagMax = 3 * time.Second

// replicaFetchWaitMax is replica.fetch.wait.max.ms (its default).
const replicaFetchWaitMax = 500 * time.Millisecond

// TestVirtualIsolateFollower cuts a follower off from the other nodes (clients still
// reach it) under an acks=all load, in virtual time. The leader must drop it from the
// ISR once it has been behind for replica.lag.time.max.ms, and not before; acks=all
// goes on with the two left (min.insync.replicas=2); after the heal the follower
// catches up and rejoins the ISR, and every acknowledged record is on all three
// replicas.
func TestVirtualIsolateFollower(t *testing.T) {
	inVirtualTime(t, func(t *testing.T) {
		c := startVirtual(t, 3)
		topic := "events"
		createTopic(t, c, topic, 1, 3)
		h := clustertest.NewHistory()
		load := c.StartLoad(t, h, clustertest.LoadOptions{Topic: topic, Rate: 200})
		waitAcks(t, h, 200, "before the isolation")
		leader, epoch := c.WaitLeader(t, topic, 0, waitTimeout)
		follower := followerNotController(t, c, leader)

		isolated := time.Now()
		c.Isolate(int(follower))
		isr := c.WaitISR(t, topic, 0, 2, waitTimeout)
		shrunk := time.Since(isolated)
		t.Logf("follower %d isolated: leader %d shrank the ISR to %v after %v", follower, leader, isr, shrunk)
		if slices.Contains(isr, follower) {
			t.Errorf("ISR %v still holds the isolated follower %d", isr, follower)
		}
		// The follower was caught up when it was cut (it fetches continuously under
		// load), so it can only have fallen behind from then on. By Kafka's rule a
		// follower is caught up as of its previous fetch (lastCaughtUpTime is the time
		// of the fetch before the one that reached the leader's end of then), which
		// may be up to one fetch cycle (a parked fetch lasts at most
		// replica.fetch.wait.max.ms) before the cut.
		if shrunk < replicaLagMax-replicaFetchWaitMax {
			t.Errorf("the ISR lost follower %d %v after the isolation, before replica.lag.time.max.ms (%v) less one fetch cycle (%v)", follower, shrunk, replicaLagMax, replicaFetchWaitMax)
		}
		if l, e := c.WaitLeader(t, topic, 0, waitTimeout); l != leader || e != epoch {
			t.Errorf("isolating follower %d moved the leadership from %d (epoch %d) to %d (epoch %d)", follower, leader, epoch, l, e)
		}
		waitAcks(t, h, h.Len()+200, "with the follower isolated")

		healed := time.Now()
		c.Heal()
		c.WaitISR(t, topic, 0, 3, waitTimeout)
		t.Logf("follower %d back in the ISR %v after the heal", follower, time.Since(healed))
		waitAcks(t, h, h.Len()+200, "after the heal")
		stopLoad(t, load, h)
		if res := h.Check(t, c, topic); len(res.ISR[0]) != 3 {
			t.Errorf("checked ISR %v, want all three replicas", res.ISR[0])
		}
	})
}

// followerNotController returns a node other than leader, the active controller's
// if no other is left: isolating it then moves neither role.
func followerNotController(t *testing.T, c *clustertest.Cluster, leader int32) int32 {
	t.Helper()
	ctrl := c.WaitController(t, 0, waitTimeout)
	for _, id := range otherNodes(c, leader) {
		if id != ctrl {
			return id
		}
	}
	return otherNodes(c, leader)[0]
}

// TestVirtualIsolateLeader is TestNetworkPartition/Leader in virtual time: the leader
// of a partition under load is cut off from the other nodes. The majority elects a new
// leader, a client that talks to the isolated old leader alone gets no acknowledgement
// (it cannot advance its high watermark without its followers), and after the heal
// the old leader drops what it appended but never committed, rejoins the ISR, and
// every acknowledged record is on every replica.
func TestVirtualIsolateLeader(t *testing.T) {
	inVirtualTime(t, func(t *testing.T) {
		c := startVirtual(t, 3)
		topic := "orders"
		const parts = 3
		createTopic(t, c, topic, parts, 3)
		h := clustertest.NewHistory()
		load := c.StartLoad(t, h, clustertest.LoadOptions{Topic: topic, Partitions: parts, Rate: 300})
		waitAcks(t, h, 300, "before the isolation")
		p, old, epoch := leaderNotController(t, c, topic, parts)
		led := ledBy(t, c, topic, parts, old)
		others := otherNodes(c, old)
		direct := newVirtualDirectProducer(t, c, h, old, topic, p)

		isolated := time.Now()
		c.Isolate(int(old))
		direct.start()
		newEpochs := newLeaders(t, c, topic, old, led)
		elected := time.Now()
		t.Logf("leader %d (epoch %d) of %s-%d, leading %v, isolated; new leaders after %v, epochs %v",
			old, epoch, topic, p, led, elected.Sub(isolated), newEpochs)
		majority := writeOn(t, c, others, h, topic, led)
		rawProduce(t, direct.cl, old, topic, p)
		waitAcks(t, h, h.Len()+300, "on the majority side during the isolation")
		// Past the old leader's lease (a session timeout after its last heartbeat)
		// and the controller's fencing of it.
		time.Sleep(2*sessionTimeout - time.Since(isolated))
		direct.stop()
		tail := direct.stored(c.ReadReplica(t, int(old), topic, p))
		t.Logf("isolated old leader %d holds %d of the %d records the direct client sent after the isolation (its uncommitted tail): %v",
			old, len(tail), direct.sent(), tail)

		healed := time.Now()
		c.Heal()
		waitStepDown(t, c, topic, old, led)
		waitAllISR(t, c, topic, parts, 3)
		t.Logf("old leader %d back in every ISR %v after the heal", old, time.Since(healed))
		direct.settle(t)
		stopLoad(t, load, h)
		res := h.Check(t, c, topic)
		checkMajorityWrites(t, res, majority, newEpochs)
		logAckEpochs(t, h, res, newEpochs, isolated, elected, healed)
		direct.check(t, isolated)
		for node, rl := range res.Replicas[p] {
			if got := direct.stored(rl); len(got) > 0 {
				t.Errorf("%s-%d: after the heal, node %d still holds records that only the isolated leader %d had appended (never acknowledged): %v",
					topic, p, node, old, got)
			}
		}
	})
}

// newVirtualDirectProducer is newDirectProducer on a virtual cluster: every
// connection of its client goes to node, over the cluster's network.
func newVirtualDirectProducer(t *testing.T, c *clustertest.Cluster, h *clustertest.History, node int32, topic string, p int32) *directProducer {
	t.Helper()
	opts := append(clustertest.LoadDefaults(), kgo.AllowIdempotentProduceCancellation(), kgo.RecordDeliveryTimeout(6*time.Second))
	addr := c.Node(int(node)).KafkaAddr
	dial := c.Dial()
	pinned := func(ctx context.Context, network, _ string) (net.Conn, error) { return dial(ctx, network, addr) }
	opts = append(opts, kgo.SeedBrokers(addr), kgo.MetadataMinAge(100*time.Millisecond), kgo.Dialer(pinned))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	d := &directProducer{cl: cl, h: h, node: node, topic: topic, partition: p,
		quit: make(chan struct{}), done: make(chan struct{}), values: map[string]bool{}, errs: map[string]time.Time{}}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := produceSync(ctx, d.cl, h, topic, p); err != nil {
		t.Fatalf("produce to %s-%d through its leader %d alone: %v", topic, p, node, err)
	}
	return d
}
