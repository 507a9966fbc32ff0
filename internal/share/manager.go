package share

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// ManagerConfig configures a Manager.
type ManagerConfig struct {
	Store Store
	// Limits gives a group's limits (the broker's group.share.* settings and the
	// group's share.record.lock.duration.ms).
	Limits func(group string) Limits
	// AutoOffsetReset gives a group's share.auto.offset.reset: "earliest" or "latest".
	AutoOffsetReset func(group string) string
	// Now is the clock; nil: time.Now.
	Now func() time.Time
}

// DataLog is the data partition a share partition delivers from, as its leader sees
// it.
type DataLog interface {
	// LeaderEpoch is this node's current leader epoch of the partition.
	LeaderEpoch() int32
	// Bounds are the log start offset and the high watermark.
	Bounds() (logStart, hw int64)
}

// Manager holds the share partitions whose data partitions this node leads (Kafka's
// SharePartitionManager) and the members' share sessions. A share partition is loaded
// from the Store the first time it is used in a leader epoch of its data partition,
// so a leadership move (and back) always starts from the durable state, which holds
// every acknowledgement ever answered.
type Manager struct {
	cfg ManagerConfig

	mu       sync.Mutex // guards parts, sessions, changed and redelivered
	parts    map[Key]*sharePartition
	sessions map[SessionKey]*Session
	// redelivered counts, per group, the records acquired again after an earlier
	// delivery (released, timed out, or in flight at a failover), for metrics.
	redelivered map[string]int64
	// changed is closed (and replaced) whenever records become available again
	// (released, lock timed out): a waiting ShareFetch of another member retries.
	changed chan struct{}
}

// sharePartition is one loaded share partition. Lock order: Manager.mu and
// sharePartition.mu are never held together.
type sharePartition struct {
	// verify is set when a member opens a share session on it: its next use first
	// checks that the Store holds no newer state epoch (an admin request changed the
	// state while the group was empty) and reloads if it does.
	verify atomic.Bool

	mu         sync.Mutex // guards everything below; held across a data read, never across a Store write
	st         *PartitionState
	epoch      int32 // the data partition's leader epoch it was loaded in
	stateEpoch int32 // the state epoch it was loaded in (Snapshot.StateEpoch)
	seq        int64 // the last snapshot's Seq
}

// NewManager returns an empty Manager.
func NewManager(cfg ManagerConfig) *Manager {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Manager{cfg: cfg, parts: map[Key]*sharePartition{}, sessions: map[SessionKey]*Session{},
		redelivered: map[string]int64{}, changed: make(chan struct{})}
}

// Changed returns a channel closed at the next release of records.
func (m *Manager) Changed() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.changed
}

func (m *Manager) signal() {
	m.mu.Lock()
	close(m.changed)
	m.changed = make(chan struct{})
	m.mu.Unlock()
}

// ErrStore wraps a failure to read or write the durable state.
var ErrStore = errors.New("share state unavailable")

// partition returns k's share partition loaded for log's current leader epoch,
// loading it (from the Store, or initialized by share.auto.offset.reset and written)
// when it is not.
func (m *Manager) partition(ctx context.Context, k Key, log DataLog) (*sharePartition, error) {
	epoch := log.LeaderEpoch()
	m.mu.Lock()
	sp := m.parts[k]
	if sp == nil || sp.epoch != epoch {
		sp = &sharePartition{epoch: epoch}
		m.parts[k] = sp
	}
	m.mu.Unlock()
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.st != nil && !sp.verify.Load() {
		return sp, nil
	}
	if m.cfg.Store == nil {
		return nil, errNoStore
	}
	snap, ok, err := m.cfg.Store.Read(ctx, k)
	if err != nil {
		return nil, fmt.Errorf("%w: loading share group %s on %s: %v", ErrStore, k.Group, k.topicPartition(nil), err)
	}
	sp.verify.Store(false)
	if sp.st != nil && (!ok || snap.StateEpoch <= sp.stateEpoch) {
		return sp, nil // verified: no admin request replaced the state
	}
	logStart, hw := log.Bounds()
	if ok && !snap.Deleted {
		sp.st, sp.stateEpoch, sp.seq = RestorePartitionState(snap.Start, snap.Batches), snap.StateEpoch, snap.Seq
		sp.st.AdvanceTo(logStart)
		return sp, nil
	}
	start := hw
	if m.cfg.AutoOffsetReset != nil && m.cfg.AutoOffsetReset(k.Group) == "earliest" {
		start = logStart
	}
	st := NewPartitionState(start)
	// Written before use: a later load must start here, not at a newer high watermark
	// (which would skip what was produced in between). A deleted state starts again in
	// the deletion's state epoch.
	init := Snapshot{StateEpoch: snap.StateEpoch, LeaderEpoch: epoch, Seq: 1, Start: start, WrittenMs: m.cfg.Now().UnixMilli()}
	if err := m.cfg.Store.Write(ctx, k, init); err != nil {
		return nil, fmt.Errorf("%w: initializing share group %s on %s at offset %d: %v", ErrStore, k.Group, k.topicPartition(nil), start, err)
	}
	sp.st, sp.stateEpoch, sp.seq = st, init.StateEpoch, 1
	return sp, nil
}

// snapshotLocked is sp's next snapshot. sp.mu must be held.
func (m *Manager) snapshotLocked(sp *sharePartition) Snapshot {
	sp.seq++
	return Snapshot{StateEpoch: sp.stateEpoch, LeaderEpoch: sp.epoch, Seq: sp.seq, Start: sp.st.Start(), Batches: sp.st.Batches(), WrittenMs: m.cfg.Now().UnixMilli()}
}

// Batches is what a read of a share partition's data partition returned: whole
// batches from the offset asked.
type Batches struct {
	Records []byte
	// Next is the offset after the last batch.
	Next int64
	// Unread are offsets of those batches never to be delivered (sorted, disjoint):
	// a read_committed group's aborted transactions.
	Unread []OffsetRange
}

// Acquire acquires for member up to max records of k: read(offset) returns the data
// partition's whole batches from offset; only offsets covered by those batches and
// below the bound log gives (the high watermark; a read_committed group's log: the
// last stable offset) are acquired, and Unread ones are archived. A read whose
// batches are all unread is followed by the next one. It returns the batches and the
// acquired ranges (none: nothing to deliver now).
func (m *Manager) Acquire(ctx context.Context, k Key, log DataLog, member string, max int, read func(offset int64) (Batches, error)) ([]byte, []AcquiredRange, error) {
	sp, err := m.partition(ctx, k, log)
	if err != nil {
		return nil, nil, err
	}
	lim := m.cfg.Limits(k.Group)
	now := m.cfg.Now()
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.st.Expire(now, lim) > 0 {
		defer m.signal()
	}
	logStart, bound := log.Bounds()
	sp.st.AdvanceTo(logStart)
	var got Batches
	var ranges []AcquiredRange
	for prev := int64(-1); len(ranges) == 0; {
		off, ok := sp.st.NextAcquirable(bound, lim)
		if !ok || max <= 0 || off <= prev {
			return nil, nil, nil
		}
		if got, err = read(off); err != nil || got.Next <= off {
			return nil, nil, err
		}
		ranges = sp.st.Acquire(member, min(got.Next, bound), max, now, lim, got.Unread)
		if len(got.Unread) == 0 {
			break // nothing archived: nothing further is acquirable now
		}
		prev = off
	}
	if len(ranges) == 0 {
		return nil, nil, nil
	}
	var again int64
	for _, r := range ranges {
		if r.DeliveryCount > 1 {
			again += r.Last - r.First + 1
		}
	}
	if again > 0 {
		m.mu.Lock()
		m.redelivered[k.Group] += again
		m.mu.Unlock()
	}
	return got.Records, ranges, nil
}

// AckBatch is one acknowledgement batch.
type AckBatch struct {
	First, Last int64
	Types       []AckType
}

// Acknowledge applies member's acknowledgement batches to k and, unless they only
// renewed locks, writes the new state to the Store before returning: an answered
// acknowledgement is durable. A batch that fails (not acquired by member) changes
// nothing and its error is returned (the first); the others are applied.
func (m *Manager) Acknowledge(ctx context.Context, k Key, log DataLog, member string, batches []AckBatch) error {
	sp, err := m.partition(ctx, k, log)
	if err != nil {
		return err
	}
	lim := m.cfg.Limits(k.Group)
	now := m.cfg.Now()
	sp.mu.Lock()
	released := sp.st.Expire(now, lim) > 0
	var first error
	write := false
	for _, b := range batches {
		if err := sp.st.Acknowledge(member, b.First, b.Last, b.Types, now, lim); err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		for _, t := range b.Types {
			write = write || t != AckRenew
			released = released || t == AckRelease
		}
	}
	var snap Snapshot
	if write {
		snap = m.snapshotLocked(sp)
	}
	sp.mu.Unlock()
	if released {
		m.signal()
	}
	if write {
		if err := m.cfg.Store.Write(ctx, k, snap); err != nil {
			return fmt.Errorf("%w: writing the acknowledgements of share group %s member %s on %s: %v", ErrStore, k.Group, member, k.topicPartition(nil), err)
		}
	}
	return first
}

// ReleaseMember releases what member holds of the keys (its share session closed).
func (m *Manager) ReleaseMember(keys []Key, member string) {
	n := 0
	for _, k := range keys {
		m.mu.Lock()
		sp := m.parts[k]
		m.mu.Unlock()
		if sp == nil {
			continue
		}
		sp.mu.Lock()
		if sp.st != nil {
			n += sp.st.ReleaseMember(member, m.cfg.Limits(k.Group))
		}
		sp.mu.Unlock()
	}
	if n > 0 {
		m.signal()
	}
}

// NextDeadline is the earliest lock deadline among keys' loaded share partitions
// (zero: none): a waiting ShareFetch wakes then, as the lock's records become
// available.
func (m *Manager) NextDeadline(keys []Key) time.Time {
	var d time.Time
	for _, k := range keys {
		m.mu.Lock()
		sp := m.parts[k]
		m.mu.Unlock()
		if sp == nil {
			continue
		}
		sp.mu.Lock()
		if sp.st != nil {
			if t := sp.st.NextDeadline(); !t.IsZero() && (d.IsZero() || t.Before(d)) {
				d = t
			}
		}
		sp.mu.Unlock()
	}
	return d
}

// Forget drops the loaded share partitions of a data partition this node stopped
// leading, or whose state was changed by an admin request.
func (m *Manager) Forget(match func(Key) bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.parts {
		if match(k) {
			delete(m.parts, k)
		}
	}
}

// PartitionStat is what metrics show of one loaded share partition.
type PartitionStat struct {
	Key                 Key
	Acquired, Available int
}

// Stats returns every loaded share partition's in-flight counts and, per group, the
// records delivered again so far (metrics).
func (m *Manager) Stats() ([]PartitionStat, map[string]int64) {
	m.mu.Lock()
	keys := make([]Key, 0, len(m.parts))
	parts := make([]*sharePartition, 0, len(m.parts))
	for k, sp := range m.parts {
		keys, parts = append(keys, k), append(parts, sp)
	}
	again := make(map[string]int64, len(m.redelivered))
	for g, n := range m.redelivered {
		again[g] = n
	}
	m.mu.Unlock()
	var out []PartitionStat
	for i, sp := range parts {
		sp.mu.Lock()
		if sp.st != nil {
			av, ac, _ := sp.st.InFlight()
			out = append(out, PartitionStat{Key: keys[i], Acquired: ac, Available: av})
		}
		sp.mu.Unlock()
	}
	return out, again
}

// InFlight sums, over the loaded share partitions, the records acquired and those
// available for redelivery (metrics).
func (m *Manager) InFlight() (acquired, available int) {
	m.mu.Lock()
	parts := make([]*sharePartition, 0, len(m.parts))
	for _, sp := range m.parts {
		parts = append(parts, sp)
	}
	m.mu.Unlock()
	for _, sp := range parts {
		sp.mu.Lock()
		if sp.st != nil {
			av, ac, _ := sp.st.InFlight()
			acquired, available = acquired+ac, available+av
		}
		sp.mu.Unlock()
	}
	return
}

// Store is the Manager's durable state.
func (m *Manager) Store() Store { return m.cfg.Store }
