package controlplane

import (
	"context"
	"net"
	"strconv"
	"time"

	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/reach"
)

// AwaitLiveLeaders implements kafka.Admin: it probes each leader (ProcessGone: an
// answer to ApiVersions, or a refused connection) and, if one refuses
// connections while im still shows it unfenced, waits until this node's image shows
// it fenced or registered anew, at most the session timeout (by then the controller
// has fenced it, or cannot) and at most ctx. The active controller probes a node as
// soon as its Raft heartbeats to it fail and fences it on a refusal, so the wait is
// that long: a few tens of milliseconds after a kill.
func (a *Admin) AwaitLiveLeaders(ctx context.Context, im *metadata.Image, leaders []metadata.NodeID) *metadata.Image {
	if a.probe == nil {
		return im
	}
	var gone []metadata.Broker
	for _, id := range leaders {
		b, ok := im.Brokers[id]
		if !ok || b.Fenced || id == a.ctrl.NodeID() {
			continue
		}
		if ProcessGone(ctx, a.probe, b) {
			gone = append(gone, b)
		}
	}
	if len(gone) == 0 {
		return im
	}
	ctx, cancel := context.WithTimeout(ctx, a.sessionTimeout)
	defer cancel()
	start := time.Now()
	err := a.waitFor(ctx, func(cur *metadata.Image) bool {
		for _, b := range gone {
			if now, ok := cur.Brokers[b.ID]; ok && !now.Fenced && now.Epoch == b.Epoch {
				return false
			}
		}
		return true
	})
	if err != nil {
		a.logger.Warn("a leader's node refuses connections but the controller has not fenced it; answering metadata that names it",
			"node", gone[0].ID, "addr", BrokerAddr(gone[0]), "waited", time.Since(start))
	}
	return a.Image()
}

// BrokerAddr is b's advertised Kafka address.
func BrokerAddr(b metadata.Broker) string {
	return net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
}

// AwaitLeaderMove implements kafka.Admin: when this node's image names, as tp's
// leader, another node whose process is gone (or no leader at all), it waits,
// bounded, for the image to name a new one, and reports whether it did. A produce that
// reaches the new leader a moment before that node has applied its own election
// (the node that answered the client's metadata applied it first) is then served
// instead of answered NOT_LEADER_OR_FOLLOWER, which would leave franz-go waiting for
// its next metadata refresh (MetadataMinAge, 5 s).
func (a *Admin) AwaitLeaderMove(ctx context.Context, tp metadata.TopicPartition) bool {
	if a.probe == nil {
		return false
	}
	im := a.Image()
	p, ok := im.Partition(tp)
	if !ok || p.Leader == a.ctrl.NodeID() {
		return false
	}
	if p.Leader != metadata.NoLeader {
		b, ok := im.Brokers[p.Leader]
		if !ok || !b.Fenced && !ProcessGone(ctx, a.probe, b) {
			return false
		}
	}
	ctx, cancel := context.WithTimeout(ctx, a.sessionTimeout)
	defer cancel()
	err := a.waitFor(ctx, func(cur *metadata.Image) bool {
		now, ok := cur.Partition(tp)
		return !ok || now.Leader != p.Leader && now.Leader != metadata.NoLeader
	})
	return err == nil
}

// AwaitPartitionChange implements kafka.Admin: it waits at most d for this node's
// image to give tp another leader or leader epoch than it does now, and reports
// whether it did.
func (a *Admin) AwaitPartitionChange(ctx context.Context, tp metadata.TopicPartition, d time.Duration) bool {
	p, ok := a.Image().Partition(tp)
	if !ok {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return a.waitFor(ctx, func(cur *metadata.Image) bool {
		now, ok := cur.Partition(tp)
		return !ok || now.Leader != p.Leader || now.LeaderEpoch != p.LeaderEpoch
	}) == nil
}

// AwaitAnsweringLeader implements kafka.Admin: when im names, as tp's leader, another
// node that does not answer a probe (ProcessState: gone, or silent for
// processAnswerTimeout, as a paused or cut-off node is), it waits, at most the session
// timeout (by then the controller has fenced a node that stays silent) and at most
// ctx, for this node's image to name another leader, and returns the image it has
// then. It is for FindCoordinator: a client told a coordinator that never answers
// stays with it (franz-go forgets a coordinator on NOT_COORDINATOR and the like, never
// on a timeout), and this node's image may lag the controller's fencing of that node
// by a few milliseconds.
func (a *Admin) AwaitAnsweringLeader(ctx context.Context, im *metadata.Image, tp metadata.TopicPartition) *metadata.Image {
	if a.probe == nil {
		return im
	}
	p, ok := im.Partition(tp)
	if !ok || p.Leader == a.ctrl.NodeID() || p.Leader == metadata.NoLeader {
		return im
	}
	b, ok := im.Brokers[p.Leader]
	if !ok || b.Fenced {
		return im
	}
	verdict := ProcessState(ctx, a.probe, b)
	if verdict == reach.Answered {
		return im
	}
	ctx, cancel := context.WithTimeout(ctx, a.sessionTimeout)
	defer cancel()
	start := time.Now()
	err := a.waitFor(ctx, func(cur *metadata.Image) bool {
		now, ok := cur.Partition(tp)
		return !ok || now.Leader != p.Leader
	})
	if err != nil {
		a.logger.Warn("the coordinator's node does not answer but is still its partition's leader; naming it",
			"topic", tp.Topic, "partition", tp.Partition, "node", b.ID, "addr", BrokerAddr(b),
			"probe", verdict.String(), "waited", time.Since(start))
	}
	return a.Image()
}
