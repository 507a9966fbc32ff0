package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"

	"github.com/runnel-io/runnel/internal/recordbatch"
)

// Transactions (Kafka ProducerStateManager, KIP-98).
//
// A transactional producer's first batch in a partition opens its transaction there;
// the transaction ends with a control batch (a marker) the coordinator has the leader
// write: COMMIT or ABORT. The log keeps, in the producer state:
//
//   - the first offset of every ongoing transaction; the smallest is the first unstable
//     offset, and the last stable offset (LSO) a read_committed consumer may read up to
//     is min(first unstable offset, high watermark);
//   - the aborted transactions (producer id, first offset, marker offset), which
//     read_committed fetches return so that clients drop the aborted batches.
//
// Where Kafka keeps a .txnindex file per segment, Runnel keeps the aborted list in
// memory and writes it into every producer snapshot (<offset>.snapshot, version 2):
// recovery loads the latest snapshot and replays the batches after it, markers
// included, so the list is rebuilt exactly; without any snapshot the whole log is
// replayed. Entries whose marker falls below the log start are dropped.

var (
	// ErrInvalidTxnState is returned by AppendAsLeader when a producer with an
	// ongoing transaction writes a non-transactional batch (Kafka INVALID_TXN_STATE).
	ErrInvalidTxnState = errors.New("invalid transaction state")
	// ErrTxnCoordinatorFenced is returned by AppendControl for a marker whose
	// coordinator epoch is older than the last marker's of the producer (Kafka
	// TRANSACTION_COORDINATOR_FENCED).
	ErrTxnCoordinatorFenced = errors.New("transaction coordinator fenced")
)

// ControlType is the type of a transaction marker (Kafka ControlRecordType).
type ControlType int16

const (
	ControlAbort  ControlType = 0
	ControlCommit ControlType = 1
)

// AbortedTxn is an aborted transaction of one partition: the producer's batches in
// [FirstOffset, LastOffset) are aborted; LastOffset is the ABORT marker.
type AbortedTxn struct {
	ProducerID  int64
	FirstOffset int64
	LastOffset  int64
}

// Header field positions of a v2 batch used to stamp a control batch (see
// internal/recordbatch).
const (
	batchOffCRC        = 17
	batchOffAttributes = 21
	batchOffProducerID = 43
	batchOffEpoch      = 51
	batchOffSequence   = 53
)

// ControlBatch builds a transaction marker batch (Kafka EndTransactionMarker): one
// control record whose key is version 0 | type and whose value is version 0 |
// coordinatorEpoch, in a transactional control batch of the producer, sequence -1.
func ControlBatch(t ControlType, pid int64, epoch int16, coordinatorEpoch int32, timestampMs int64) recordbatch.Batch {
	key := binary.BigEndian.AppendUint16(make([]byte, 2, 4), uint16(t))
	value := binary.BigEndian.AppendUint32(make([]byte, 2, 6), uint32(coordinatorEpoch))
	bld := recordbatch.NewBuilder(recordbatch.HeaderSize + 32)
	bld.Add(key, value, nil, timestampMs)
	b := append(recordbatch.Batch(nil), bld.Build()...)
	binary.BigEndian.PutUint16(b[batchOffAttributes:], recordbatch.TransactionalFlag|recordbatch.ControlFlag)
	binary.BigEndian.PutUint64(b[batchOffProducerID:], uint64(pid))
	binary.BigEndian.PutUint16(b[batchOffEpoch:], uint16(epoch))
	binary.BigEndian.PutUint32(b[batchOffSequence:], 0xffffffff)
	binary.BigEndian.PutUint32(b[batchOffCRC:], b.ComputeCRC())
	return b
}

// ParseControl returns the marker type and coordinator epoch of a control batch. ok is
// false for anything but a well-formed uncompressed COMMIT or ABORT marker.
func ParseControl(b recordbatch.Batch) (t ControlType, coordinatorEpoch int32, ok bool) {
	if !b.IsControl() || b.Compression() != 0 || len(b) <= recordbatch.HeaderSize {
		return 0, 0, false
	}
	p := []byte(b[recordbatch.HeaderSize:])
	var fields [3]int64 // length, timestamp delta, offset delta (attributes byte between)
	for i := range fields {
		v, n := binary.Varint(p)
		if n <= 0 {
			return 0, 0, false
		}
		fields[i], p = v, p[n:]
		if i == 0 {
			if len(p) < 1 {
				return 0, 0, false
			}
			p = p[1:] // record attributes
		}
	}
	key, p, okKey := readVarBytes(p)
	value, _, okValue := readVarBytes(p)
	if !okKey || !okValue || len(key) < 4 || len(value) < 6 {
		return 0, 0, false
	}
	t = ControlType(binary.BigEndian.Uint16(key[2:]))
	if t != ControlAbort && t != ControlCommit {
		return 0, 0, false
	}
	return t, int32(binary.BigEndian.Uint32(value[2:])), true
}

func readVarBytes(p []byte) (v, rest []byte, ok bool) {
	n, k := binary.Varint(p)
	if k <= 0 || n < 0 || int64(len(p)-k) < n {
		return nil, nil, false
	}
	return p[k : k+int(n)], p[k+int(n):], true
}

// applyMarker ends the producer's ongoing transaction at control batch b.
func (ps *producerState) applyMarker(pid int64, e *producerEntry, b recordbatch.Batch) {
	t, coordinatorEpoch, ok := ParseControl(b)
	if !ok {
		return
	}
	e.coordinatorEpoch = max(e.coordinatorEpoch, coordinatorEpoch)
	e.markerOffset = b.BaseOffset()
	if e.txnFirst < 0 {
		return
	}
	if t == ControlAbort {
		ps.aborted = append(ps.aborted, AbortedTxn{ProducerID: pid, FirstOffset: e.txnFirst, LastOffset: b.BaseOffset()})
	}
	e.txnFirst = -1
	delete(ps.ongoing, pid)
	ps.updateFirstUnstable()
}

func (ps *producerState) updateFirstUnstable() {
	first := int64(-1)
	for _, off := range ps.ongoing {
		if first < 0 || off < first {
			first = off
		}
	}
	ps.firstUnstable.Store(first)
}

// checkMarker validates a marker against the producer's state.
func (ps *producerState) checkMarker(pid int64, epoch int16, coordinatorEpoch int32) error {
	e := ps.producers[pid]
	switch {
	case e == nil:
		return nil
	case epoch < e.epoch:
		return fmt.Errorf("%w: marker for producer %d has epoch %d, older than %d", ErrInvalidProducerEpoch, pid, epoch, e.epoch)
	case coordinatorEpoch < e.coordinatorEpoch:
		return fmt.Errorf("%w: marker for producer %d has coordinator epoch %d, older than %d", ErrTxnCoordinatorFenced, pid, coordinatorEpoch, e.coordinatorEpoch)
	}
	return nil
}

// AppendControl appends a COMMIT or ABORT marker for producer pid as the leader
// (WriteTxnMarkers): offsets and the leader epoch are stamped as for AppendAsLeader.
// A marker with an older producer epoch is ErrInvalidProducerEpoch, one with an older
// coordinator epoch ErrTxnCoordinatorFenced. A marker for a producer with no ongoing
// transaction is written and changes nothing (a coordinator retry). Like
// AppendAsLeader it does not fsync.
func (l *Log) AppendControl(t ControlType, pid int64, epoch int16, coordinatorEpoch, leaderEpoch int32) (AppendInfo, error) {
	cfg := l.config.Load()
	now := l.now()
	b := ControlBatch(t, pid, epoch, coordinatorEpoch, now.UnixMilli())
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.checkWritableLocked(); err != nil {
		return AppendInfo{}, err
	}
	if err := l.producers.checkMarker(pid, epoch, coordinatorEpoch); err != nil {
		return AppendInfo{}, err
	}
	info := AppendInfo{FirstOffset: l.leo.Load(), LogAppendTime: -1, NumBatches: 1, NumRecords: 1, Bytes: len(b)}
	if cfg.MessageTimestampType == LogAppendTime {
		info.LogAppendTime = now.UnixMilli()
	}
	batches := []recordbatch.Batch{b}
	info.LastOffset = stampBatches(batches, info.FirstOffset, leaderEpoch, info.LogAppendTime)
	if err := l.appendLocked(b, batches, info.LastOffset, cfg, now); err != nil {
		return AppendInfo{}, err
	}
	l.epochs.assign(leaderEpoch, info.FirstOffset)
	l.producers.update(b)
	info.LogStartOffset = l.logStart.Load()
	return info, nil
}

// FirstUnstableOffset returns the first offset of the oldest ongoing transaction; ok
// is false when no transaction is open. It takes no lock.
func (l *Log) FirstUnstableOffset() (int64, bool) {
	off := l.producers.firstUnstable.Load()
	return off, off >= 0
}

// LastStableOffset is Kafka's LSO given the high watermark: the first unstable offset
// when a transaction is open below hw, hw otherwise.
func (l *Log) LastStableOffset(hw int64) int64 {
	if off, ok := l.FirstUnstableOffset(); ok && off < hw {
		return off
	}
	return hw
}

// AbortedTransactions returns the aborted transactions that overlap [from, to): those
// with FirstOffset < to whose marker is at or after from, in marker order.
func (l *Log) AbortedTransactions(from, to int64) []AbortedTxn {
	l.mu.Lock()
	defer l.mu.Unlock()
	ab := l.producers.aborted
	i := sort.Search(len(ab), func(i int) bool { return ab[i].LastOffset >= from })
	var out []AbortedTxn
	for ; i < len(ab); i++ {
		if ab[i].FirstOffset < to {
			out = append(out, ab[i])
		}
	}
	return out
}

// OngoingTransactions returns the producer id and first offset of every ongoing
// transaction (DescribeProducers, tests).
func (l *Log) OngoingTransactions() map[int64]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[int64]int64, len(l.producers.ongoing))
	for pid, off := range l.producers.ongoing {
		out[pid] = off
	}
	return out
}
