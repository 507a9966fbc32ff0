package group

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/runnel-io/runnel/internal/recordbatch"
)

// group owns one group's state on one goroutine (manage). Requests reach it as closures
// on ctrl and run one at a time on that goroutine, as do the completions of its appends.
type group struct {
	id string
	c  *Coordinator
	sh *shard
	// ctrl is the bounded request queue; senders block when it is full.
	ctrl chan func(now time.Time)
	// done is closed when manage returns; a request queued but not run by then is
	// never run.
	done chan struct{}
	// listing is the group's latest id, protocol type and state, for ListGroups
	// without a round trip to every group. Written by manage only.
	listing atomic.Pointer[GroupListing]

	// Owned by manage:
	md *groupMetadata
	// queue holds writes waiting for the append in flight; at most one append per group
	// is in flight, so the group's records reach the log in the order it issued them.
	queue    []write
	inflight bool
	timer    *time.Timer
	timerAt  time.Time
}

// startGroup creates the owner of md in sh and starts its goroutine. sh.mu must be held.
func (c *Coordinator) startGroup(sh *shard, md *groupMetadata) *group {
	md.logger = c.logger.With("partition", sh.partition)
	g := &group{
		id: md.id, c: c, sh: sh, md: md,
		ctrl: make(chan func(time.Time), c.cfg.QueueSize),
		done: make(chan struct{}),
	}
	g.publish()
	if !c.goFunc(g.manage) {
		return nil
	}
	sh.groups[md.id] = g
	return g
}

// manage is the group's goroutine: it runs requests, deadlines and append completions
// against md, then performs the writes they queued. It exits when the shard is
// unloaded or the group has nothing left to keep.
func (g *group) manage() {
	defer close(g.done)
	g.timer = time.NewTimer(time.Hour)
	g.timer.Stop()
	defer g.timer.Stop()
	// A group is only removed after an event: a new group's first event is the request
	// that created it.
	for {
		g.armTimer()
		select {
		case fn := <-g.ctrl:
			fn(time.Now())
		case now := <-g.timer.C:
			g.timerAt = time.Time{}
			g.md.tick(now)
		case <-g.sh.ctx.Done():
			g.abort()
			return
		}
		g.flushWrites()
		g.publish()
		if g.maybeRemove() {
			return
		}
	}
}

func (g *group) armTimer() {
	next := g.md.nextDeadline()
	if next.Equal(g.timerAt) {
		return
	}
	g.timer.Stop()
	g.timerAt = next
	if !next.IsZero() {
		g.timer.Reset(max(time.Until(next), 0))
	}
}

func (g *group) publish() {
	l := &GroupListing{GroupID: g.id, ProtocolType: g.md.protocolType, State: g.md.phase.String(), Type: TypeClassic}
	if cg := g.md.consumer; cg != nil {
		l.Type = TypeConsumer
		if g.md.phase != Dead {
			l.State = cg.state()
		}
	}
	if old := g.listing.Load(); old == nil || *old != *l {
		g.listing.Store(l)
	}
}

// maybeRemove drops the group once it holds nothing worth keeping and no write is
// under way, tombstoning its metadata record first if the log has one.
func (g *group) maybeRemove() bool {
	if g.inflight || len(g.queue) > 0 || !g.md.canBeRemoved() {
		return false
	}
	if g.md.phase != Dead && g.md.tombstoneIfPersisted(time.Now()) {
		g.flushWrites()
		return false
	}
	g.sh.mu.Lock()
	if g.sh.groups[g.id] == g {
		delete(g.sh.groups, g.id)
	}
	g.sh.mu.Unlock()
	return true
}

// abort answers every waiting request of an unloaded group with ErrNotCoordinator.
func (g *group) abort() {
	for _, m := range g.md.members {
		if m.awaitingJoin != nil {
			m.awaitingJoin(joinError(m.id, ErrNotCoordinator))
		}
		if m.awaitingSync != nil {
			m.awaitingSync(SyncResult{Err: ErrNotCoordinator})
		}
	}
	for _, w := range append(g.queue, g.md.writes...) {
		if w.done != nil {
			w.done(ErrNotCoordinator)
		}
	}
}

// flushWrites moves the writes md issued to the queue and starts an append of
// everything queued unless one is in flight.
func (g *group) flushWrites() {
	g.queue = append(g.queue, g.md.writes...)
	g.md.writes = g.md.writes[:0]
	if g.inflight || len(g.queue) == 0 {
		return
	}
	batch, txn := encodeWrites(g.queue), hasProducer(g.queue)
	ws := g.queue
	g.queue = nil
	if len(batch) == 0 { // nothing to write: only callbacks, which may issue more
		g.completeWrites(ws, nil)
		g.flushWrites()
		return
	}
	g.inflight = true
	started := g.c.goFunc(func() {
		ctx, cancel := context.WithTimeout(g.sh.ctx, g.c.cfg.AppendTimeout)
		err := g.sh.appendWrites(ctx, batch, txn)
		cancel()
		if err != nil {
			g.c.logger.Warn("append to __consumer_offsets failed", "group", g.id, "partition", g.sh.partition, "err", err)
		}
		g.post(func(time.Time) { g.completeWrites(ws, err) })
	})
	if !started {
		g.completeWrites(ws, ErrNotCoordinator)
	}
}

func (g *group) completeWrites(ws []write, err error) {
	g.inflight = false
	for _, w := range ws {
		if w.done != nil {
			w.done(err)
		}
	}
}

// post queues fn on the group's goroutine unless the group is gone.
func (g *group) post(fn func(time.Time)) {
	select {
	case g.ctrl <- fn:
	case <-g.done:
	}
}

// encodeWrites encodes each write as one batch (so that each is atomic) and
// concatenates them for a single append.
func encodeWrites(ws []write) []byte {
	var out []byte
	b := recordbatch.NewBuilder(512)
	now := time.Now().UnixMilli()
	for _, w := range ws {
		b.Reset()
		for _, r := range w.records {
			b.Add(r.key, r.value, nil, now)
		}
		start := len(out)
		out = append(out, b.Build()...)
		if w.producer != nil && len(out) > start {
			stampProducer(recordbatch.Batch(out[start:]), w.producer)
		}
	}
	return out
}

func hasProducer(ws []write) bool {
	for _, w := range ws {
		if w.producer != nil {
			return true
		}
	}
	return false
}

// call runs op on the owner of groupID (created when create is set) and waits for its
// single reply. errNoGroup: the group does not exist and create is false.
func call[T any](ctx context.Context, c *Coordinator, groupID string, create bool, op func(md *groupMetadata, now time.Time, reply func(T))) (T, error) {
	var zero T
	for attempt := 0; attempt < 5; attempt++ {
		g, err := c.lookup(groupID, create)
		if err != nil {
			return zero, err
		}
		if g == nil {
			return zero, errNoGroup
		}
		replies := make(chan T, 1)
		fn := func(now time.Time) {
			op(g.md, now, func(v T) {
				select {
				case replies <- v:
				default: // replied already; a bug in the state machine, not a reason to block
				}
			})
		}
		select {
		case g.ctrl <- fn:
		case <-g.done:
			continue
		case <-ctx.Done():
			return zero, ctx.Err()
		}
		select {
		case v := <-replies:
			return v, nil
		case <-g.done:
			select {
			case v := <-replies:
				return v, nil
			default: // the group went away before running fn: look it up again
			}
		case <-ctx.Done():
			return zero, ctx.Err()
		}
	}
	return zero, ErrCoordinatorNotAvailable
}
