package replica

import (
	"sync"

	"github.com/runnel-io/runnel/internal/metadata"
)

// leaderView tells the fetch path which partitions each follower should be fetching
// from this node, and signals changes. A follower's long-poll fetch names the
// partitions its fetcher knew when it sent it; a partition it starts following later
// (a new topic, a new leader) joins only with its next fetch. Without help that waits
// for the long poll to end (replica.fetch.wait.max.ms), and an acks=all producer of
// the new partition stalls as long, since the follower is in the ISR from the start.
// So: a follower fetch wakes when this node takes on new leaderships, and it does not
// park long while it names fewer partitions than the follower should fetch here.
type leaderView struct {
	mu sync.Mutex // guards expected and changed
	// expected counts, per follower node, the partitions this node leads where that
	// node is a replica.
	expected map[metadata.NodeID]int
	// changed is closed (and replaced) when this node starts leading partitions.
	changed chan struct{}
}

func newLeaderView() *leaderView {
	return &leaderView{expected: map[metadata.NodeID]int{}, changed: make(chan struct{})}
}

// update recounts the partitions led here per follower; newLeaders wakes follower
// fetches parked with the previous set.
func (v *leaderView) update(self metadata.NodeID, parts []*Partition, newLeaders bool) {
	expected := map[metadata.NodeID]int{}
	for _, p := range parts {
		p.leaderIsrLock.RLock()
		if p.rs.leader == self {
			for _, r := range p.rs.replicas {
				if r != self {
					expected[r]++
				}
			}
		}
		p.leaderIsrLock.RUnlock()
	}
	v.mu.Lock()
	v.expected = expected
	if newLeaders {
		close(v.changed)
		v.changed = make(chan struct{})
	}
	v.mu.Unlock()
}

// FollowerExpects is the number of partitions led by this node that follower should
// be fetching here.
func (m *Manager) FollowerExpects(follower metadata.NodeID) int {
	m.view.mu.Lock()
	defer m.view.mu.Unlock()
	return m.view.expected[follower]
}

// LeadershipChanged is closed when this node next starts leading partitions.
func (m *Manager) LeadershipChanged() <-chan struct{} {
	m.view.mu.Lock()
	defer m.view.mu.Unlock()
	return m.view.changed
}
