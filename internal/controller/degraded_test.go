package controller

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/runnel-io/runnel/internal/metadata"
)

func TestChooseLeaderPassesOverFullDisks(t *testing.T) {
	ids := func(x ...metadata.NodeID) []metadata.NodeID { return x }
	for _, tc := range []struct {
		name            string
		replicas, isr   []metadata.NodeID
		live, full      []metadata.NodeID
		unclean         bool
		want            metadata.NodeID
		wantUnclean, ok bool
	}{
		{"preferred full, next in sync leads", ids(1, 2, 3), ids(1, 2, 3), ids(1, 2, 3), ids(1), false, 2, false, true},
		{"two full, the third leads", ids(1, 2, 3), ids(1, 2, 3), ids(1, 2, 3), ids(1, 2), false, 3, false, true},
		{"all full: the first in sync still leads", ids(1, 2, 3), ids(1, 2, 3), ids(1, 2, 3), ids(1, 2, 3), false, 1, false, true},
		{"only the full one in sync: it leads, not an unclean one", ids(1, 2, 3), ids(1), ids(1, 2, 3), ids(1), true, 1, false, true},
		{"full and dead", ids(1, 2, 3), ids(1, 2, 3), ids(1, 3), ids(3), false, 1, false, true},
		{"out of sync with room is no choice", ids(1, 2), ids(1), ids(1, 2), ids(1), false, 1, false, true},
		{"unclean prefers room", ids(1, 2, 3), ids(9), ids(1, 2, 3), ids(1), true, 2, true, true},
		{"unclean, all full", ids(1, 2), nil, ids(1, 2), ids(1, 2), true, 1, true, true},
		{"full and no live isr", ids(1, 2), ids(1), ids(2), ids(2), false, metadata.NoLeader, false, false},
	} {
		got, unclean, ok := chooseLeader(tc.replicas, tc.isr, liveSet(tc.live...), liveSet(tc.full...), tc.unclean)
		if got != tc.want || unclean != tc.wantUnclean || ok != tc.ok {
			t.Errorf("%s: got %d unclean=%v ok=%v, want %d %v %v", tc.name, got, unclean, ok, tc.want, tc.wantUnclean, tc.ok)
		}
	}
}

// withFullDisks marks the disks of ids full in im.
func withFullDisks(im *metadata.Image, ids ...metadata.NodeID) *metadata.Image {
	for _, id := range ids {
		im = im.Apply(metadata.Record{Type: metadata.BrokerDiskType, BrokerID: id, DiskFull: true}, im.Offset+1)
	}
	return im
}

func TestFullDiskElections(t *testing.T) {
	for _, tc := range []struct {
		name string
		full []metadata.NodeID
		live []metadata.NodeID
		want []string
	}{
		{"broker 1 full", []metadata.NodeID{1}, []metadata.NodeID{1, 2, 3}, []string{
			"p0: replicas=[1 2 3] isr=[1 2 3] leader=2 le=1 pe=1", // the ISR is left to the lag rule
			// p2: 1 is its only in-sync replica, it keeps leading
		}},
		{"brokers 1 and 2 full", []metadata.NodeID{1, 2}, []metadata.NodeID{1, 2, 3}, []string{
			"p0: replicas=[1 2 3] isr=[1 2 3] leader=3 le=1 pe=1",
			"p1: replicas=[2 3 1] isr=[2 3 1] leader=3 le=1 pe=1",
		}},
		{"broker 1 full, 2 not live", []metadata.NodeID{1}, []metadata.NodeID{1, 3}, []string{
			"p0: replicas=[1 2 3] isr=[1 2 3] leader=3 le=1 pe=1",
		}},
		{"a shared full disk: leaders stay", []metadata.NodeID{1, 2, 3}, []metadata.NodeID{1, 2, 3}, nil},
		{"no full disk", nil, []metadata.NodeID{1, 2, 3}, nil},
	} {
		im := withFullDisks(electionImage(nil), tc.full...)
		got := describeElections(degradedElections(im, liveSet(tc.live...)))
		if want := strings.Join(tc.want, "\n"); got != want {
			t.Errorf("%s:\n%s\nwant:\n%s", tc.name, got, want)
		}
	}
}

// The other election plans never pick a full disk while another replica can lead.
func TestElectionsAvoidFullDisks(t *testing.T) {
	// Fencing 1 with 2 full: p0 goes to 3, not 2; p1 stays with its live leader 2.
	im := withFullDisks(electionImage(nil), 2)
	got := describeElections(fenceElections(im, 1, liveSet(1, 2, 3), never))
	want := strings.Join([]string{
		"p0: replicas=[1 2 3] isr=[2 3] leader=3 le=1 pe=1",
		"p1: replicas=[2 3 1] isr=[2 3] leader=2 le=0 pe=1",
		"p2: replicas=[1 2] isr=[1] leader=-1 le=1 pe=1",
	}, "\n")
	if got != want {
		t.Errorf("fence 1 with 2 full:\n%s\nwant:\n%s", got, want)
	}
	// A controlled shutdown of 1 with 2 full: the same.
	got = describeElections(shutdownElections(im, 1, liveSet(1, 2, 3)))
	if !strings.HasPrefix(got, "p0: replicas=[1 2 3] isr=[2 3] leader=3 le=1 pe=1\n") {
		t.Errorf("shutdown of 1 with 2 full:\n%s", got)
	}
	// The preferred replica does not get its leadership back while its disk is full.
	moved := withFullDisks(electionImage(nil), 1)
	moved = applyElections(moved, degradedElections(moved, liveSet(1, 2, 3)))
	if got := describeElections(preferredElections(moved, liveSet(1, 2, 3), 0)); got != "" {
		t.Errorf("preferred election onto a full disk: %s", got)
	}
	cleared := moved.Apply(metadata.Record{Type: metadata.BrokerDiskType, BrokerID: 1}, moved.Offset+1)
	if got, want := describeElections(preferredElections(cleared, liveSet(1, 2, 3), 0)), "p0: replicas=[1 2 3] isr=[1 2 3] leader=1 le=2 pe=2"; got != want {
		t.Errorf("preferred election once the disk has room: %s, want %s", got, want)
	}
}

// A heartbeat that says the disk is full records it and moves the broker's
// leadership away; one that says it has room clears it. ISRs are left alone.
func TestHeartbeatDiskFull(t *testing.T) {
	c := startController(t, testConfig(t))
	epochs := map[metadata.NodeID]int64{}
	for id := metadata.NodeID(1); id <= 3; id++ {
		epochs[id] = registerLive(t, c, metadata.Broker{ID: id})
	}
	mustCreate(t, c, named("t", assign(ids(1, 2, 3), ids(2, 1, 3))), named("pair", assign(ids(1, 2))))
	if _, err := c.AlterPartition(testCtx(t), metadata.TopicPartition{Topic: "pair"}, 1, 0, 0, ids(1)); err != nil {
		t.Fatal(err)
	}
	beat := func(id metadata.NodeID, full bool) {
		t.Helper()
		reply, err := c.BrokerHeartbeat(testCtx(t), Heartbeat{ID: id, Epoch: epochs[id], MetadataOffset: c.Image().Offset, DiskFull: full})
		if err != nil || reply.IsFenced {
			t.Fatalf("heartbeat of %d (disk full %v): %+v %v", id, full, reply, err)
		}
	}
	beat(1, true)
	if !c.Image().Brokers[1].DiskFull {
		t.Fatal("broker 1's full disk is not in the image")
	}
	partitionIs(t, c, "t", 0, "replicas=[1 2 3] isr=[1 2 3] leader=2 le=1 pe=1")
	partitionIs(t, c, "t", 1, "replicas=[2 1 3] isr=[2 1 3] leader=2 le=0 pe=0")
	partitionIs(t, c, "pair", 0, "replicas=[1 2] isr=[1] leader=1 le=0 pe=1") // only 1 in sync: it stays
	offset := c.Image().Offset
	beat(1, true) // nothing new to record
	if got := c.Image().Offset; got != offset {
		t.Fatalf("a repeated full-disk heartbeat proposed records (offset %d -> %d)", offset, got)
	}
	// Broker 2's disk fills too: t-0 moves on to 3, t-1 (led by 2) as well.
	beat(2, true)
	partitionIs(t, c, "t", 0, "replicas=[1 2 3] isr=[1 2 3] leader=3 le=2 pe=2")
	partitionIs(t, c, "t", 1, "replicas=[2 1 3] isr=[2 1 3] leader=3 le=1 pe=1")
	beat(1, false)
	beat(2, false)
	if b := c.Image().Brokers; b[1].DiskFull || b[2].DiskFull {
		t.Fatalf("the flags did not clear: %+v", b)
	}
	partitionIs(t, c, "t", 0, "replicas=[1 2 3] isr=[1 2 3] leader=3 le=2 pe=2") // back by the preferred election
}

// A heartbeat that reports a damaged replica records it, moves the leadership to an
// intact in-sync replica and takes the damaged replica out of the ISR; the leader may
// not bring it back (AlterPartition: INELIGIBLE_REPLICA) until a heartbeat reports
// it repaired.
func TestHeartbeatDamagedReplica(t *testing.T) {
	c := startController(t, testConfig(t))
	epochs := map[metadata.NodeID]int64{}
	for id := metadata.NodeID(1); id <= 3; id++ {
		epochs[id] = registerLive(t, c, metadata.Broker{ID: id})
	}
	mustCreate(t, c, named("t", assign(ids(1, 2, 3), ids(2, 1, 3))), named("solo", assign(ids(1))))
	damage := []metadata.DamagedReplica{
		{Topic: "solo", Partition: 0, FirstOffset: 326, LastOffset: 401, File: "00000000000000000000.log"},
		{Topic: "t", Partition: 0, FirstOffset: 326, LastOffset: 401, File: "00000000000000000000.log"},
		{Topic: "t", Partition: 1, FirstOffset: 7, LastOffset: 7, File: "00000000000000000000.log"},
	}
	beat := func(id metadata.NodeID, damaged []metadata.DamagedReplica) {
		t.Helper()
		reply, err := c.BrokerHeartbeat(testCtx(t), Heartbeat{ID: id, Epoch: epochs[id], MetadataOffset: c.Image().Offset, Damaged: damaged})
		if err != nil || reply.IsFenced {
			t.Fatalf("heartbeat of %d: %+v %v", id, reply, err)
		}
	}
	beat(1, damage)
	if got := c.Image().Brokers[1].Damaged; !slices.Equal(got, damage) {
		t.Fatalf("broker 1's damage in the image: %+v", got)
	}
	partitionIs(t, c, "t", 0, "replicas=[1 2 3] isr=[2 3] leader=2 le=1 pe=1")
	partitionIs(t, c, "t", 1, "replicas=[2 1 3] isr=[2 3] leader=2 le=0 pe=1")
	partitionIs(t, c, "solo", 0, "replicas=[1] isr=[1] leader=1 le=0 pe=0") // the only copy keeps leading
	offset := c.Image().Offset
	beat(1, damage)
	if got := c.Image().Offset; got != offset {
		t.Fatalf("a repeated heartbeat proposed records (offset %d -> %d)", offset, got)
	}
	tp := metadata.TopicPartition{Topic: "t", Partition: 0}
	if _, err := c.AlterPartition(testCtx(t), tp, 2, 1, 1, ids(2, 3, 1)); !errors.Is(err, ErrIneligibleReplica) {
		t.Fatalf("the leader brought damaged replica 1 back into the ISR: %v", err)
	}
	beat(1, damage[:1]) // t's replicas repaired; solo's not
	if _, err := c.AlterPartition(testCtx(t), tp, 2, 1, 1, ids(2, 3, 1)); err != nil {
		t.Fatalf("a repaired replica rejoining the ISR: %v", err)
	}
	partitionIs(t, c, "t", 0, "replicas=[1 2 3] isr=[2 3 1] leader=2 le=1 pe=2")
}
