package controller

import (
	"testing"

	"github.com/runnel-io/runnel/internal/metadata"
)

func liveSet(ids ...metadata.NodeID) func(metadata.NodeID) bool {
	return func(id metadata.NodeID) bool { return metadata.Contains(ids, id) }
}

func TestChooseLeader(t *testing.T) {
	ids := func(x ...metadata.NodeID) []metadata.NodeID { return x }
	for _, tc := range []struct {
		name            string
		replicas, isr   []metadata.NodeID
		live            []metadata.NodeID
		unclean         bool
		want            metadata.NodeID
		wantUnclean, ok bool
	}{
		{"preferred", ids(1, 2, 3), ids(1, 2, 3), ids(1, 2, 3), false, 1, false, true},
		{"assignment order, not isr order", ids(3, 1, 2), ids(1, 2, 3), ids(1, 2, 3), false, 3, false, true},
		{"first dead", ids(1, 2, 3), ids(1, 2, 3), ids(2, 3), false, 2, false, true},
		{"live but out of sync skipped", ids(1, 2, 3), ids(1, 3), ids(2, 3), false, 3, false, true},
		{"no live isr", ids(1, 2, 3), ids(1), ids(2, 3), false, metadata.NoLeader, false, false},
		{"unclean", ids(1, 2, 3), ids(1), ids(3, 2), true, 2, true, true},
		{"unclean prefers clean", ids(1, 2, 3), ids(3), ids(2, 3), true, 3, false, true},
		{"nothing live", ids(1, 2), ids(1, 2), nil, true, metadata.NoLeader, false, false},
		{"isr member not a replica ignored", ids(1, 2), ids(1, 9), ids(9), false, metadata.NoLeader, false, false},
	} {
		got, unclean, ok := chooseLeader(tc.replicas, tc.isr, liveSet(tc.live...), nil, tc.unclean)
		if got != tc.want || unclean != tc.wantUnclean || ok != tc.ok {
			t.Errorf("%s: got %d unclean=%v ok=%v, want %d %v %v", tc.name, got, unclean, ok, tc.want, tc.wantUnclean, tc.ok)
		}
	}
}

func TestElectLeader(t *testing.T) {
	base := metadata.Partition{Replicas: []metadata.NodeID{1, 2, 3}, ISR: []metadata.NodeID{1, 2, 3}, Leader: 1, LeaderEpoch: 4, PartitionEpoch: 7}
	for _, tc := range []struct {
		name    string
		p       metadata.Partition
		live    []metadata.NodeID
		unclean bool
		want    string
		changed bool
	}{
		{"all live", base, []metadata.NodeID{1, 2, 3}, false, "replicas=[1 2 3] isr=[1 2 3] leader=1 le=4 pe=7", false},
		{"follower dies", base, []metadata.NodeID{1, 3}, false, "replicas=[1 2 3] isr=[1 3] leader=1 le=4 pe=8", true},
		{"leader dies", base, []metadata.NodeID{2, 3}, false, "replicas=[1 2 3] isr=[2 3] leader=2 le=5 pe=8", true},
		{"all die keeps last isr", base, nil, false, "replicas=[1 2 3] isr=[3] leader=-1 le=5 pe=8", true},
		{"unclean", metadata.Partition{Replicas: []metadata.NodeID{1, 2}, ISR: []metadata.NodeID{1}, Leader: 1}, []metadata.NodeID{2}, true,
			"replicas=[1 2] isr=[2] leader=2 le=1 pe=1", true},
		{"offline comes back", metadata.Partition{Replicas: []metadata.NodeID{1, 2}, ISR: []metadata.NodeID{2}, Leader: metadata.NoLeader, LeaderEpoch: 3}, []metadata.NodeID{2}, false,
			"replicas=[1 2] isr=[2] leader=2 le=4 pe=1", true},
		{"offline stays offline", metadata.Partition{Replicas: []metadata.NodeID{1, 2}, ISR: []metadata.NodeID{2}, Leader: metadata.NoLeader, LeaderEpoch: 3}, []metadata.NodeID{1}, false,
			"replicas=[1 2] isr=[2] leader=-1 le=3 pe=0", false},
	} {
		got, changed := electLeader(tc.p, liveSet(tc.live...), nil, tc.unclean)
		if describe(got) != tc.want || changed != tc.changed {
			t.Errorf("%s: got %s changed=%v, want %s %v", tc.name, describe(got), changed, tc.want, tc.changed)
		}
	}
}
