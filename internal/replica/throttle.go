package replica

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/quota"
)

// Replication throttles (KIP-73). A topic lists, in leader.replication.throttled
// .replicas and follower.replication.throttled.replicas, the PARTITION:BROKER replicas
// whose catch-up traffic is throttled ("*": all): the reassignment tool lists the
// current replicas on the leader side and the moving ones on the follower side. A leader
// whose own replica is listed sends to a follower outside the ISR at most
// leader.replication.throttled.rate bytes/s (over every such partition of the node); a
// follower whose replica is listed fetches, while outside the ISR, at most
// follower.replication.throttled.rate. Replicas in the ISR are never throttled, so
// ordinary replication and acks=all keep their speed during a move.

// listsReplica reports whether a throttled-replicas value names partition on node.
// The value was validated by the config layer ("" , "*" or PARTITION:BROKER,...).
func listsReplica(list string, partition int32, node metadata.NodeID) bool {
	list = strings.TrimSpace(list)
	if list == "*" {
		return true
	}
	for item := range strings.SplitSeq(list, ",") {
		p, b, ok := strings.Cut(strings.TrimSpace(item), ":")
		if !ok {
			continue
		}
		pn, err1 := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
		bn, err2 := strconv.ParseInt(strings.TrimSpace(b), 10, 32)
		if err1 == nil && err2 == nil && int32(pn) == partition && metadata.NodeID(bn) == node {
			return true
		}
	}
	return false
}

// setThrottled records whether this node's replica of p is listed on either side.
func (p *Partition) setThrottled(s TopicSettings) {
	p.leaderThrottled.Store(listsReplica(s.LeaderThrottledReplicas, p.tp.Partition, p.node))
	p.followerThrottled.Store(listsReplica(s.FollowerThrottledReplicas, p.tp.Partition, p.node))
}

// LeaderThrottledFor reports whether this node, as leader, throttles what it sends to
// follower for this partition: its replica is listed on the leader side and the
// follower is not in the ISR.
func (p *Partition) LeaderThrottledFor(follower metadata.NodeID) bool {
	if !p.leaderThrottled.Load() {
		return false
	}
	p.leaderIsrLock.RLock()
	defer p.leaderIsrLock.RUnlock()
	return !slices.Contains(p.rs.isr, follower)
}

// followerThrottledNow reports whether this node, as follower, throttles its fetches of
// this partition: its replica is listed on the follower side and it is not in the ISR.
func (p *Partition) followerThrottledNow() bool {
	if !p.followerThrottled.Load() {
		return false
	}
	p.leaderIsrLock.RLock()
	defer p.leaderIsrLock.RUnlock()
	return !slices.Contains(p.rs.isr, p.node)
}

// LeaderThrottle is the leader-side replication quota of this node: the fetch path asks
// it before reading a partition for which LeaderThrottledFor holds, and records what it
// sent.
func (m *Manager) LeaderThrottle() *quota.Replication { return m.leaderQuota }

// ThrottleStats are the replication throttles' bytes moved and partitions left out.
type ThrottleStats struct {
	LeaderBytes, FollowerBytes     float64
	LeaderSkipped, FollowerSkipped int64
}

// ThrottleStats returns the replication throttles' counters.
func (m *Manager) ThrottleStats() ThrottleStats {
	var s ThrottleStats
	s.LeaderBytes, s.LeaderSkipped = m.leaderQuota.Totals()
	s.FollowerBytes, s.FollowerSkipped = m.followerQuota.Totals()
	return s
}

// applyThrottleRates sets the quotas' bounds from the image (dynamic broker configs).
func (m *Manager) applyThrottleRates(im *metadata.Image) {
	if m.opts.ThrottleRates == nil {
		return
	}
	leader, follower := m.opts.ThrottleRates(im)
	m.leaderQuota.SetRate(leader)
	m.followerQuota.SetRate(follower)
}

// throttleWindowDefault is Kafka's replication.quota.window.size.seconds.
const throttleWindowDefault = time.Second

// ReassignmentBytesRemaining estimates, on the leader, the bytes the replicas a
// reassignment is adding still have to copy before they are in the ISR: for each, the
// log's bytes past its last fetch offset (the log's size scaled by the share of its
// offsets it lacks, since offsets carry no byte positions here). moving is whether this
// node leads a partition with replicas being added.
func (p *Partition) ReassignmentBytesRemaining() (bytes int64, moving bool) {
	p.leaderIsrLock.RLock()
	defer p.leaderIsrLock.RUnlock()
	if !p.rs.isLeader() || len(p.rs.adding) == 0 {
		return 0, false
	}
	start, end, size := p.log.LogStartOffset(), p.log.LogEndOffset(), p.log.Size()
	p.stateMu.Lock()
	defer p.stateMu.Unlock()
	for _, r := range p.rs.adding {
		if slices.Contains(p.rs.isr, r) || end <= start {
			continue
		}
		have := start
		if f := p.rs.followers[r]; f != nil {
			have = min(max(f.logEndOffset, start), end)
		}
		bytes += int64(float64(size) * float64(end-have) / float64(end-start))
	}
	return bytes, true
}
