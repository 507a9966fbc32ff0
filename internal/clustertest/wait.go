package clustertest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// probeTimeout bounds one Metadata request of a wait, so that a node that hangs
// (paused, overloaded) costs a wait one poll, not its whole deadline.
const probeTimeout = 2 * time.Second

// pollInterval is the sleep between two polls of a wait.
const pollInterval = 50 * time.Millisecond

// PartitionState is one partition as one node's Metadata response reports it.
type PartitionState struct {
	Leader      int32 // -1 when there is none
	LeaderEpoch int32
	Replicas    []int32
	ISR         []int32
	Err         error // the partition's error code, nil for none
}

// probe returns a client whose only seed is node i; requests go through its seed
// broker, so they reach node i and nothing else.
func (c *Cluster) probe(i int) (*kgo.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.probes[i-1] != nil {
		return c.probes[i-1], nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.nodes[i-1].KafkaAddr), kgo.RequestRetries(0), kgo.Dialer(c.Dial()))
	if err != nil {
		return nil, err
	}
	c.probes[i-1] = cl
	return cl, nil
}

// MetadataFrom asks node i alone for the metadata of topics (none: no topics, only
// brokers and the controller).
func (c *Cluster) MetadataFrom(ctx context.Context, i int, topics ...string) (*kmsg.MetadataResponse, error) {
	cl, err := c.probe(i)
	if err != nil {
		return nil, err
	}
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{}
	for _, topic := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl.SeedBrokers()[0])
	if err != nil {
		return nil, fmt.Errorf("metadata from node %d: %w", i, err)
	}
	return resp, nil
}

// PartitionFrom returns node i's view of topic-partition.
func (c *Cluster) PartitionFrom(ctx context.Context, i int, topic string, partition int32) (PartitionState, error) {
	resp, err := c.MetadataFrom(ctx, i, topic)
	if err != nil {
		return PartitionState{}, err
	}
	for _, rt := range resp.Topics {
		if rt.Topic == nil || *rt.Topic != topic {
			continue
		}
		if err := kerr.ErrorForCode(rt.ErrorCode); err != nil {
			return PartitionState{}, fmt.Errorf("node %d: topic %s: %w", i, topic, err)
		}
		for _, p := range rt.Partitions {
			if p.Partition == partition {
				return PartitionState{Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, Replicas: p.Replicas,
					ISR: p.ISR, Err: kerr.ErrorForCode(p.ErrorCode)}, nil
			}
		}
	}
	return PartitionState{}, fmt.Errorf("node %d has no partition %s-%d", i, topic, partition)
}

// alive reports whether id names a node of the cluster that runs, is not paused and is
// not cut off from the majority.
func (c *Cluster) alive(id int32) bool {
	return id >= 1 && int(id) <= len(c.nodes) && c.live(c.nodes[id-1])
}

// leaderNow returns the partition's state as its leader reports it: every live node
// is asked, the newest view (the highest leader epoch) names the leader, and that
// leader must be live and agree it leads at that epoch or a later one. Taking the
// first view that names a leader is not enough: a node that was cut off (an isolated
// former leader, just healed) still names itself at its old epoch, with the ISR it had,
// until it catches up with the metadata, and its own answer agrees with itself.
func (c *Cluster) leaderNow(topic string, partition int32) (PartitionState, error) {
	var errs []string
	var newest PartitionState
	from := int32(-1)
	for _, n := range c.nodes {
		if !c.live(n) {
			continue
		}
		st, err := c.PartitionFrom(context.Background(), int(n.ID), topic, partition)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		if from < 0 || st.LeaderEpoch > newest.LeaderEpoch {
			newest, from = st, n.ID
		}
	}
	if from < 0 {
		return PartitionState{}, fmt.Errorf("no live leader of %s-%d: %v", topic, partition, errs)
	}
	if !c.alive(newest.Leader) {
		return PartitionState{}, fmt.Errorf("no live leader of %s-%d: node %d names leader %d (epoch %d), not a live node",
			topic, partition, from, newest.Leader, newest.LeaderEpoch)
	}
	own, err := c.PartitionFrom(context.Background(), int(newest.Leader), topic, partition)
	if err == nil && own.Leader == newest.Leader && own.LeaderEpoch >= newest.LeaderEpoch {
		return own, nil
	}
	return PartitionState{}, fmt.Errorf("no live leader of %s-%d: node %d names leader %d epoch %d, which says %+v, %v",
		topic, partition, from, newest.Leader, newest.LeaderEpoch, own, err)
}

// LeaderState returns the partition's state as its live leader reports it now, as
// leaderNow finds it (the newest view among the live nodes), without waiting.
func (c *Cluster) LeaderState(topic string, partition int32) (PartitionState, error) {
	return c.leaderNow(topic, partition)
}

// WaitLeader waits until topic-partition has a live leader that knows it leads, and
// returns it with its leader epoch.
func (c *Cluster) WaitLeader(t testing.TB, topic string, partition int32, timeout time.Duration) (leader, epoch int32) {
	t.Helper()
	st := c.waitPartition(t, timeout, topic, partition, func(PartitionState) error { return nil })
	return st.Leader, st.LeaderEpoch
}

// WaitISR waits until the live leader of topic-partition reports an ISR of n members,
// and returns it.
func (c *Cluster) WaitISR(t testing.TB, topic string, partition int32, n int, timeout time.Duration) []int32 {
	t.Helper()
	st := c.waitPartition(t, timeout, topic, partition, func(st PartitionState) error {
		if len(st.ISR) != n {
			return fmt.Errorf("%s-%d: leader %d reports ISR %v, want %d members", topic, partition, st.Leader, st.ISR, n)
		}
		return nil
	})
	return st.ISR
}

// AwaitISR is WaitISR returning an error instead of failing the test, for a test that
// goes on to check what it can.
func (c *Cluster) AwaitISR(topic string, partition int32, n int, timeout time.Duration) ([]int32, error) {
	st, err := c.pollPartition(timeout, topic, partition, func(st PartitionState) error {
		if len(st.ISR) != n {
			return fmt.Errorf("%s-%d: leader %d reports ISR %v, want %d members", topic, partition, st.Leader, st.ISR, n)
		}
		return nil
	})
	return st.ISR, err
}

// waitPartition polls leaderNow until the leader's view satisfies cond.
func (c *Cluster) waitPartition(t testing.TB, timeout time.Duration, topic string, partition int32, cond func(PartitionState) error) PartitionState {
	t.Helper()
	st, err := c.pollPartition(timeout, topic, partition, cond)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func (c *Cluster) pollPartition(timeout time.Duration, topic string, partition int32, cond func(PartitionState) error) (PartitionState, error) {
	deadline := time.Now().Add(timeout)
	for {
		st, err := c.leaderNow(topic, partition)
		if err == nil {
			if err = cond(st); err == nil {
				return st, nil
			}
		}
		if time.Now().After(deadline) {
			return st, fmt.Errorf("after %v: %w", timeout, err)
		}
		time.Sleep(pollInterval)
	}
}

// WaitController waits until a live node names a live active controller that names
// itself, and returns its id. Pass except to wait for a controller other than a node
// that was just killed (0: any).
func (c *Cluster) WaitController(t testing.TB, except int32, timeout time.Duration) int32 {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		id, err := c.controllerNow()
		if err == nil && id == except {
			err = fmt.Errorf("the controller is still node %d", id)
		}
		if err == nil {
			return id
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v: no active controller: %v", timeout, err)
		}
		time.Sleep(pollInterval)
	}
}

func (c *Cluster) controllerNow() (int32, error) {
	var errs []string
	for _, n := range c.nodes {
		if !c.live(n) {
			continue
		}
		resp, err := c.MetadataFrom(context.Background(), int(n.ID))
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		id := resp.ControllerID
		if !c.alive(id) {
			errs = append(errs, fmt.Sprintf("node %d names controller %d, not a live node", n.ID, id))
			continue
		}
		own, err := c.MetadataFrom(context.Background(), int(id))
		if err == nil && own.ControllerID == id {
			return id, nil
		}
		errs = append(errs, fmt.Sprintf("node %d names controller %d, which disagrees (%v)", n.ID, id, err))
	}
	return 0, fmt.Errorf("%v", errs)
}

// Partitions returns the partition ids of topic as a live node reports them, waiting
// up to 30 s for one that knows the topic.
func (c *Cluster) Partitions(t testing.TB, topic string) []int32 {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ps, err := c.partitionsNow(topic)
		if err == nil {
			return ps
		}
		if time.Now().After(deadline) {
			t.Fatalf("no live node knows topic %s: %v", topic, err)
		}
		time.Sleep(pollInterval)
	}
}

func (c *Cluster) partitionsNow(topic string) ([]int32, error) {
	var errs []string
	for _, n := range c.nodes {
		if !c.live(n) {
			continue
		}
		resp, err := c.MetadataFrom(context.Background(), int(n.ID), topic)
		if err == nil && (len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0) {
			err = fmt.Errorf("node %d: topic %s: %+v", n.ID, topic, resp.Topics)
		}
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		var ps []int32
		for _, p := range resp.Topics[0].Partitions {
			ps = append(ps, p.Partition)
		}
		slices.Sort(ps)
		return ps, nil
	}
	return nil, fmt.Errorf("%v", errs)
}

// WaitBrokers waits until every live node's Metadata lists exactly the brokers want
// (the registered, unfenced ones): WaitBrokers(t, []int32{1, 3}, d) waits for node 2 to
// be fenced.
func (c *Cluster) WaitBrokers(t testing.TB, want []int32, timeout time.Duration) {
	t.Helper()
	want = slices.Sorted(slices.Values(want))
	deadline := time.Now().Add(timeout)
	for {
		err := c.brokersAre(want)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %v", timeout, err)
		}
		time.Sleep(pollInterval)
	}
}

func (c *Cluster) brokersAre(want []int32) error {
	for _, n := range c.nodes {
		if !c.live(n) {
			continue
		}
		resp, err := c.MetadataFrom(context.Background(), int(n.ID))
		if err != nil {
			return err
		}
		var got []int32
		for _, b := range resp.Brokers {
			got = append(got, b.NodeID)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			return fmt.Errorf("node %d lists brokers %v, want %v", n.ID, got, want)
		}
	}
	return nil
}

// LiveIDs returns the ids of the nodes that run, are not paused and are not cut off
// from the majority.
func (c *Cluster) LiveIDs() []int32 {
	var out []int32
	for _, n := range c.nodes {
		if c.live(n) {
			out = append(out, n.ID)
		}
	}
	return out
}
