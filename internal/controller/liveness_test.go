package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/metadata"
)

// fastLiveness shortens the session timeout for tests of fencing.
func fastLiveness(cfg *Config) {
	cfg.SessionTimeout = 600 * time.Millisecond
	cfg.FenceCheckInterval = 20 * time.Millisecond
	cfg.DisableAutoLeaderRebalance = true
}

// beater heartbeats for brokers to whichever of cs is the leader, every 50 ms, until
// the test ends. Paused brokers are skipped.
type beater struct {
	cs []*Controller

	mu     sync.Mutex // guards epochs, paused and deaf
	epochs map[metadata.NodeID]int64
	paused map[metadata.NodeID]bool
	deaf   map[metadata.NodeID]bool // controllers no heartbeat reaches while they lead
}

func startBeating(t *testing.T, cs []*Controller, epochs map[metadata.NodeID]int64) *beater {
	t.Helper()
	b := &beater{cs: cs, epochs: epochs, paused: map[metadata.NodeID]bool{}, deaf: map[metadata.NodeID]bool{}}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				b.beatAll()
			case <-stop:
				return
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
	return b
}

func (b *beater) beatAll() {
	var leader *Controller
	for _, c := range b.cs {
		if c.IsLeader() {
			leader = c
		}
	}
	if leader == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.deaf[leader.cfg.NodeID] {
		return
	}
	for id, epoch := range b.epochs {
		if b.paused[id] {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		leader.BrokerHeartbeat(ctx, Heartbeat{ID: id, Epoch: epoch, MetadataOffset: leader.Image().Offset})
		cancel()
	}
}

func (b *beater) pause(id metadata.NodeID, paused bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.paused[id] = paused
}

// deafen makes every heartbeat miss controller id while it leads, as when its Kafka
// listener is closed or stalled but its Raft transport still works.
func (b *beater) deafen(id metadata.NodeID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.deaf[id] = true
}

func (b *beater) setEpoch(id metadata.NodeID, epoch int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.epochs[id] = epoch
}

// partitionIs waits until c's image shows tp as want (see describe).
func partitionIs(t *testing.T, c *Controller, topic string, p int32, want string) {
	t.Helper()
	eventually(t, 5*time.Second, func() error {
		got, ok := c.Image().Partition(metadata.TopicPartition{Topic: topic, Partition: p})
		if !ok || describe(got) != want {
			return fmt.Errorf("node %d: %s-%d is %s, want %s", c.cfg.NodeID, topic, p, describe(got), want)
		}
		return nil
	})
}

func assign(as ...[]metadata.NodeID) metadata.TopicSpec {
	m := map[int32][]metadata.NodeID{}
	for i, a := range as {
		m[int32(i)] = a
	}
	return metadata.TopicSpec{NumPartitions: -1, ReplicationFactor: -1, Assignments: m}
}

func named(name string, s metadata.TopicSpec) metadata.TopicSpec { s.Name = name; return s }

func ids(x ...metadata.NodeID) []metadata.NodeID { return x }

// startBeatingQuorum starts three voters with fast liveness, registers brokers 1-3
// (one per voter's node) and heartbeats for them to the leader.
func startBeatingQuorum(t *testing.T) ([]*Controller, *Controller, *beater) {
	t.Helper()
	cs := startQuorumWith(t, 3, fastLiveness)
	leader := leaderOf(t, cs)
	epochs := map[metadata.NodeID]int64{}
	for id := metadata.NodeID(1); id <= 3; id++ {
		epochs[id] = registerLive(t, leader, metadata.Broker{ID: id, Host: "h", Port: 9000 + int32(id)})
	}
	b := startBeating(t, cs, epochs)
	return cs, leader, b
}

func TestHeartbeatTimeoutFencesAndReelects(t *testing.T) {
	cs, leader, b := startBeatingQuorum(t)
	mustCreate(t, leader, named("t", assign(ids(1, 2, 3), ids(2, 3, 1), ids(3, 1, 2))), named("solo", assign(ids(2))))

	// Broker 2 stops heartbeating: after the session timeout it is fenced, loses its
	// leadership and leaves every ISR; its only-replica partition goes offline.
	paused := time.Now()
	b.pause(2, true)
	eventually(t, 5*time.Second, func() error {
		if !leader.Image().Brokers[2].Fenced {
			return errors.New("broker 2 not fenced")
		}
		return nil
	})
	if took := time.Since(paused); took < 500*time.Millisecond {
		t.Fatalf("broker 2 fenced %v after its last heartbeat, before the session timeout", took)
	}
	for _, c := range cs {
		partitionIs(t, c, "t", 0, "replicas=[1 2 3] isr=[1 3] leader=1 le=0 pe=1")
		partitionIs(t, c, "t", 1, "replicas=[2 3 1] isr=[3 1] leader=3 le=1 pe=1")
		partitionIs(t, c, "t", 2, "replicas=[3 1 2] isr=[3 1] leader=3 le=0 pe=1")
		partitionIs(t, c, "solo", 0, "replicas=[2] isr=[2] leader=-1 le=1 pe=1")
	}
	if st := leader.Status(); st.FencedBrokers != 1 || st.OfflinePartitions != 1 || !st.Active || st.RaftState != "Leader" {
		t.Fatalf("status %+v", st)
	}

	// It comes back: unfenced once caught up, and it leads its offline partition again.
	// Getting back into the other ISRs is the leaders' job (AlterPartition).
	b.pause(2, false)
	eventually(t, 5*time.Second, func() error {
		if leader.Image().Brokers[2].Fenced {
			return errors.New("broker 2 still fenced")
		}
		return nil
	})
	partitionIs(t, leader, "solo", 0, "replicas=[2] isr=[2] leader=2 le=2 pe=2")
	partitionIs(t, leader, "t", 1, "replicas=[2 3 1] isr=[3 1] leader=3 le=1 pe=1")
}

// A controller that keeps the Raft lead but hears no broker, its own node's included
// (its Kafka listener closed or stalled while Raft still runs), resigns instead of
// fencing the brokers one by one as their sessions expire, which would leave every
// partition offline with an ISR of one live broker. Session 11 saw this: a killed
// in-process node whose controller outlived its listener did exactly that.
func TestDeafControllerResignsInsteadOfFencing(t *testing.T) {
	cs, leader, b := startBeatingQuorum(t)
	mustCreate(t, leader, named("t", assign(ids(1, 2, 3), ids(2, 3, 1), ids(3, 1, 2))))
	want := []string{
		"replicas=[1 2 3] isr=[1 2 3] leader=1 le=0 pe=0",
		"replicas=[2 3 1] isr=[2 3 1] leader=2 le=0 pe=0",
		"replicas=[3 1 2] isr=[3 1 2] leader=3 le=0 pe=0",
	}
	for p, w := range want {
		partitionIs(t, leader, "t", int32(p), w)
	}

	deafID := leader.cfg.NodeID
	b.deafen(deafID)
	var next *Controller
	eventually(t, 5*time.Second, func() error {
		for _, c := range cs {
			if c.IsLeader() && c.cfg.NodeID != deafID {
				next = c
				return nil
			}
		}
		return fmt.Errorf("controller %d, deaf to every heartbeat, still leads", deafID)
	})
	// Two more session timeouts under the new controller, which hears everyone.
	time.Sleep(2 * 600 * time.Millisecond)
	im := next.Image()
	for id := metadata.NodeID(1); id <= 3; id++ {
		if im.Brokers[id].Fenced {
			t.Errorf("broker %d fenced", id)
		}
	}
	for p, w := range want {
		// pe=0: no ISR was ever shrunk, so no broker was fenced even for a moment.
		partitionIs(t, next, "t", int32(p), w)
	}
}

func TestUncleanLeaderElection(t *testing.T) {
	cfg := testConfig(t)
	fastLiveness(&cfg)
	c := startController(t, cfg)
	epochs := map[metadata.NodeID]int64{}
	for id := metadata.NodeID(1); id <= 2; id++ {
		epochs[id] = registerLive(t, c, metadata.Broker{ID: id})
	}
	b := startBeating(t, []*Controller{c}, epochs)
	unclean := named("unclean", assign(ids(1, 2)))
	unclean.Configs = map[string]string{"unclean.leader.election.enable": "true"}
	mustCreate(t, c, unclean, named("clean", assign(ids(1, 2))))
	for _, topic := range []string{"unclean", "clean"} {
		if _, err := c.AlterPartition(testCtx(t), metadata.TopicPartition{Topic: topic}, 1, 0, 0, ids(1)); err != nil {
			t.Fatal(err)
		}
	}
	b.pause(1, true)
	partitionIs(t, c, "unclean", 0, "replicas=[1 2] isr=[2] leader=2 le=1 pe=2")
	partitionIs(t, c, "clean", 0, "replicas=[1 2] isr=[1] leader=-1 le=1 pe=2")

	// Enabling unclean election cluster-wide elects the offline partition too.
	if err := c.AlterBrokerConfigs(testCtx(t), map[string]*string{"unclean.leader.election.enable": ptr("true")}, false); err != nil {
		t.Fatal(err)
	}
	partitionIs(t, c, "clean", 0, "replicas=[1 2] isr=[2] leader=2 le=2 pe=3")
}

func TestControlledShutdown(t *testing.T) {
	cfg := testConfig(t)
	c := startController(t, cfg)
	epochs := map[metadata.NodeID]int64{}
	for id := metadata.NodeID(1); id <= 3; id++ {
		epochs[id] = registerLive(t, c, metadata.Broker{ID: id})
	}
	mustCreate(t, c, named("t", assign(ids(1, 2, 3), ids(2, 1, 3))), named("pair", assign(ids(1, 2))))
	if _, err := c.AlterPartition(testCtx(t), metadata.TopicPartition{Topic: "pair"}, 1, 0, 0, ids(1)); err != nil {
		t.Fatal(err)
	}
	reply, err := c.BrokerHeartbeat(testCtx(t), Heartbeat{ID: 1, Epoch: epochs[1], MetadataOffset: c.Image().Offset, WantShutdown: true})
	if err != nil || !reply.ShouldShutdown || !reply.IsFenced {
		t.Fatalf("shutdown heartbeat: %+v %v", reply, err)
	}
	partitionIs(t, c, "t", 0, "replicas=[1 2 3] isr=[2 3] leader=2 le=1 pe=1")
	partitionIs(t, c, "t", 1, "replicas=[2 1 3] isr=[2 3] leader=2 le=0 pe=1")
	partitionIs(t, c, "pair", 0, "replicas=[1 2] isr=[1] leader=-1 le=1 pe=2") // nowhere to move: offline once fenced
	if !c.Image().Brokers[1].Fenced {
		t.Fatal("broker 1 not fenced after its controlled shutdown")
	}
	_, err = c.AlterPartition(testCtx(t), metadata.TopicPartition{Topic: "t"}, 2, 1, 1, ids(2, 3, 1))
	wantErr(t, "a shut down broker joins an ISR", err, ErrIneligibleReplica)

	// Restarted (a new incarnation): fenced until caught up, then it leads its
	// offline partition again.
	epoch, err := c.RegisterBroker(testCtx(t), Registration{Broker: metadata.Broker{ID: 1}, IncarnationID: "restarted"})
	if err != nil || epoch != epochs[1]+1 || !c.Image().Brokers[1].Fenced {
		t.Fatalf("re-registration: epoch %d, %v, %+v", epoch, err, c.Image().Brokers[1])
	}
	reply, err = c.BrokerHeartbeat(testCtx(t), Heartbeat{ID: 1, Epoch: epoch, MetadataOffset: c.Image().Offset})
	if err != nil || reply.IsFenced {
		t.Fatalf("heartbeat after restart: %+v %v", reply, err)
	}
	partitionIs(t, c, "pair", 0, "replicas=[1 2] isr=[1] leader=1 le=2 pe=3")
	if _, err := c.AlterPartition(testCtx(t), metadata.TopicPartition{Topic: "t"}, 2, 1, 1, ids(2, 3, 1)); err != nil {
		t.Fatalf("the restarted broker rejoins an ISR: %v", err)
	}
}

// A lone broker leading partitions nobody else can take still gets ShouldShutdown.
func TestControlledShutdownLoneBroker(t *testing.T) {
	c := startWithBrokers(t, 1)
	mustCreate(t, c, named("t", assign(ids(1))))
	reply, err := c.BrokerHeartbeat(testCtx(t), Heartbeat{ID: 1, Epoch: 1, MetadataOffset: c.Image().Offset, WantShutdown: true})
	if err != nil || !reply.ShouldShutdown {
		t.Fatalf("shutdown heartbeat: %+v %v", reply, err)
	}
	partitionIs(t, c, "t", 0, "replicas=[1] isr=[1] leader=-1 le=1 pe=1")
}

func TestPreferredLeaderElection(t *testing.T) {
	cfg := testConfig(t)
	fastLiveness(&cfg)
	cfg.DisableAutoLeaderRebalance = false
	cfg.LeaderImbalanceCheckInterval = 50 * time.Millisecond
	c := startController(t, cfg)
	epochs := map[metadata.NodeID]int64{}
	for id := metadata.NodeID(1); id <= 3; id++ {
		epochs[id] = registerLive(t, c, metadata.Broker{ID: id})
	}
	b := startBeating(t, []*Controller{c}, epochs)
	mustCreate(t, c, named("t", assign(ids(1, 2, 3))))
	b.pause(1, true)
	partitionIs(t, c, "t", 0, "replicas=[1 2 3] isr=[2 3] leader=2 le=1 pe=1")
	b.pause(1, false)
	eventually(t, 5*time.Second, func() error {
		if c.Image().Brokers[1].Fenced {
			return errors.New("broker 1 still fenced")
		}
		return nil
	})
	// Unfenced but out of sync: no preferred election yet.
	time.Sleep(200 * time.Millisecond)
	partitionIs(t, c, "t", 0, "replicas=[1 2 3] isr=[2 3] leader=2 le=1 pe=1")
	// The leader takes it back into the ISR; the preferred replica then leads again.
	if _, err := c.AlterPartition(testCtx(t), metadata.TopicPartition{Topic: "t"}, 2, 1, 1, ids(2, 3, 1)); err != nil {
		t.Fatal(err)
	}
	partitionIs(t, c, "t", 0, "replicas=[1 2 3] isr=[2 3 1] leader=1 le=2 pe=3")
}

// A new active controller gives every broker a full session timeout before fencing,
// except the previous controller's node, which it suspects: half a session timeout.
func TestFailoverGracePeriod(t *testing.T) {
	for _, gone := range []bool{false, true} {
		t.Run(map[bool]string{false: "paused", true: "process-gone"}[gone], func(t *testing.T) { failoverGracePeriod(t, gone) })
	}
}

// failoverGracePeriod: after the controller's node stops, the new controller fences
// it at once when its process is gone (Config.ProcessGone says so: a kill), and
// otherwise only after a full session timeout from the election, since a paused node
// may hold a lease that long.
func failoverGracePeriod(t *testing.T, gone bool) {
	var dead atomic.Int32
	dead.Store(-1)
	cs := startQuorumWith(t, 3, func(cfg *Config) {
		fastLiveness(cfg)
		cfg.SessionTimeout = time.Second
		cfg.ProcessGone = func(_ context.Context, b metadata.Broker) bool { return gone && int32(b.ID) == dead.Load() }
	})
	leader := leaderOf(t, cs)
	epochs := map[metadata.NodeID]int64{}
	for id := metadata.NodeID(1); id <= 3; id++ {
		epochs[id] = registerLive(t, leader, metadata.Broker{ID: id})
	}
	b := startBeating(t, cs, epochs)
	old := leader.cfg.NodeID
	dead.Store(int32(old))
	b.pause(old, true) // its broker dies with its controller
	leader.Close()
	var rest []*Controller
	for _, c := range cs {
		if c != leader {
			rest = append(rest, c)
		}
	}
	next := leaderOf(t, rest)
	elected := time.Now()
	eventually(t, 5*time.Second, func() error {
		if !next.Image().Brokers[old].Fenced {
			return fmt.Errorf("broker %d not fenced by the new controller", old)
		}
		return nil
	})
	took := time.Since(elected)
	switch {
	case gone && took > 500*time.Millisecond:
		t.Fatalf("previous controller's node, whose process is gone, fenced %v after the election; want at once", took)
	case !gone && took < 900*time.Millisecond:
		t.Fatalf("previous controller's node fenced %v after the election; want a full session timeout (1s): it may hold a lease that long", took)
	}
	for id := range epochs {
		if id != old && next.Image().Brokers[id].Fenced {
			t.Fatalf("live broker %d fenced after failover", id)
		}
	}
}

// A node outside the voters finds the controller through a voter's Raft port,
// registers with its Raft address, is added as a non-voter and replays the metadata;
// after a restart it catches up from its own Raft state.
func TestNonVoterJoins(t *testing.T) {
	cs := startQuorum(t, 3)
	leader := leaderOf(t, cs)
	lid := leader.cfg.NodeID
	registerLive(t, leader, metadata.Broker{ID: lid, Host: "leader-host", Port: 9092})
	mustCreate(t, leader, topicSpec("before-join", 2, 1))

	cfg := Config{NodeID: 4, DataDir: t.TempDir(), Listen: freeAddr(t), Voters: cs[0].cfg.Voters, Logger: testLogger(t)}
	c4 := startController(t, cfg)
	id, addr, err := c4.ControllerAddr(testCtx(t))
	if err != nil || id != lid || addr != "leader-host:9092" {
		t.Fatalf("discovery from a joining node: %d %q %v, want %d leader-host:9092", id, addr, err, lid)
	}
	if _, err := leader.RegisterBroker(testCtx(t), Registration{Broker: metadata.Broker{ID: 4}, RaftAddr: c4.Addr(), IncarnationID: "x"}); err != nil {
		t.Fatal(err)
	}
	if err := c4.WaitReady(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, leader, topicSpec("after-join", 1, 1))
	if err := c4.WaitApplied(testCtx(t), leader.Image().Offset); err != nil {
		t.Fatal(err)
	}
	if c4.Image().Topic("before-join") == nil || c4.Image().Topic("after-join") == nil || c4.IsLeader() {
		t.Fatalf("non-voter image: %v", c4.Image().TopicNames())
	}
	if got, _ := c4.LeaderID(); got != lid {
		t.Fatalf("non-voter thinks the leader is %d", got)
	}

	c4.Close()
	mustCreate(t, leader, topicSpec("while-down", 1, 1))
	c4 = startController(t, cfg)
	if err := c4.WaitApplied(testCtx(t), leader.Image().Offset); err != nil || c4.Image().Topic("while-down") == nil {
		t.Fatalf("restarted non-voter did not catch up: %v %v", err, c4.Image().TopicNames())
	}
}
