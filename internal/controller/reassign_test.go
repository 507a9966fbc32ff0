package controller

import (
	"errors"
	"slices"
	"testing"

	"github.com/runnel-io/runnel/internal/metadata"
)

func TestReassignmentLifecycle(t *testing.T) {
	all := func(metadata.NodeID) bool { return true }
	p := metadata.Partition{Replicas: ids(1, 2, 3), ISR: ids(1, 2, 3), Leader: 1, LeaderEpoch: 4, PartitionEpoch: 7}

	// Start: the target first, then the replicas leaving; the leader stays.
	next, err := startReassignment(p, ids(4, 2, 3), all, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(next.Replicas, ids(4, 2, 3, 1)) || !slices.Equal(next.AddingReplicas, ids(4)) ||
		!slices.Equal(next.RemovingReplicas, ids(1)) || next.Leader != 1 || next.LeaderEpoch != 4 || next.PartitionEpoch != 8 {
		t.Fatalf("started: %+v", next)
	}
	if !slices.Equal(next.TargetReplicas(), ids(4, 2, 3)) || !slices.Equal(next.OriginalReplicas(), ids(2, 3, 1)) {
		t.Fatalf("target %v original %v", next.TargetReplicas(), next.OriginalReplicas())
	}
	// Not done while 4 is outside the ISR.
	if _, ok := completeReassignment(next, all, nil); ok {
		t.Fatal("completed before the new replica joined the ISR")
	}
	// 4 joins the ISR: complete, and the leader (1, removed) hands over to the first
	// target replica in the ISR, in the same change.
	joined := next
	joined.ISR = ids(1, 2, 3, 4)
	done, ok := completeReassignment(joined, all, nil)
	if !ok {
		t.Fatal("not completed with every target replica in the ISR")
	}
	if !slices.Equal(done.Replicas, ids(4, 2, 3)) || !slices.Equal(done.ISR, ids(2, 3, 4)) || done.Reassigning() ||
		done.Leader != 4 || done.LeaderEpoch != 5 {
		t.Fatalf("completed: %+v", done)
	}
	// The new leader must be live: a dead 4 passes to 2.
	done, ok = completeReassignment(joined, func(r metadata.NodeID) bool { return r != 4 }, nil)
	if !ok || done.Leader != 2 {
		t.Fatalf("completed with 4 dead: ok %v leader %d", ok, done.Leader)
	}

	// Cancel: back to the original replicas; the added replica leaves the ISR too.
	back, err := cancelReassignment(joined, all, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(back.Replicas, ids(2, 3, 1)) || !slices.Equal(back.ISR, ids(1, 2, 3)) || back.Reassigning() || back.Leader != 1 {
		t.Fatalf("cancelled: %+v", back)
	}
	if _, err := cancelReassignment(p, all, nil); !errors.Is(err, ErrNoReassignmentInProgress) {
		t.Fatalf("cancel without a reassignment: %v", err)
	}
	// Asking for the original replicas again while moving cancels, too.
	again, err := startReassignment(next, ids(2, 3, 1), all, nil)
	if err != nil || again.Reassigning() || !slices.Equal(again.Replicas, ids(2, 3, 1)) {
		t.Fatalf("target = original while moving: %+v, %v", again, err)
	}
}

func TestReassignmentEdgeCases(t *testing.T) {
	all := func(metadata.NodeID) bool { return true }
	p := metadata.Partition{Replicas: ids(1, 2, 3), ISR: ids(1, 2, 3), Leader: 1, LeaderEpoch: 4, PartitionEpoch: 7}

	// A pure removal whose target is all in the ISR completes at once.
	shrunk, err := startReassignment(p, ids(1, 2), all, nil)
	if err != nil || shrunk.Reassigning() || !slices.Equal(shrunk.Replicas, ids(1, 2)) || !slices.Equal(shrunk.ISR, ids(1, 2)) || shrunk.Leader != 1 {
		t.Fatalf("removal of 3: %+v, %v", shrunk, err)
	}
	// A reorder changes only the preferred leader.
	re, err := startReassignment(p, ids(3, 1, 2), all, nil)
	if err != nil || re.Reassigning() || !slices.Equal(re.Replicas, ids(3, 1, 2)) || re.Leader != 1 || re.PartitionEpoch != 8 {
		t.Fatalf("reorder: %+v, %v", re, err)
	}
	// The same assignment: nothing changes.
	same, err := startReassignment(p, ids(1, 2, 3), all, nil)
	if err != nil || !samePartitionState(same, p) {
		t.Fatalf("no-op: %+v, %v", same, err)
	}
	// Replacing a reassignment in progress starts from the original replicas; a
	// replica being added that the new target keeps stays in the ISR, one it drops
	// leaves it.
	moving, _ := startReassignment(p, ids(4, 5, 3), all, nil)
	moving.ISR = ids(1, 2, 3, 4)
	replaced, err := startReassignment(moving, ids(4, 6, 3), all, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(replaced.Replicas, ids(4, 6, 3, 1, 2)) || !slices.Equal(replaced.AddingReplicas, ids(4, 6)) ||
		!slices.Equal(replaced.RemovingReplicas, ids(1, 2)) || !slices.Equal(replaced.ISR, ids(1, 2, 3, 4)) {
		t.Fatalf("replaced: %+v", replaced)
	}
	dropped, _ := startReassignment(moving, ids(5, 6, 3), all, nil)
	if slices.Contains(dropped.ISR, 4) || slices.Contains(dropped.Replicas, 4) {
		t.Fatalf("a dropped adding replica stayed: %+v", dropped)
	}
	// A change that would leave no live in-sync leader is refused: the leader 1 is
	// being removed and the only other ISR member is dead.
	lonely := metadata.Partition{Replicas: ids(1, 2), ISR: ids(1), Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1}
	moving2, _ := startReassignment(lonely, ids(2), all, nil)
	if !moving2.Reassigning() || moving2.Leader != 1 {
		t.Fatalf("moving off 1 while 2 is out of the ISR: %+v", moving2)
	}
	if _, ok := completeReassignment(moving2, all, nil); ok {
		t.Fatal("completed with the target outside the ISR")
	}
}

func TestElectOnDemand(t *testing.T) {
	all := func(metadata.NodeID) bool { return true }
	none := func(metadata.NodeID) bool { return false }
	p := metadata.Partition{Replicas: ids(1, 2, 3), ISR: ids(1, 2, 3), Leader: 2, LeaderEpoch: 4, PartitionEpoch: 7}
	next, err := electOnDemand(p, false, all, nil, none)
	if err != nil || next.Leader != 1 || next.LeaderEpoch != 5 || next.PartitionEpoch != 8 {
		t.Fatalf("preferred: %+v, %v", next, err)
	}
	if _, err := electOnDemand(next, false, all, nil, none); !errors.Is(err, ErrElectionNotNeeded) {
		t.Fatalf("preferred leads already: %v", err)
	}
	out := p
	out.ISR = ids(2, 3)
	if _, err := electOnDemand(out, false, all, nil, none); !errors.Is(err, ErrPreferredLeaderNotAvailable) {
		t.Fatalf("preferred outside the ISR: %v", err)
	}
	if _, err := electOnDemand(p, true, all, nil, none); !errors.Is(err, ErrElectionNotNeeded) {
		t.Fatalf("unclean with a live leader: %v", err)
	}
	offline := metadata.Partition{Replicas: ids(1, 2), ISR: ids(1), Leader: metadata.NoLeader, LeaderEpoch: 3, PartitionEpoch: 5}
	notOne := func(r metadata.NodeID) bool { return r != 1 }
	un, err := electOnDemand(offline, true, notOne, nil, none)
	if err != nil || un.Leader != 2 || !slices.Equal(un.ISR, ids(2)) {
		t.Fatalf("unclean election: %+v, %v", un, err)
	}
	if _, err := electOnDemand(offline, true, func(metadata.NodeID) bool { return false }, nil, none); !errors.Is(err, ErrEligibleLeadersNotAvailable) {
		t.Fatalf("unclean with nobody live: %v", err)
	}
}
