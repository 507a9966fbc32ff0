package kafka

// KIP-951: a produce (v10+) or fetch (v16+) partition answered NOT_LEADER_OR_FOLLOWER
// carries the partition's current leader and leader epoch as this node knows them
// (CurrentLeader), and the response lists that leader's endpoint (NodeEndpoints). A
// client that supports it (franz-go, librdkafka 2.4+, the Java client 3.7+) moves the
// partition to the new leader at once when the epoch is newer than the one it knows,
// instead of waiting for a metadata refresh: franz-go's is at most every
// MetadataMinAge (5 s), so every leader move (a preferred leader election, a
// reassignment, a node's controlled shutdown, the balancer after a node joined) held
// a default franz-go producer for up to 5 s. Fetch also hints on FENCED_LEADER_EPOCH,
// as Kafka does.
//
// Only a leader that is another registered, unfenced node with an endpoint on the
// listener the request came in on is named: this node itself would be no news (it
// just refused), and a fenced one is known to be gone or cut off.
//
// The leader is read from this node's replica of the partition, which is what refused:
// the node applies a new image to its replicas a moment before it serves that image
// (replica.Leadership.Image), so the image can still name this node. Reading the image there gave
// a refusal naming nobody, and franz-go waited for its next metadata refresh
// (MetadataMinAge, 5 s), which a preferred leader election often hit. A replica
// that still leads refused because this node no longer answers as a leader (a
// controlled shutdown, no lease from the controller) before the controller's moves
// reached it: the hints of one response then wait, together at most hintWait, for the
// image to move the partition.

import (
	"context"
	"time"

	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// leaderHint is the current leader of one partition and its endpoint, to name in a
// response.
type leaderHint struct {
	leader, epoch int32
	host          string
	port          int32
	rack          *string
}

// leaderHintFor returns the hint naming leader at epoch, with its endpoint from im, or
// false when there is none to give.
func (s *Server) leaderHintFor(ctx context.Context, im *metadata.Image, leader metadata.NodeID, epoch int32) (leaderHint, bool) {
	if leader == metadata.NoLeader || leader == s.cfg.NodeID {
		return leaderHint{}, false
	}
	b, ok := im.Brokers[leader]
	if !ok || b.Fenced {
		return leaderHint{}, false
	}
	host, port, ok := s.listenerEndpoint(ctx, b)
	if !ok {
		return leaderHint{}, false
	}
	h := leaderHint{leader: int32(leader), epoch: epoch, host: host, port: port}
	if b.Rack != "" {
		rack := b.Rack
		h.rack = &rack
	}
	return h, true
}

// currentLeader is tp's leader and leader epoch as this node's replica of it knows
// them, or as im does when this node holds no replica.
func (s *Server) currentLeader(im *metadata.Image, tp metadata.TopicPartition) (metadata.NodeID, int32) {
	if rep, _ := s.replicas.Partition(tp); rep != nil {
		st := rep.State()
		return st.Leader, st.LeaderEpoch
	}
	if p, ok := im.Partition(tp); ok {
		return p.Leader, p.LeaderEpoch
	}
	return metadata.NoLeader, -1
}

// leaderHints collects the hints of one response: each leader's endpoint is listed
// once.
type leaderHints struct {
	s     *Server
	ctx   context.Context
	named map[int32]bool
	// waitUntil ends the response's wait for the image to move a partition this node's
	// replica still leads (zero: none has waited yet).
	waitUntil time.Time
}

// hintWait bounds the wait of one response's hints for the controller's moves (see the
// file comment).
const hintWait = 100 * time.Millisecond

// hint returns the hint for tp, and whether its leader is named for the first time in
// this response (its endpoint is then to be listed).
func (hs *leaderHints) hint(topic string, partition int32) (h leaderHint, first, ok bool) {
	s, tp := hs.s, metadata.TopicPartition{Topic: topic, Partition: partition}
	im := s.leadership.Image()
	leader, epoch := s.currentLeader(im, tp)
	if leader == s.cfg.NodeID {
		if hs.waitUntil.IsZero() {
			hs.waitUntil = time.Now().Add(hintWait)
		}
		if left := time.Until(hs.waitUntil); left > 0 && s.leadership.PartitionChange(hs.ctx, tp, left) {
			im = s.leadership.Image()
			leader, epoch = s.currentLeader(im, tp)
		}
	}
	if h, ok = s.leaderHintFor(hs.ctx, im, leader, epoch); !ok {
		return h, false, false
	}
	if hs.named == nil {
		hs.named = map[int32]bool{}
	}
	first = !hs.named[h.leader]
	hs.named[h.leader] = true
	return h, first, true
}

// addProduceLeaderHints fills CurrentLeader and the response's Brokers for every
// partition of resp answered NOT_LEADER_OR_FOLLOWER.
func (s *Server) addProduceLeaderHints(ctx context.Context, resp *kmsg.ProduceResponse) {
	if resp.Version < 10 {
		return
	}
	hs := leaderHints{s: s, ctx: ctx}
	for ti := range resp.Topics {
		rt := &resp.Topics[ti]
		for pi := range rt.Partitions {
			rp := &rt.Partitions[pi]
			if rp.ErrorCode != kerr.NotLeaderForPartition.Code {
				continue
			}
			if h, first, ok := hs.hint(rt.Topic, rp.Partition); ok {
				rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = h.leader, h.epoch
				if first {
					b := kmsg.NewProduceResponseBroker()
					b.NodeID, b.Host, b.Port, b.Rack = h.leader, h.host, h.port, h.rack
					resp.Brokers = append(resp.Brokers, b)
				}
			}
		}
	}
}

// addFetchLeaderHints fills CurrentLeader and the response's Brokers for every
// partition of resp answered NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH.
func (s *Server) addFetchLeaderHints(ctx context.Context, resp *kmsg.FetchResponse) {
	if resp.Version < 16 {
		return
	}
	hs := leaderHints{s: s, ctx: ctx}
	for ti := range resp.Topics {
		rt := &resp.Topics[ti]
		for pi := range rt.Partitions {
			rp := &rt.Partitions[pi]
			if rp.ErrorCode != kerr.NotLeaderForPartition.Code && rp.ErrorCode != kerr.FencedLeaderEpoch.Code {
				continue
			}
			if h, first, ok := hs.hint(rt.Topic, rp.Partition); ok {
				rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = h.leader, h.epoch
				if first {
					b := kmsg.NewFetchResponseBroker()
					b.NodeID, b.Host, b.Port, b.Rack = h.leader, h.host, h.port, h.rack
					resp.Brokers = append(resp.Brokers, b)
				}
			}
		}
	}
}
