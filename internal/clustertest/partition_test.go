package clustertest_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/clustertest"
	"github.com/runnel-io/runnel/internal/log/logtest"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
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
func startNetns(t *testing.T, n int) *clustertest.Cluster {
	t.Helper()
	return clustertest.Start(t, clustertest.Options{Nodes: n, Sets: clustertest.FastFailureDetection, StartTimeout: startTimeout, Netns: true})
}

func testIsolateLeader(t *testing.T) {
	c := startNetns(t, 3)
	topic := topicName(t)
	const parts = 3
	createTopic(t, c, topic, parts, 3)
	h := clustertest.NewHistory()
	load := c.StartLoad(t, h, clustertest.LoadOptions{Topic: topic, Partitions: parts, Rate: 300})
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
	majority := writeOn(t, c, others, h, topic, led)
	rawProduce(t, direct.cl, old, topic, p)
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
	checkMajorityWrites(t, res, majority, newEpochs)
	logAckEpochs(t, h, res, newEpochs, isolated, elected, healed)
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
func leaderNotController(t *testing.T, c *clustertest.Cluster, topic string, parts int32) (p, leader, epoch int32) {
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
func otherNodes(c *clustertest.Cluster, node int32) []int32 {
	var out []int32
	for i := int32(1); i <= int32(c.Size()); i++ {
		if i != node {
			out = append(out, i)
		}
	}
	return out
}

// writeOn produces 10 records to each partition of led through a client that reaches
// only nodes, waits for their acks and returns them.
func writeOn(t *testing.T, c *clustertest.Cluster, nodes []int32, h *clustertest.History, topic string, led []int32) []clustertest.Ack {
	t.Helper()
	cl := c.ClientOn(t, nodes, clustertest.LoadDefaults()...)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	var out []clustertest.Ack
	for _, p := range led {
		for range 10 {
			r := &kgo.Record{Topic: topic, Partition: p, Value: h.NextValue(p)}
			err := cl.ProduceSync(ctx, r).FirstErr()
			// A node of the majority may apply the new leaders a moment after the
			// node that reported them, and send the client to the isolated node,
			// which this client may not dial: nothing was sent, so try again.
			for errors.Is(err, clustertest.ErrUnreachable) && ctx.Err() == nil {
				time.Sleep(100 * time.Millisecond)
				err = cl.ProduceSync(ctx, r).FirstErr()
			}
			h.Record(r, err)
			if err != nil {
				t.Fatalf("produce to %s-%d through nodes %v during the isolation: %v", topic, p, nodes, err)
			}
			out = append(out, clustertest.Ack{Partition: p, Offset: r.Offset, Value: string(r.Value), At: time.Now()})
		}
	}
	return out
}

// rawProduce sends node one acks=all Produce request of one record with a 3 s timeout
// (no retry, no producer id) and demands an error: an isolated leader cannot know its
// followers have the record.
func rawProduce(t *testing.T, cl *kgo.Client, node int32, topic string, p int32) {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 3000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = p, logtest.Batch(1, 16)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	start := time.Now()
	resp, err := req.RequestWith(ctx, cl.Broker(int(node)))
	took := time.Since(start).Round(time.Millisecond)
	if err != nil {
		t.Logf("raw acks=all produce to the isolated leader %d: no answer after %v: %v", node, took, err)
		return
	}
	rpr := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(rpr.ErrorCode); err != nil {
		t.Logf("raw acks=all produce to the isolated leader %d: %v after %v", node, err, took)
		return
	}
	t.Errorf("the isolated leader %d acknowledged an acks=all produce to %s-%d at offset %d after %v", node, topic, p, rpr.BaseOffset, took)
}

// checkMajorityWrites demands that the records the majority side acknowledged during
// the isolation are in batches of the new leader's epoch or later: the new leader
// wrote them.
func checkMajorityWrites(t *testing.T, res *clustertest.CheckResult, acks []clustertest.Ack, newEpochs map[int32]int32) {
	t.Helper()
	for _, a := range acks {
		if e := res.Epochs[a.Partition][a.Offset]; e < newEpochs[a.Partition] {
			t.Errorf("partition %d offset %d %q, acknowledged by the majority side during the isolation, is in a batch of epoch %d < the new leader's %d",
				a.Partition, a.Offset, a.Value, e, newEpochs[a.Partition])
		}
	}
}

// logAckEpochs logs the acknowledgements of the isolated node's partitions by the
// leader epoch of their batch, during and after the isolation. An ack of the old epoch
// between the election and the heal is no fault by itself: a batch the followers had
// fetched before the cut, but the old leader could not learn so, is committed by the
// new leader, which acknowledges the producer's retry as a duplicate at its original
// offset. Only a client that reaches the old leader alone (directProducer) tells
// who acknowledged; Check proves every ack durable.
func logAckEpochs(t *testing.T, h *clustertest.History, res *clustertest.CheckResult, newEpochs map[int32]int32, isolated, elected, healed time.Time) {
	during, after := map[int32]int{}, map[int32]int{}
	old := 0
	for _, a := range h.Acks() {
		newEpoch, ok := newEpochs[a.Partition]
		if !ok || a.At.Before(isolated) {
			continue
		}
		e := res.Epochs[a.Partition][a.Offset]
		if a.At.Before(healed) {
			during[e]++
		} else {
			after[e]++
		}
		if !a.At.Before(elected) && a.At.Before(healed) && e < newEpoch {
			old++
		}
	}
	t.Logf("acks of the isolated node's partitions by batch leader epoch: during the isolation %v, after it %v; %d of an old epoch arrived between the election and the heal",
		during, after, old)
}

// directProducer is an idempotent acks=all client whose every connection goes to one
// node, producing to one partition, every 100 ms between start and stop.
type directProducer struct {
	cl        *kgo.Client
	h         *clustertest.History // every outcome is recorded here too, so Check covers a wrong ack
	node      int32
	topic     string
	partition int32
	quit      chan struct{}
	done      chan struct{}

	mu     sync.Mutex // guards values, acks and errs
	values map[string]bool
	acks   []clustertest.Ack
	errs   map[string]time.Time // produce error -> when it was first seen
}

// newDirectProducer makes the client and writes one record through it (which must be
// acknowledged), so that it has its producer id and the partition's leader before any
// fault.
func newDirectProducer(t *testing.T, c *clustertest.Cluster, h *clustertest.History, node int32, topic string, p int32) *directProducer {
	t.Helper()
	opts := append(clustertest.LoadDefaults(), kgo.AllowIdempotentProduceCancellation(), kgo.RecordDeliveryTimeout(6*time.Second))
	// Every connection goes to node, whichever broker kgo means: metadata requests meant
	// for others get node's view too, so the client never learns of the new leader
	// while node cannot, and every answer it sees is node's.
	addr := c.Node(int(node)).KafkaAddr
	var dialer net.Dialer
	pinned := func(ctx context.Context, network, _ string) (net.Conn, error) {
		return dialer.DialContext(ctx, network, addr)
	}
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
	d.mu.Lock()
	defer d.mu.Unlock()
	if err != nil {
		if _, ok := d.errs[err.Error()]; !ok {
			d.errs[err.Error()] = time.Now()
		}
		return
	}
	d.acks = append(d.acks, clustertest.Ack{Partition: r.Partition, Offset: r.Offset, Value: string(r.Value), At: time.Now()})
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
func (d *directProducer) stored(rl *clustertest.ReplicaLog) []int64 {
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
	for e, at := range d.errs {
		t.Logf("direct client: first %v after the isolation: %s", at.Sub(isolated).Round(time.Millisecond), e)
	}
}

func testIsolateController(t *testing.T) {
	c := startNetns(t, 3)
	topic := topicName(t)
	createTopic(t, c, topic, 3, 3)
	h := clustertest.NewHistory()
	load := c.StartLoad(t, h, clustertest.LoadOptions{Topic: topic, Partitions: 3, Rate: 300})
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
	side := c.ClientOn(t, others, clustertest.LoadDefaults()...)
	createTopicWith(t, c, kadm.NewClient(side), during, 2, 2)
	h2 := clustertest.NewHistory()
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
func waitNotController(t *testing.T, c *clustertest.Cluster, node int32, isolated time.Time) {
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
func waitKnowsTopic(t *testing.T, c *clustertest.Cluster, node int32, topic string) {
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
