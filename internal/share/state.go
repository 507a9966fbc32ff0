package share

import (
	"errors"
	"fmt"
	"time"
)

// RecordState is the state of one in-flight record, with Kafka's ids (RecordState.java:
// the ids are also the DeliveryState of a persisted state batch).
type RecordState uint8

const (
	Available    RecordState = 0 // may be acquired (never delivered, released, or its lock timed out)
	Acquired     RecordState = 1 // delivered to one member, locked until its deadline
	Acknowledged RecordState = 2 // accepted: done
	Archived     RecordState = 4 // rejected, a gap, or past the delivery count limit: done
)

func (s RecordState) String() string {
	switch s {
	case Available:
		return "available"
	case Acquired:
		return "acquired"
	case Acknowledged:
		return "acknowledged"
	case Archived:
		return "archived"
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// AckType is an acknowledgement type as ShareFetch and ShareAcknowledge carry it.
type AckType int8

const (
	AckGap     AckType = 0 // an offset with no record (compacted away, a control batch)
	AckAccept  AckType = 1
	AckRelease AckType = 2
	AckReject  AckType = 3
	AckRenew   AckType = 4 // KIP-1222 (ShareAcknowledge v2): extend the lock
)

var (
	// ErrInvalidRecordState: an acknowledgement names an offset that is not acquired
	// by the acknowledging member (another member's, released, timed out, done).
	ErrInvalidRecordState = errors.New("record is not acquired by this member")
	// ErrInvalidRequest: an acknowledgement batch is malformed.
	ErrInvalidRequest = errors.New("invalid acknowledgement batch")
)

// Limits are the settings a share partition's transitions follow.
type Limits struct {
	// LockDuration is how long an acquired record stays locked to its member
	// (share.record.lock.duration.ms).
	LockDuration time.Duration
	// DeliveryLimit is group.share.delivery.count.limit: a record delivered this many
	// times is archived instead of made available again.
	DeliveryLimit int16
	// MaxInFlight is group.share.partition.max.record.locks: the most offsets between
	// the start offset and the end of the window.
	MaxInFlight int
}

// record is one offset of the in-flight window.
type record struct {
	state      RecordState
	deliveries int16     // times acquired; only grows
	member     string    // the holder while Acquired
	deadline   time.Time // the lock's end while Acquired
}

// PartitionState is the share-partition state of one (group, topic partition): Kafka's
// SharePartition without its I/O. It is pure: time comes in as an argument, so the
// rules are tested with scripts (testdata/*.txt).
//
// Invariants: start <= end; len(recs) == end-start and recs[i] is offset start+i;
// recs[0], when present, is neither Acknowledged nor Archived (a done prefix is cut
// and start moves past it); start only grows (but Reset); a record's deliveries only
// grow; an Acquired record has a member and a deadline.
type PartitionState struct {
	start int64 // the share-partition start offset (SPSO): every offset below is done
	end   int64 // the share-partition end offset + 1: offsets from here were never acquired
	recs  []record
}

// NewPartitionState is a share partition starting at start with nothing in flight.
func NewPartitionState(start int64) *PartitionState {
	return &PartitionState{start: start, end: start}
}

// Start is the share-partition start offset.
func (s *PartitionState) Start() int64 { return s.start }

// End is the first offset never acquired.
func (s *PartitionState) End() int64 { return s.end }

// Reset drops the in-flight window and starts at start (AlterShareGroupOffsets, or a
// log start that moved past the start offset).
func (s *PartitionState) Reset(start int64) {
	s.start, s.end, s.recs = start, start, nil
}

// AdvanceTo moves the start offset to logStart when the log no longer holds the
// records below it (retention, DeleteRecords): they can never be delivered.
func (s *PartitionState) AdvanceTo(logStart int64) {
	if logStart <= s.start {
		return
	}
	if logStart >= s.end {
		s.Reset(logStart)
		return
	}
	s.recs = s.recs[logStart-s.start:]
	s.start = logStart
	s.trim()
}

// InFlight counts the offsets in the window by state.
func (s *PartitionState) InFlight() (available, acquired, done int) {
	for _, r := range s.recs {
		switch r.state {
		case Available:
			available++
		case Acquired:
			acquired++
		default:
			done++
		}
	}
	return
}

// NextAcquirable is the lowest offset Acquire could hand out below limit: the first
// Available record of the window, else the window's end when it may grow; false when
// nothing can be acquired now.
func (s *PartitionState) NextAcquirable(limit int64, lim Limits) (int64, bool) {
	for i, r := range s.recs {
		if r.state == Available && s.start+int64(i) < limit {
			return s.start + int64(i), true
		}
	}
	if s.end < limit && len(s.recs) < lim.MaxInFlight {
		return s.end, true
	}
	return 0, false
}

// AcquiredRange is a run of offsets acquired with one delivery count.
type AcquiredRange struct {
	First, Last   int64
	DeliveryCount int16
}

// OffsetRange is a run of offsets, both ends included.
type OffsetRange struct{ First, Last int64 }

// Acquire locks up to max records below limit (the first offset the caller has no
// batch for, at most the high watermark) to member until now+LockDuration: the
// window's Available records first, then new offsets from its end while the window
// stays within MaxInFlight. Each acquisition counts a delivery; an available record
// that already reached the delivery limit is archived instead. Records in unread
// (sorted, disjoint: a read_committed group's aborted transactions) are archived
// without a delivery, never handed out.
func (s *PartitionState) Acquire(member string, limit int64, max int, now time.Time, lim Limits, unread []OffsetRange) []AcquiredRange {
	var out []AcquiredRange
	take := func(off int64, r *record) {
		r.state, r.member, r.deadline = Acquired, member, now.Add(lim.LockDuration)
		r.deliveries++
		if n := len(out); n > 0 && out[n-1].Last == off-1 && out[n-1].DeliveryCount == r.deliveries {
			out[n-1].Last = off
		} else {
			out = append(out, AcquiredRange{First: off, Last: off, DeliveryCount: r.deliveries})
		}
		max--
	}
	// unreadAt reports whether off is in unread; offsets are asked in increasing order.
	unreadAt := func(off int64) bool {
		for len(unread) > 0 && unread[0].Last < off {
			unread = unread[1:]
		}
		return len(unread) > 0 && unread[0].First <= off
	}
	for i := range s.recs {
		off := s.start + int64(i)
		if max <= 0 || off >= limit {
			s.trim()
			return out
		}
		r := &s.recs[i]
		switch {
		case r.state != Available:
		case unreadAt(off):
			*r = record{state: Archived, deliveries: r.deliveries}
		case lim.DeliveryLimit > 0 && r.deliveries >= lim.DeliveryLimit:
			// At the limit but available: restored from a snapshot written while it
			// was in flight. Delivering it again would exceed the limit.
			*r = record{state: Archived, deliveries: r.deliveries}
		default:
			take(off, r)
		}
	}
	for max > 0 && s.end < limit && len(s.recs) < lim.MaxInFlight {
		off := s.end
		s.recs = append(s.recs, record{})
		s.end++
		if unreadAt(off) {
			s.recs[len(s.recs)-1].state = Archived
			s.trim() // an aborted run at the window's head leaves it at once
			continue
		}
		take(off, &s.recs[len(s.recs)-1])
	}
	s.trim()
	return out
}

// Acknowledge applies one acknowledgement batch of member: types holds one type for
// the whole range or one per offset. The batch is checked whole first (every offset
// acquired by member): a failing batch changes nothing. RELEASE makes records
// available again (archived once they reached the delivery limit), RENEW extends
// their locks from now.
func (s *PartitionState) Acknowledge(member string, first, last int64, types []AckType, now time.Time, lim Limits) error {
	n := last - first + 1
	if first > last || len(types) != 1 && int64(len(types)) != n {
		return fmt.Errorf("%w: offsets %d-%d with %d types", ErrInvalidRequest, first, last, len(types))
	}
	for _, t := range types {
		if t < AckGap || t > AckRenew {
			return fmt.Errorf("%w: acknowledge type %d", ErrInvalidRequest, t)
		}
	}
	if first < s.start || last >= s.end {
		return fmt.Errorf("%w: offsets %d-%d outside the in-flight window %d-%d", ErrInvalidRecordState, first, last, s.start, s.end-1)
	}
	for off := first; off <= last; off++ {
		if r := &s.recs[off-s.start]; r.state != Acquired || r.member != member {
			return fmt.Errorf("%w: offset %d is %s", ErrInvalidRecordState, off, r.state)
		}
	}
	for off := first; off <= last; off++ {
		t := types[0]
		if len(types) > 1 {
			t = types[off-first]
		}
		r := &s.recs[off-s.start]
		switch t {
		case AckAccept:
			*r = record{state: Acknowledged, deliveries: r.deliveries}
		case AckReject, AckGap:
			*r = record{state: Archived, deliveries: r.deliveries}
		case AckRelease:
			s.release(r, lim)
		case AckRenew:
			r.deadline = now.Add(lim.LockDuration)
		}
	}
	s.trim()
	return nil
}

// release ends r's acquisition: available again, or archived at the delivery limit.
func (s *PartitionState) release(r *record, lim Limits) {
	st := Available
	if lim.DeliveryLimit > 0 && r.deliveries >= lim.DeliveryLimit {
		st = Archived
	}
	*r = record{state: st, deliveries: r.deliveries}
}

// Expire releases every record whose lock ended at or before now; it returns how many.
func (s *PartitionState) Expire(now time.Time, lim Limits) int {
	n := 0
	for i := range s.recs {
		if r := &s.recs[i]; r.state == Acquired && !r.deadline.After(now) {
			s.release(r, lim)
			n++
		}
	}
	s.trim()
	return n
}

// ReleaseMember releases every record member holds (its share session closed, or it
// left the group); it returns how many.
func (s *PartitionState) ReleaseMember(member string, lim Limits) int {
	n := 0
	for i := range s.recs {
		if r := &s.recs[i]; r.state == Acquired && r.member == member {
			s.release(r, lim)
			n++
		}
	}
	s.trim()
	return n
}

// NextDeadline is the earliest lock deadline in the window; zero when nothing is
// acquired.
func (s *PartitionState) NextDeadline() time.Time {
	var d time.Time
	for _, r := range s.recs {
		if r.state == Acquired && (d.IsZero() || r.deadline.Before(d)) {
			d = r.deadline
		}
	}
	return d
}

// trim cuts the done prefix of the window, moving start past it.
func (s *PartitionState) trim() {
	i := 0
	for i < len(s.recs) && (s.recs[i].state == Acknowledged || s.recs[i].state == Archived) {
		i++
	}
	if i > 0 {
		s.recs = s.recs[i:]
		s.start += int64(i)
	}
	if len(s.recs) == 0 {
		s.recs = nil // let the backing array go
	}
}

// StateBatch is a run of offsets with one state and delivery count, as persisted
// (Kafka's PersisterStateBatch).
type StateBatch struct {
	First         int64       `json:"first"`
	Last          int64       `json:"last"`
	State         RecordState `json:"state"`
	DeliveryCount int16       `json:"deliveries"`
}

// Batches is the window as state batches. An Acquired record is written Available:
// a lock does not survive the leader that granted it.
func (s *PartitionState) Batches() []StateBatch {
	var out []StateBatch
	for i, r := range s.recs {
		off, st := s.start+int64(i), r.state
		if st == Acquired {
			st = Available
		}
		if n := len(out); n > 0 && out[n-1].Last == off-1 && out[n-1].State == st && out[n-1].DeliveryCount == r.deliveries {
			out[n-1].Last = off
			continue
		}
		out = append(out, StateBatch{First: off, Last: off, State: st, DeliveryCount: r.deliveries})
	}
	return out
}

// RestorePartitionState rebuilds a share partition from its start offset and state
// batches (a snapshot): nothing acquired, offsets between batches available.
func RestorePartitionState(start int64, batches []StateBatch) *PartitionState {
	s := NewPartitionState(start)
	for _, b := range batches {
		if b.Last < s.end {
			continue // below start, or overlapping an earlier batch
		}
		for off := max(b.First, s.start); off <= b.Last; off++ {
			for s.end < off {
				s.recs = append(s.recs, record{})
				s.end++
			}
			st := b.State
			if st == Acquired {
				st = Available
			}
			s.recs = append(s.recs, record{state: st, deliveries: b.DeliveryCount})
			s.end++
		}
	}
	s.trim()
	return s
}
