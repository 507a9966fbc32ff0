package controller

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/runnel-io/runnel/internal/metadata"
)

// appliedOffsets is the newest metadata offset each broker reported as applied to its
// replicas (BrokerHeartbeat's CurrentMetadataOffset), per registration epoch. The
// active controller uses it to answer an admin change only once every live broker
// serves it (WaitBrokersApplied). It has its own lock, so that a waiter never holds
// proposeMu, which heartbeats need.
type appliedOffsets struct {
	mu sync.Mutex
	m  map[metadata.NodeID]reportedOffset
	// changedCh is closed and replaced whenever an offset advances.
	changedCh chan struct{}
}

type reportedOffset struct {
	epoch  int64
	offset uint64
}

func newAppliedOffsets() *appliedOffsets {
	return &appliedOffsets{m: map[metadata.NodeID]reportedOffset{}, changedCh: make(chan struct{})}
}

// report records that broker id, at registration epoch, has applied offset. Offsets
// only grow within an epoch; a new epoch (a new incarnation) starts again.
func (a *appliedOffsets) report(id metadata.NodeID, epoch int64, offset uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	old, ok := a.m[id]
	if ok && old.epoch == epoch && old.offset >= offset {
		return
	}
	a.m[id] = reportedOffset{epoch: epoch, offset: offset}
	close(a.changedCh)
	a.changedCh = make(chan struct{})
}

// lagging returns, in id order, the unfenced brokers of im that have not reported
// offset for their current epoch, and a channel closed at the next report. A broker
// whose disk is full is not waited for: it may be unable to store the metadata log
// until space is freed (raftstore.go), and every admin change would time out
// meanwhile; its lease lapses while it is behind, so it answers for no role.
func (a *appliedOffsets) lagging(im *metadata.Image, offset uint64) ([]metadata.NodeID, <-chan struct{}) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []metadata.NodeID
	for id, b := range im.Brokers {
		if b.Fenced || b.DiskFull {
			continue
		}
		if r, ok := a.m[id]; !ok || r.epoch != b.Epoch || r.offset < offset {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out, a.changedCh
}

// leadershipRecheck is how often WaitBrokersApplied checks that this node still leads:
// a deposed controller receives no heartbeats, so nothing else would wake it.
const leadershipRecheck = 50 * time.Millisecond

// WaitBrokersApplied waits until every registered, unfenced broker has reported (in its
// heartbeats) that its replicas serve the metadata at offset, so that an admin change
// is visible through every node once it is acknowledged (Kafka's brokers report the
// same offset; KRaft itself does not wait for it). A broker that dies is fenced after
// its session timeout and then no longer waited for; one whose disk is full is not
// waited for (lagging). It returns ErrTimeout naming the
// nodes still behind when ctx ends, ErrNotController if this node stops leading (the
// change is committed; only the wait is cut short), ErrClosed on Close.
func (c *Controller) WaitBrokersApplied(ctx context.Context, offset uint64) error {
	tick := time.NewTicker(leadershipRecheck)
	defer tick.Stop()
	for {
		imCh := c.fsm.changed()
		lag, repCh := c.applied.lagging(c.Image(), offset)
		if len(lag) == 0 {
			return nil
		}
		select {
		case <-repCh:
		case <-imCh:
		case <-tick.C:
			if !c.IsLeader() {
				return fmt.Errorf("%w: stopped leading while nodes %v applied metadata offset %d", c.notController(), lag, offset)
			}
		case <-ctx.Done():
			return fmt.Errorf("%w: nodes %v have not applied metadata offset %d yet: %w", ErrTimeout, lag, offset, ctx.Err())
		case <-c.done:
			return ErrClosed
		}
	}
}
