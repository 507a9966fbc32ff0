package controller

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/metadata"
)

func TestCheckRemoveVoter(t *testing.T) {
	up := func(ids ...metadata.NodeID) func(metadata.NodeID) bool {
		return func(id metadata.NodeID) bool { return slices.Contains(ids, id) }
	}
	for _, tc := range []struct {
		name   string
		voters []metadata.NodeID
		remove metadata.NodeID
		live   func(metadata.NodeID) bool
		want   error
	}{
		{"not a voter", []metadata.NodeID{1, 2, 3}, 4, up(1, 2, 3, 4), ErrVoterNotFound},
		{"last voter", []metadata.NodeID{1}, 1, up(1), ErrInvalidRequest},
		{"all up", []metadata.NodeID{1, 2, 3}, 1, up(1, 2, 3), nil},
		{"the dead one", []metadata.NodeID{1, 2, 3, 4}, 1, up(2, 3, 4), nil},
		{"majority of the rest up", []metadata.NodeID{1, 2, 3, 4}, 1, up(1, 2, 3), nil},
		{"too few of the rest up", []metadata.NodeID{1, 2, 3}, 1, up(1, 2), ErrInvalidRequest},
		{"two of four dead", []metadata.NodeID{1, 2, 3, 4}, 1, up(1, 2), ErrInvalidRequest},
		{"two left, one up", []metadata.NodeID{1, 2}, 2, up(1), nil},
		{"two left, the other dead", []metadata.NodeID{1, 2}, 1, up(1), ErrInvalidRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkRemoveVoter(tc.voters, tc.remove, tc.live)
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("remove %d of %v: got %v, want %v", tc.remove, tc.voters, err, tc.want)
			}
		})
	}
}

// TestVoterChanges runs three in-process voters and a fourth node that joins as a
// non-voter, then promotes it, refuses what must be refused, and removes voters down
// to the one that is left.
func TestVoterChanges(t *testing.T) {
	cs := startQuorum(t, 3)
	leader := leaderOf(t, cs)
	epochs := map[metadata.NodeID]int64{}
	for i := 1; i <= 3; i++ {
		epochs[metadata.NodeID(i)] = registerLive(t, leader, metadata.Broker{ID: metadata.NodeID(i)})
	}
	c4 := startController(t, Config{NodeID: 4, DataDir: t.TempDir(), Listen: freeAddr(t), Voters: cs[0].cfg.Voters,
		Logger: testLogger(t)})
	epochs[4] = registerWith(t, leader, metadata.Broker{ID: 4}, c4.Addr())
	if err := c4.WaitReady(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	beat := func(c *Controller) {
		for id, epoch := range epochs {
			if _, err := c.BrokerHeartbeat(testCtx(t), Heartbeat{ID: id, Epoch: epoch, MetadataOffset: c.Image().Offset}); err != nil {
				t.Fatalf("heartbeat of node %d: %v", id, err)
			}
		}
	}
	beat(leader)

	wantErr(t, "promote an unknown node", leader.AddVoter(testCtx(t), 9, ""), ErrInvalidRequest)
	wantErr(t, "promote a voter", leader.AddVoter(testCtx(t), 1, ""), ErrDuplicateVoter)
	wantErr(t, "promote at another address", leader.AddVoter(testCtx(t), 4, "127.0.0.1:1"), ErrInvalidRequest)
	// Node 4 has not reported the topic's records: not caught up.
	mustCreate(t, leader, topicSpec("after-join", 1, 1))
	short, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	wantErr(t, "promote a node behind", leader.AddVoter(short, 4, ""), ErrTimeout)
	beat(leader)
	if err := leader.AddVoter(testCtx(t), 4, c4.Addr()); err != nil {
		t.Fatalf("promote node 4: %v", err)
	}
	st := describeQuorum(t, leader)
	if got := memberIDs(st.Voters); !slices.Equal(got, []metadata.NodeID{1, 2, 3, 4}) {
		t.Fatalf("voters after promoting node 4: %v", got)
	}

	// The leader removes itself: the leadership moves first, to another voter.
	old := leader.cfg.NodeID
	wantErr(t, "remove the leader", leader.RemoveVoter(testCtx(t), old), ErrNotController)
	all := append(slices.Clone(cs), c4)
	leader = leaderOf(t, all)
	if leader.cfg.NodeID == old {
		t.Fatalf("node %d still leads after handing over", old)
	}
	beat(leader)
	if err := leader.RemoveVoter(testCtx(t), old); err != nil {
		t.Fatalf("remove node %d: %v", old, err)
	}
	st = describeQuorum(t, leader)
	if got := memberIDs(st.Observers); !slices.Equal(got, []metadata.NodeID{old}) {
		t.Fatalf("observers after removing node %d: %v (voters %v)", old, got, memberIDs(st.Voters))
	}
	wantErr(t, "remove it again", leader.RemoveVoter(testCtx(t), old), ErrVoterNotFound)
	// The removed node replays the metadata as a non-voter.
	mustCreate(t, leader, topicSpec("after-remove", 1, 1))
	for _, c := range all {
		if c.cfg.NodeID == old {
			if err := c.WaitApplied(testCtx(t), leader.Image().Offset); err != nil {
				t.Fatalf("removed node %d stopped replaying the metadata: %v", old, err)
			}
		}
	}

	// Down to one voter: removing the last is refused.
	for _, id := range memberIDs(st.Voters) {
		if id == leader.cfg.NodeID {
			continue
		}
		if err := leader.RemoveVoter(testCtx(t), id); err != nil {
			t.Fatalf("remove node %d: %v", id, err)
		}
	}
	wantErr(t, "remove the last voter", leader.RemoveVoter(testCtx(t), leader.cfg.NodeID), ErrInvalidRequest)
	mustCreate(t, leader, topicSpec("one-voter", 1, 1))
}

// registerWith registers b, with its Raft address, and unfences it.
func registerWith(t *testing.T, c *Controller, b metadata.Broker, raftAddr string) int64 {
	t.Helper()
	epoch, err := c.RegisterBroker(testCtx(t), Registration{Broker: b, IncarnationID: "inc", RaftAddr: raftAddr})
	if err != nil {
		t.Fatalf("register %d: %v", b.ID, err)
	}
	if _, err := c.BrokerHeartbeat(testCtx(t), Heartbeat{ID: b.ID, Epoch: epoch, MetadataOffset: c.Image().Offset}); err != nil {
		t.Fatalf("first heartbeat of %d: %v", b.ID, err)
	}
	return epoch
}

func describeQuorum(t *testing.T, c *Controller) metadata.QuorumState {
	t.Helper()
	st, err := c.DescribeQuorum(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if st.Leader != c.cfg.NodeID || st.HighWatermark <= 0 || st.Term == 0 {
		t.Fatalf("describe: %+v", st)
	}
	return st
}

func memberIDs(ms []metadata.QuorumMember) []metadata.NodeID {
	var out []metadata.NodeID
	for _, m := range ms {
		out = append(out, m.ID)
	}
	return out
}

// TestWipedVoterJoins: a voter that was removed and comes back with no Raft state
// (a wiped disk) and its old --controllers joins the quorum that exists, as an
// observer, instead of bootstrapping a configuration of its own from the flag.
func TestWipedVoterJoins(t *testing.T) {
	cs := startQuorum(t, 3)
	leader := leaderOf(t, cs)
	for i := 1; i <= 3; i++ {
		// With a Kafka address: discovery names the controller by it.
		registerLive(t, leader, metadata.Broker{ID: metadata.NodeID(i), Host: "127.0.0.1", Port: int32(9090 + i)})
	}
	var gone *Controller
	for _, c := range cs {
		if c != leader && c.cfg.NodeID != 1 { // node 1 listens on a wildcard address
			gone = c
			break
		}
	}
	if gone == nil {
		gone = cs[2]
		if gone == leader {
			gone = cs[1]
		}
	}
	id := gone.cfg.NodeID
	if err := leader.RemoveVoter(testCtx(t), id); err != nil {
		t.Fatalf("remove node %d: %v", id, err)
	}
	gone.Close()
	cfg := gone.cfg
	cfg.DataDir, cfg.Listen = t.TempDir(), serverAddrOf(t, leader, id)
	back := startController(t, cfg)
	if back.ready.Load() {
		t.Fatalf("node %d with a wiped disk bootstrapped a quorum of its own from --controllers instead of joining", id)
	}
	registerWith(t, leader, metadata.Broker{ID: id}, back.Addr())
	if err := back.WaitReady(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, leader, topicSpec("after-rejoin", 1, 1))
	if err := back.WaitApplied(testCtx(t), leader.Image().Offset); err != nil {
		t.Fatalf("rejoined node %d does not replay the metadata: %v", id, err)
	}
	st := describeQuorum(t, leader)
	if got := memberIDs(st.Observers); !slices.Equal(got, []metadata.NodeID{id}) || slices.Contains(memberIDs(st.Voters), id) {
		t.Fatalf("after the rejoin: voters %v, observers %v; want node %d an observer", memberIDs(st.Voters), got, id)
	}
}

// serverAddrOf is node id's Raft address in the configuration c sees.
func serverAddrOf(t *testing.T, c *Controller, id metadata.NodeID) string {
	t.Helper()
	conf, err := c.configurationLocked(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	s, ok := findServer(conf, id)
	if !ok {
		t.Fatalf("node %d is not in the configuration", id)
	}
	return string(s.Address)
}
