package controller

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/metadata"
)

// fullDiskBound is how long the quorum may take to move its leadership off a voter
// whose metadata disk filled, and to take that voter back once space is freed.
const fullDiskBound = 15 * time.Second

// fillDisk makes c's Raft store and metadata directory find the disk full for every
// operation for which fails is true (nil: all of them). It returns the function that
// frees the space again.
func fillDisk(c *Controller, fails func(op string) bool) (free func()) {
	fault := func(op string) error {
		if fails != nil && !fails(op) {
			return nil
		}
		return fmt.Errorf("%s %s: %w", op, c.store.dir, syscall.ENOSPC)
	}
	c.store.fault.Store(&fault)
	return func() { c.store.fault.Store(nil) }
}

// writes fails every write and probe of the directory, but the free space that the
// filesystem reports looks fine (the last few free blocks are too few for Raft's next
// write).
func writes(op string) bool { return op != opStatfs }

// logWrites fails the log's writes only: a term or a vote (a few bytes, which bolt
// may fit in pages it freed earlier) is stored.
func logWrites(op string) bool { return op == opStoreLogs || op == opProbe }

// startFullDiskQuorum starts three voters, registers brokers 1-3 and creates "t"
// with one partition led by each broker.
func startFullDiskQuorum(t *testing.T) ([]*Controller, *Controller, map[metadata.NodeID]int64) {
	t.Helper()
	cs := startQuorumWith(t, 3, func(cfg *Config) {
		cfg.SessionTimeout = time.Minute // no fencing by the test's silence
		cfg.DisableAutoLeaderRebalance = true
	})
	leader := leaderOf(t, cs)
	epochs := map[metadata.NodeID]int64{}
	for id := metadata.NodeID(1); id <= 3; id++ {
		epochs[id] = registerLive(t, leader, metadata.Broker{ID: id})
	}
	mustCreate(t, leader, named("t", assign(ids(1, 2, 3), ids(2, 3, 1), ids(3, 1, 2))))
	return cs, leader, epochs
}

// otherLeader waits (fullDiskBound) until a voter other than full leads, and fails
// if full leads again meanwhile.
func otherLeader(t *testing.T, cs []*Controller, full *Controller) *Controller {
	t.Helper()
	var next *Controller
	eventually(t, fullDiskBound, func() error {
		for _, c := range cs {
			if c != full && c.IsLeader() {
				next = c
				return nil
			}
		}
		return fmt.Errorf("node %d, whose metadata disk is full, still leads the metadata quorum (or nobody does)", full.cfg.NodeID)
	})
	return next
}

// metadataGoesOn checks that the quorum without full commits a topic creation and a
// partition leader election (full's broker reports its full disk: the partition it
// led moves to another in-sync replica), and that full does not take the leadership
// back meanwhile.
func metadataGoesOn(t *testing.T, next, full *Controller, epochs map[metadata.NodeID]int64, topic string) {
	t.Helper()
	mustCreate(t, next, topicSpec(topic, 3, 3))
	id := full.cfg.NodeID
	reply, err := next.BrokerHeartbeat(testCtx(t), Heartbeat{ID: id, Epoch: epochs[id], MetadataOffset: next.Image().Offset, DiskFull: true})
	if err != nil || reply.IsFenced {
		t.Fatalf("heartbeat of broker %d to the new active controller %d: %+v %v", id, next.cfg.NodeID, reply, err)
	}
	p := int32(id - 1) // t-p is led by broker id
	eventually(t, 5*time.Second, func() error {
		got, _ := next.Image().Partition(metadata.TopicPartition{Topic: "t", Partition: p})
		if got.Leader == id || got.Leader < 0 {
			return fmt.Errorf("t-%d is still led by %d (want another in-sync replica): %s", p, got.Leader, describe(got))
		}
		return nil
	})
	wantErr(t, "create on the full node", full.CreateTopics(testCtx(t), []metadata.TopicSpec{topicSpec("refused", 1, 1)}, false)[0], ErrNotController)
	if full.IsLeader() {
		t.Fatalf("node %d, whose metadata disk is full, leads the metadata quorum again", id)
	}
}

// rejoins frees full's disk and checks that it catches up with the quorum, and that
// its Raft log is intact: restarted on the same directory, it replays every topic.
func rejoins(t *testing.T, cs []*Controller, full, next *Controller, free func(), topic string) {
	t.Helper()
	free()
	ctx, cancel := context.WithTimeout(context.Background(), fullDiskBound)
	defer cancel()
	if err := full.WaitApplied(ctx, next.Image().Offset); err != nil {
		t.Fatalf("node %d did not catch up with the quorum after its disk had room again: %v", full.cfg.NodeID, err)
	}
	offset := next.Image().Offset
	cfg := full.cfg
	if err := full.Close(); err != nil {
		t.Fatalf("close node %d: %v", cfg.NodeID, err)
	}
	again, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { again.Close() })
	sctx, scancel := context.WithTimeout(context.Background(), fullDiskBound)
	defer scancel()
	if err := again.Start(sctx); err != nil {
		t.Fatalf("restart node %d: %v", cfg.NodeID, err)
	}
	if err := again.WaitApplied(sctx, offset); err != nil {
		t.Fatalf("restarted node %d: %v", cfg.NodeID, err)
	}
	if _, ok := again.Image().Partition(metadata.TopicPartition{Topic: topic}); !ok {
		t.Fatalf("restarted node %d has no topic %q", cfg.NodeID, topic)
	}
}

// The active controller's metadata disk fills while it has nothing to write (its
// heartbeats need no disk, so Raft alone would keep it leading, and the first
// proposal would find that out only by failing). It hands the leadership to another
// voter within the bound and stays out of the elections; the other two carry on;
// once space is freed it catches up.
func TestFullMetadataDiskIdleLeaderResigns(t *testing.T) {
	cs, full, epochs := startFullDiskQuorum(t)
	free := fillDisk(full, nil)
	next := otherLeader(t, cs, full)
	metadataGoesOn(t, next, full, epochs, "during")
	rejoins(t, cs, full, next, free, "during")
}

// The active controller finds its disk full by a failed write (Raft steps down when
// it cannot store its own entries). It must not panic on the term of the next
// election (hashicorp/raft panics when it cannot store a term), nor win it (the
// voters that heard from it last grant it their pre-votes at once), since it could not
// store that term's first entry either.
func TestFullMetadataDiskFailedWriteStaysOut(t *testing.T) {
	for name, fails := range map[string]func(string) bool{"all writes": writes, "log writes": logWrites} {
		t.Run(name, func(t *testing.T) {
			cs, full, epochs := startFullDiskQuorum(t)
			free := fillDisk(full, fails)
			if err := full.CreateTopics(testCtx(t), []metadata.TopicSpec{topicSpec("lost", 1, 1)}, false)[0]; err == nil {
				t.Fatal("create on the leader whose disk is full succeeded")
			}
			next := otherLeader(t, cs, full)
			metadataGoesOn(t, next, full, epochs, "during")
			rejoins(t, cs, full, next, free, "during")
		})
	}
}

// An admin change is not held back by a broker whose disk is full: it may be unable
// to store the metadata log until space is freed, and every change would time out.
func TestWaitBrokersAppliedSkipsFullDisks(t *testing.T) {
	c := startController(t, testConfig(t))
	epochs := map[metadata.NodeID]int64{}
	for i := metadata.NodeID(1); i <= 3; i++ {
		epochs[i] = registerLive(t, c, metadata.Broker{ID: i})
	}
	beat := func(id metadata.NodeID, at uint64, full bool) {
		t.Helper()
		if _, err := c.BrokerHeartbeat(testCtx(t), Heartbeat{ID: id, Epoch: epochs[id], MetadataOffset: at, DiskFull: full}); err != nil {
			t.Fatalf("heartbeat of %d: %v", id, err)
		}
	}
	beat(3, c.Image().Offset, true) // records the full disk; 3 applies nothing after it
	mustCreate(t, c, topicSpec("orders", 1, 1))
	offset := c.Image().Offset
	beat(1, offset, false)
	beat(2, offset, false)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	wantErr(t, "wait with node 3's disk full and behind", c.WaitBrokersApplied(ctx, offset), nil)
}
