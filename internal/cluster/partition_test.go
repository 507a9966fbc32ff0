package cluster_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/cluster"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestNetworkPartition cuts one node off from the others with network namespaces
// (cluster.Options.Netns; skipped where they cannot be created), the test process
// still reaching every node.
//
// Leader isolates the leader of a partition under load: the majority must elect a new
// leader, a client that still talks to the isolated old leader alone must get no
// acknowledgement (the old leader cannot advance its high watermark without its
// followers), and after the heal the old leader must drop the records it appended but
// never committed, rejoin the ISR, and every acknowledged record be on every replica.
//
// Controller isolates the active controller: the majority must elect another, which
// fences the isolated node and creates topics; the isolated node must stop calling
// itself the controller, and learn the new topic after the heal.
func TestNetworkPartition(t *testing.T) {
	skipIfShort(t)
	t.Run("Leader", testIsolateLeader)
	t.Run("Controller", testIsolateController)
}

// startNetns starts n nodes in namespaces of their own, noticing failures within
// seconds.
func startNetns(t *testing.T, n int) *cluster.Cluster {
	t.Helper()
	return cluster.Start(t, cluster.Options{Nodes: n, Sets: cluster.FastFailureDetection, StartTimeout: startTimeout, Netns: true})
}

func testIsolateLeader(t *testing.T) {
	c := startNetns(t, 3)
	topic := topicName(t)
	const parts = 3
	createTopic(t, c, topic, parts, 3)
	h := cluster.NewHistory()
	load := c.StartLoad(t, h, cluster.LoadOptions{Topic: topic, Partitions: parts, Rate: 300})
	waitAcks(t, h, 300, "before the isolation")
	p, old, epoch := leaderNotController(t, c, topic, parts)
	led := ledBy(t, c, topic, parts, old)
	others := otherNodes(c, old)
	direct := newDirectProducer(t, c, h, old, topic, p)

	isolated := time.Now()
	c.Isolate(int(old))
	direct.start()
	newEpochs := newLeaders(t, c, topic, old, led)
	elected := time.Now()
	t.Logf("leader %d (epoch %d) of %s-%d, leading %v, isolated; new leaders after %v, epochs %v",
		old, epoch, topic, p, led, elected.Sub(isolated).Round(time.Millisecond), newEpochs)
	writeOn(t, c, others, h, topic, led)
	waitAcks(t, h, h.Len()+300, "on the majority side during the isolation")
	if d := 2*sessionTimeout - time.Since(isolated); d > 0 {
		time.Sleep(d)
	}
	direct.stop()
	tail := direct.stored(c.ReadReplica(t, int(old), topic, p))
	t.Logf("isolated old leader %d holds %d of the %d records the direct client sent after the isolation (its uncommitted tail): %v",
		old, len(tail), direct.sent(), tail)

	healed := time.Now()
	c.Heal()
	waitStepDown(t, c, topic, old, led)
	waitAllISR(t, c, topic, parts, 3)
	t.Logf("old leader %d back in every ISR %v after the heal", old, time.Since(healed).Round(time.Millisecond))
	direct.settle(t)
	stopLoad(t, load, h)
	res := h.Check(t, c, topic)
	checkPauseWindow(t, h, res, newEpochs, isolated, elected, healed)
	direct.check(t, isolated)
	for node, rl := range res.Replicas[p] {
		if got := direct.stored(rl); len(got) > 0 {
			t.Errorf("%s-%d: after the heal, node %d still holds records that only the isolated leader %d had appended (never acknowledged): %v",
				topic, p, node, old, got)
		}
	}
}

// leaderNotController returns a partition of topic whose leader is not the active
// controller, so that isolating it moves partition leadership only; failing that,
// partition 0.
func leaderNotController(t *testing.T, c *cluster.Cluster, topic string, parts int32) (p, leader, epoch int32) {
	t.Helper()
	ctrl := c.WaitController(t, 0, waitTimeout)
	for p := range parts {
		if l, e := c.WaitLeader(t, topic, p, waitTimeout); l != ctrl {
			return p, l, e
		}
	}
	l, e := c.WaitLeader(t, topic, 0, waitTimeout)
	t.Logf("the controller %d leads every partition of %s; isolating it", ctrl, topic)
	return 0, l, e
}

// otherNodes returns the ids of every node but node.
func otherNodes(c *cluster.Cluster, node int32) []int32 {
	var out []int32
	for i := int32(1); i <= int32(c.Size()); i++ {
		if i != node {
			out = append(out, i)
		}
	}
	return out
}

// writeOn produces 10 records to each partition of led through a client that reaches
// only nodes, and waits for their acks.
func writeOn(t *testing.T, c *cluster.Cluster, nodes []int32, h *cluster.History, topic string, led []int32) {
	t.Helper()
	cl := c.ClientOn(t, nodes, cluster.LoadDefaults()...)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	for _, p := range led {
		for range 10 {
			if err := produceSync(ctx, cl, h, topic, p); err != nil {
				t.Fatalf("produce to %s-%d through nodes %v during the isolation: %v", topic, p, nodes, err)
			}
		}
	}
}

// directProducer is an idempotent acks=all client that reaches one node only and
// produces to one partition of it, every 100 ms between start and stop.
type directProducer struct {
	cl        *kgo.Client
	h         *cluster.History // every outcome is recorded here too, so Check covers a wrong ack
	node      int32
	topic     string
	partition int32
	quit      chan struct{}
	done      chan struct{}

	mu     sync.Mutex // guards values and acks
	values map[string]bool
	acks   []cluster.Ack
}

// newDirectProducer makes the client and writes one record through it (which must be
// acknowledged), so that it has its producer id and the partition's leader before any
// fault.
func newDirectProducer(t *testing.T, c *cluster.Cluster, h *cluster.History, node int32, topic string, p int32) *directProducer {
	t.Helper()
	opts := append(cluster.LoadDefaults(), kgo.AllowIdempotentProduceCancellation(), kgo.RecordDeliveryTimeout(6*time.Second))
	d := &directProducer{cl: c.ClientOn(t, []int32{node}, opts...), h: h, node: node, topic: topic, partition: p,
		quit: make(chan struct{}), done: make(chan struct{}), values: map[string]bool{}}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := produceSync(ctx, d.cl, h, topic, p); err != nil {
		t.Fatalf("produce to %s-%d through its leader %d alone: %v", topic, p, node, err)
	}
	return d
}

func (d *directProducer) start() {
	go func() {
		defer close(d.done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-d.quit:
				return
			case <-tick.C:
			}
			r := &kgo.Record{Topic: d.topic, Partition: d.partition, Value: d.h.NextValue(d.partition)}
			d.mu.Lock()
			d.values[string(r.Value)] = true
			d.mu.Unlock()
			d.cl.Produce(context.Background(), r, d.promise)
		}
	}()
}

func (d *directProducer) promise(r *kgo.Record, err error) {
	d.h.Record(r, err)
	if err != nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.acks = append(d.acks, cluster.Ack{Partition: r.Partition, Offset: r.Offset, Value: string(r.Value), At: time.Now()})
}

func (d *directProducer) stop() {
	close(d.quit)
	<-d.done
}

func (d *directProducer) sent() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.values)
}

// settle waits until every record sent is acknowledged or failed.
func (d *directProducer) settle(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
	defer cancel()
	if err := d.cl.Flush(ctx); err != nil {
		t.Errorf("the direct client's records still unsettled %v after the heal: %v", flushTimeout, err)
	}
}

// stored returns the offsets of rl holding a record sent after the isolation.
func (d *directProducer) stored(rl *cluster.ReplicaLog) []int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []int64
	for v := range d.values {
		out = append(out, rl.OffsetsOf[v]...)
	}
	slices.Sort(out)
	return out
}

// check demands that nothing sent after the isolation was acknowledged.
func (d *directProducer) check(t *testing.T, isolated time.Time) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, a := range d.acks {
		t.Errorf("%s-%d offset %d %q, sent only to node %d after it was isolated, acknowledged at %s (%v after the isolation)",
			d.topic, d.partition, a.Offset, a.Value, d.node, a.At.Format(time.StampMilli), a.At.Sub(isolated).Round(time.Millisecond))
	}
	t.Logf("direct client: %d records sent to the isolated node, %d acknowledged", len(d.values), len(d.acks))
}

func testIsolateController(t *testing.T) {
	c := startNetns(t, 3)
	topic := topicName(t)
	createTopic(t, c, topic, 3, 3)
	h := cluster.NewHistory()
	load := c.StartLoad(t, h, cluster.LoadOptions{Topic: topic, Partitions: 3, Rate: 300})
	waitAcks(t, h, 200, "before the isolation")
	ctrl := c.WaitController(t, 0, waitTimeout)
	others := otherNodes(c, ctrl)

	isolated := time.Now()
	c.Isolate(int(ctrl))
	next := c.WaitController(t, ctrl, waitTimeout)
	t.Logf("controller %d isolated; node %d active after %v", ctrl, next, time.Since(isolated).Round(time.Millisecond))
	waitNotController(t, c, ctrl, isolated)
	c.WaitBrokers(t, others, waitTimeout)
	t.Logf("isolated node %d fenced after %v", ctrl, time.Since(isolated).Round(time.Millisecond))

	during := topic + "-during"
	side := c.ClientOn(t, others, cluster.LoadDefaults()...)
	createTopicWith(t, c, kadm.NewClient(side), during, 2, 2)
	h2 := cluster.NewHistory()
	for p := range int32(2) {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		if err := produceSync(ctx, side, h2, during, p); err != nil {
			t.Errorf("produce to %s-%d, created on the majority side: %v", during, p, err)
		}
		cancel()
	}

	healed := time.Now()
	c.Heal()
	c.WaitBrokers(t, []int32{1, 2, 3}, waitTimeout)
	waitKnowsTopic(t, c, ctrl, during)
	t.Logf("node %d registered again and knows %s %v after the heal", ctrl, during, time.Since(healed).Round(time.Millisecond))
	waitAllISR(t, c, topic, 3, 3)
	stopLoad(t, load, h)
	h.Check(t, c, topic)
	h2.Check(t, c, during)
}

// waitNotController waits until the isolated node no longer names itself the active
// controller: a Raft leader that lost its quorum must step down (hashicorp/raft does
// within LeaderLeaseTimeout), or it would keep answering as the controller.
func waitNotController(t *testing.T, c *cluster.Cluster, node int32, isolated time.Time) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		resp, err := c.MetadataFrom(context.Background(), int(node))
		if err == nil && resp.ControllerID != node {
			t.Logf("isolated node %d names controller %d %v after the isolation", node, resp.ControllerID, time.Since(isolated).Round(time.Millisecond))
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("isolated node %d still names itself the controller %v after the isolation (%v)", node, time.Since(isolated).Round(time.Millisecond), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitKnowsTopic waits until node's metadata has every partition of topic.
func waitKnowsTopic(t *testing.T, c *cluster.Cluster, node int32, topic string) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		_, err := c.PartitionFrom(context.Background(), int(node), topic, 0)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %d does not know topic %s %v after the heal: %v", node, topic, waitTimeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
