package controller

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/runnel-io/runnel/internal/metadata"
)

func brokers(ids ...metadata.NodeID) []metadata.Broker {
	out := make([]metadata.Broker, len(ids))
	for i, id := range ids {
		out[i] = metadata.Broker{ID: id}
	}
	return out
}

// racked builds brokers from "id:rack" pairs.
func racked(pairs map[metadata.NodeID]string) []metadata.Broker {
	var out []metadata.Broker
	for id, r := range pairs {
		out = append(out, metadata.Broker{ID: id, Rack: r})
	}
	return out
}

func TestPlaceReplicasTable(t *testing.T) {
	for _, tc := range []struct {
		name         string
		brokers      []metadata.Broker
		first, count int32
		rf           int16
		start, shift int
		want         string
	}{
		{"one broker", brokers(1), 0, 3, 1, 0, 0, "[[1] [1] [1]]"},
		{"three brokers rf2", brokers(3, 1, 2), 0, 6, 2, 0, 0, "[[1 2] [2 3] [3 1] [1 3] [2 1] [3 2]]"},
		{"shifted start", brokers(1, 2, 3), 0, 3, 3, 1, 1, "[[2 1 3] [3 2 1] [1 3 2]]"},
		{"continues for new partitions", brokers(1, 2, 3), 3, 3, 2, 0, 0, "[[1 3] [2 1] [3 2]]"},
		{"racks alternate", racked(map[metadata.NodeID]string{1: "a", 2: "a", 3: "b", 4: "b", 5: "c", 6: "c"}), 0, 2, 3, 0, 0, "[[1 3 5] [3 5 2]]"},
		{"uneven racks", racked(map[metadata.NodeID]string{1: "a", 2: "a", 3: "a", 4: "b"}), 0, 4, 2, 0, 0, "[[1 4] [4 2] [2 4] [3 4]]"},
		{"partial racks ignored", []metadata.Broker{{ID: 1, Rack: "a"}, {ID: 2}, {ID: 3, Rack: "a"}}, 0, 2, 2, 0, 0, "[[1 2] [2 3]]"},
	} {
		got, err := placeReplicas(tc.brokers, tc.first, tc.count, tc.rf, tc.start, tc.shift)
		if err != nil || fmt.Sprint(got) != tc.want {
			t.Errorf("%s: got %v, %v; want %s", tc.name, got, err, tc.want)
		}
	}
}

func TestPlaceReplicasErrors(t *testing.T) {
	for _, tc := range []struct {
		brokers []metadata.Broker
		rf      int16
	}{{nil, 1}, {brokers(1, 2), 3}, {brokers(1), 0}, {brokers(1), -1}} {
		if _, err := placeReplicas(tc.brokers, 0, 1, tc.rf, 0, 0); !errors.Is(err, ErrInvalidReplicationFactor) {
			t.Errorf("%d brokers rf %d: %v, want ErrInvalidReplicationFactor", len(tc.brokers), tc.rf, err)
		}
	}
}

// TestPlaceReplicasProperties checks random layouts: distinct replicas, leaders
// balanced, replicas balanced per run of n partitions, racks spread.
func TestPlaceReplicasProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := 0; iter < 500; iter++ {
		n := 1 + rng.IntN(8)
		nracks := rng.IntN(4) // 0 = no racks
		var bs []metadata.Broker
		for i := 0; i < n; i++ {
			b := metadata.Broker{ID: metadata.NodeID(10 + i*3)}
			if nracks > 0 {
				b.Rack = fmt.Sprint("r", rng.IntN(nracks))
			}
			bs = append(bs, b)
		}
		rf := int16(1 + rng.IntN(n))
		k := 1 + rng.IntN(4)
		got, err := placeReplicas(bs, 0, int32(k*n), rf, rng.IntN(n), rng.IntN(n))
		if err != nil {
			t.Fatal(err)
		}
		checkLayout(t, bs, got, int(rf), k)
	}
}

func checkLayout(t *testing.T, bs []metadata.Broker, got [][]metadata.NodeID, rf, k int) {
	t.Helper()
	n := len(bs)
	rack := map[metadata.NodeID]string{}
	racks := map[string]bool{}
	for _, b := range bs {
		rack[b.ID] = b.Rack
		racks[b.Rack] = true
	}
	rackAware := !racks[""]
	leaders := map[metadata.NodeID]int{}
	replicas := map[metadata.NodeID]int{}
	for p, r := range got {
		used := map[string]bool{}
		seen := map[metadata.NodeID]bool{}
		for _, id := range r {
			if seen[id] {
				t.Fatalf("partition %d %v repeats %d", p, r, id)
			}
			seen[id] = true
			used[rack[id]] = true
			replicas[id]++
		}
		leaders[r[0]]++
		if len(r) != rf {
			t.Fatalf("partition %d has %d replicas, want %d", p, len(r), rf)
		}
		if rackAware && len(used) != min(rf, len(racks)) {
			t.Fatalf("partition %d %v spans %d racks, want %d (%v)", p, r, len(used), min(rf, len(racks)), bs)
		}
	}
	for _, b := range bs {
		if leaders[b.ID] != k {
			t.Fatalf("broker %d leads %d of %d partitions, want %d", b.ID, leaders[b.ID], k*n, k)
		}
		if !rackAware && replicas[b.ID] != k*rf {
			t.Fatalf("broker %d holds %d replicas, want %d", b.ID, replicas[b.ID], k*rf)
		}
	}
}
