package replica

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/runnel-io/runnel/internal/liveness"
	"github.com/runnel-io/runnel/internal/metadata"
)

// Leadership is this node's view of who leads each partition: the metadata image
// applied to its replicas (SetApplied, in image order) and, for a leader it would name
// to a client or serve for, whether that node's process answers (the probe).
//
// A Kafka answer that names a leader whose process is gone sends the client there
// until its next metadata refresh (franz-go: 5 s), and this node's image may lag the
// controller's fencing of a killed node by a few milliseconds. So before the protocol
// layer answers with a leader, it asks here, and the view waits, bounded, for the
// image that moved the leadership on. Every such wait has the same rule: probe the
// leader the answer depends on; when it is not there (gone, or for a coordinator also
// silent), wait at most broker.session.timeout.ms (by then the controller has fenced
// a node that stays away, or cannot) and at most the request's context for an image
// in which the answer no longer names it. The four callers differ only in which
// leader they probe and what "moved on" means.
type Leadership struct {
	o LeadershipOptions

	mu      sync.Mutex // guards applied
	cond    *sync.Cond // broadcast on each SetApplied, and when a waiter's ctx ends
	applied *metadata.Image
}

// LeadershipOptions configure a Leadership.
type LeadershipOptions struct {
	// Self is this node: it never waits on itself.
	Self metadata.NodeID
	// Probe tells whether node b's process answers (controlplane.ProcessState); nil
	// never waits on a probe.
	Probe func(ctx context.Context, b metadata.Broker) liveness.Verdict
	// SessionTimeout is broker.session.timeout.ms, the longest a probed wait lasts.
	SessionTimeout time.Duration
	Logger         *slog.Logger
}

// NewLeadership returns a view whose image is metadata.Empty until SetApplied.
func NewLeadership(o LeadershipOptions) *Leadership {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	l := &Leadership{o: o, applied: metadata.Empty()}
	l.cond = sync.NewCond(&l.mu)
	return l
}

// SetApplied records im as applied to the local replicas: call it after
// Manager.ApplyImage, in image order. Image answers it from then on.
func (l *Leadership) SetApplied(im *metadata.Image) {
	l.mu.Lock()
	l.applied = im
	l.cond.Broadcast()
	l.mu.Unlock()
}

// Image is the image applied to the local replicas (not the controller's newest), so
// that an answer never names a partition this node cannot serve yet.
func (l *Leadership) Image() *metadata.Image {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.applied
}

// WaitFor waits until the applied image satisfies ok, or ctx ends (its error).
func (l *Leadership) WaitFor(ctx context.Context, ok func(*metadata.Image) bool) error {
	stop := context.AfterFunc(ctx, func() {
		l.mu.Lock()
		l.cond.Broadcast()
		l.mu.Unlock()
	})
	defer stop()
	l.mu.Lock()
	defer l.mu.Unlock()
	for !ok(l.applied) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		l.cond.Wait()
	}
	return nil
}

// await is the rule's one wait: until the applied image satisfies movedOn (the
// answer no longer names the absent leader), at most limit and ctx. It reports
// whether the image moved on.
func (l *Leadership) await(ctx context.Context, limit time.Duration, movedOn func(*metadata.Image) bool) bool {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	return l.WaitFor(ctx, movedOn) == nil
}

// absent probes b (a leader this node would name or serve for) and reports whether
// it is not there: gone, or also silent when silentToo. Without a probe nothing is.
func (l *Leadership) absent(ctx context.Context, b metadata.Broker, silentToo bool) (liveness.Verdict, bool) {
	if l.o.Probe == nil {
		return liveness.Answered, false
	}
	v := l.o.Probe(ctx, b)
	return v, v == liveness.Gone || silentToo && v == liveness.Silent
}

// LiveLeaders returns im, unless one of leaders (the ones a Metadata answer names)
// is a registered, unfenced node other than this one whose process is gone: it then
// waits until the image shows each such node fenced or registered anew, and returns
// the image it has then. A Metadata answer that named the dead leader would send the
// client to it until its next refresh.
func (l *Leadership) LiveLeaders(ctx context.Context, im *metadata.Image, leaders []metadata.NodeID) *metadata.Image {
	var gone []metadata.Broker
	for _, id := range leaders {
		b, ok := im.Brokers[id]
		if !ok || b.Fenced || id == l.o.Self {
			continue
		}
		if _, away := l.absent(ctx, b, false); away {
			gone = append(gone, b)
		}
	}
	if len(gone) == 0 {
		return im
	}
	start := time.Now()
	if !l.await(ctx, l.o.SessionTimeout, func(cur *metadata.Image) bool {
		for _, b := range gone {
			if now, ok := cur.Brokers[b.ID]; ok && !now.Fenced && now.Epoch == b.Epoch {
				return false
			}
		}
		return true
	}) {
		l.o.Logger.Warn("a leader's node refuses connections but the controller has not fenced it; answering metadata that names it",
			"node", gone[0].ID, "addr", gone[0].Addr(), "waited", time.Since(start))
	}
	return l.Image()
}

// LeaderMove reports whether tp's leader moved on: when the image names as its leader
// another node whose process is gone or fenced, or no leader at all, it waits for the
// image to name a new one. A produce that reaches the new leader a moment before that
// node applied its own election (the node that answered the client's metadata applied
// it first) is then served instead of answered NOT_LEADER_OR_FOLLOWER, which would
// leave the client waiting for its next metadata refresh.
func (l *Leadership) LeaderMove(ctx context.Context, tp metadata.TopicPartition) bool {
	if l.o.Probe == nil {
		return false
	}
	im := l.Image()
	p, ok := im.Partition(tp)
	if !ok || p.Leader == l.o.Self {
		return false
	}
	if p.Leader != metadata.NoLeader {
		b, ok := im.Brokers[p.Leader]
		if !ok {
			return false
		}
		if !b.Fenced {
			if _, away := l.absent(ctx, b, false); !away {
				return false
			}
		}
	}
	return l.await(ctx, l.o.SessionTimeout, func(cur *metadata.Image) bool {
		now, ok := cur.Partition(tp)
		return !ok || now.Leader != p.Leader && now.Leader != metadata.NoLeader
	})
}

// PartitionChange waits at most d for the image to give tp another leader or leader
// epoch than it does now, and reports whether it did (no probe: the caller knows the
// partition is moving, from a leader hint).
func (l *Leadership) PartitionChange(ctx context.Context, tp metadata.TopicPartition, d time.Duration) bool {
	p, ok := l.Image().Partition(tp)
	if !ok {
		return false
	}
	return l.await(ctx, d, func(cur *metadata.Image) bool {
		now, ok := cur.Partition(tp)
		return !ok || now.Leader != p.Leader || now.LeaderEpoch != p.LeaderEpoch
	})
}

// AnsweringLeader returns im, unless im names as tp's leader another registered,
// unfenced node that does not answer a probe (gone, or silent: paused, cut off): it
// then waits for the image to name another leader and returns the image it has then.
// FindCoordinator answers from it: a client told a coordinator that never answers
// stays with it (franz-go forgets a coordinator on NOT_COORDINATOR and the like, never
// on a timeout).
func (l *Leadership) AnsweringLeader(ctx context.Context, im *metadata.Image, tp metadata.TopicPartition) *metadata.Image {
	p, ok := im.Partition(tp)
	if !ok || p.Leader == l.o.Self || p.Leader == metadata.NoLeader {
		return im
	}
	b, ok := im.Brokers[p.Leader]
	if !ok || b.Fenced {
		return im
	}
	verdict, away := l.absent(ctx, b, true)
	if !away {
		return im
	}
	start := time.Now()
	if !l.await(ctx, l.o.SessionTimeout, func(cur *metadata.Image) bool {
		now, ok := cur.Partition(tp)
		return !ok || now.Leader != p.Leader
	}) {
		l.o.Logger.Warn("the coordinator's node does not answer but is still its partition's leader; naming it",
			"topic", tp.Topic, "partition", tp.Partition, "node", b.ID, "addr", b.Addr(),
			"probe", verdict.String(), "waited", time.Since(start))
	}
	return l.Image()
}
