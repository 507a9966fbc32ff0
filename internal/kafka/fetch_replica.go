package kafka

// Fetch from the closest replica (KIP-392), the protocol side: which replica a
// consumer's fetch reads, and the preferred read replica a leader names. The rule itself
// (the rack-aware selector, the candidates) is internal/replica's selector.go.
//
// As Kafka:
//   - A consumer's Fetch v11+ may be served by a follower of the partition, whatever
//     replica.selector.class is here (Kafka's fetchOnlyLeader is false for it): a
//     client goes there only when a leader named that follower. The follower serves up
//     to its own high watermark (read_committed: its last stable offset), which it
//     learns from the leader's fetch answers; an offset between its high watermark and
//     its log end answers no records, one past its log end OFFSET_OUT_OF_RANGE (the
//     client then goes back to the leader). Below v11 a follower answers
//     NOT_LEADER_OR_FOLLOWER.
//   - With replica.selector.class the rack-aware selector, a leader answers a
//     consumer's v11+ fetch that names a RackID with PreferredReadReplica when a live
//     in-sync follower in that rack holds the offset and the leader is not in that rack
//     itself, and then sends no records for the partition (the client fetches again
//     from that replica). Otherwise -1, and the leader serves the fetch.
//   - Where Runnel differs: Kafka completes at once a follower's consumer fetch whose
//     offset is above the follower's high watermark (DelayedFetch "case F"), so the
//     client asks again and again until the follower learns the leader's high
//     watermark; Runnel parks it like any long poll, and the follower's high watermark
//     moving wakes it (replica: adoptLeaderHighWatermark).
//   - The client keeps its preferred replica until it fails or expires (the Java
//     client: metadata.max.age.ms; librdkafka: 5 minutes, or at once when the
//     connection fails; franz-go: RecheckPreferredReplicaInterval), then asks the
//     leader again, which chooses again from what it knows then.

import (
	"context"
	"time"

	"github.com/runnel-io/runnel/internal/config"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/replica"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// readReplicaSelection is what a consumer's fetch needs to have its preferred read
// replica chosen (Kafka's ClientMetadata): its rack, and the brokers' racks and
// reachability from the metadata image this fetch was resolved with.
type readReplicaSelection struct {
	rack    string
	brokers replica.BrokerView
	now     time.Time
}

// readReplicaSelection returns the selection of a consumer's fetch, or nil when the
// fetch gets none: a replica's fetch, a version before 11, no RackID, or a
// replica.selector.class other than the rack-aware one.
func (s *Server) readReplicaSelection(ctx context.Context, req *kmsg.FetchRequest, im *metadata.Image, follower bool) *readReplicaSelection {
	if follower || req.Version < 11 || req.Rack == "" || s.cfg.Broker == nil ||
		s.cfg.Broker.ReplicaSelectorClass != config.RackAwareReplicaSelector {
		return nil
	}
	return &readReplicaSelection{rack: req.Rack, now: time.Now(), brokers: func(id metadata.NodeID) (string, bool) {
		// Kafka's replica endpoints: a fenced broker, or one without the listener the
		// consumer connected on, is never named.
		b, ok := im.Brokers[id]
		if !ok || b.Fenced {
			return "", false
		}
		_, _, reachable := s.listenerEndpoint(ctx, b)
		return b.Rack, reachable
	}}
}

// redirect answers fp, a partition led here, with its preferred read replica when it
// has one: the leader's offsets, PreferredReadReplica, no records. It reports whether
// it did; false leaves the partition to be read here.
func (sel *readReplicaSelection) redirect(fp *fetchPart, rp *kmsg.FetchResponseTopicPartition) bool {
	id := fp.part.PreferredReadReplica(sel.rack, fp.sp.fetchOffset, sel.now, sel.brokers)
	if id < 0 {
		return false
	}
	res, err := fp.part.OffsetSnapshot(fp.sp.currentLeaderEpoch)
	fillOffsets(rp, res, err)
	if err == nil {
		rp.PreferredReadReplica = int32(id)
	}
	return true
}

// readablePartition is the replica a consumer's fetch of tp reads: the one this node
// leads (leaderPartition, which also checks this node's lease), or with fromFollower
// (Fetch v11+) one it follows. A follower needs no lease: what it serves is below a high
// watermark its leader had reached, committed whatever happened since.
func (s *Server) readablePartition(tp metadata.TopicPartition, fromFollower bool) (*replica.Partition, error) {
	if !fromFollower {
		return s.leaderPartition(tp)
	}
	p, err := s.replicas.Partition(tp)
	if err == nil && p.IsLeader() && s.lease != nil && !s.lease() {
		return nil, replica.ErrNotLeader // as leaderPartition
	}
	return p, err
}
