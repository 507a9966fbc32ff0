package log

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"sort"
	"sync/atomic"

	"github.com/runnel-io/runnel/internal/recordbatch"
)

// producerBatchesCached is how many recent batches per producer are remembered to
// recognise retries (Kafka ProducerStateEntry.NumBatchesToRetain, the client's
// max.in.flight.requests.per.connection limit for idempotence).
const producerBatchesCached = 5

// batchMeta is what the producer state keeps of one idempotent batch.
type batchMeta struct {
	firstSeq, lastSeq       int32
	firstOffset, lastOffset int64
}

// producerEntry is the state of one producer id (Kafka ProducerStateEntry).
type producerEntry struct {
	epoch int16
	// batches holds the last n batches, oldest first. Invariant: 0 <= n <= 5; n is 0
	// only for a producer known from a transaction marker alone, or right after a
	// marker bumped its epoch.
	batches [producerBatchesCached]batchMeta
	n       int
	// coordinatorEpoch is the transaction coordinator epoch of the last marker: a
	// marker from an older coordinator is fenced. Only grows.
	coordinatorEpoch int32
	// txnFirst is the offset of the first batch of the producer's ongoing
	// transaction, -1 when none.
	txnFirst int64
	// markerOffset is the offset of the producer's last transaction marker, -1 when
	// none: with n == 0 it is the producer's last offset in the log.
	markerOffset int64
}

func newProducerEntry() *producerEntry { return &producerEntry{txnFirst: -1, markerOffset: -1} }

// last is the newest batch, or with n == 0 a batch of sequence -1 at the last marker
// (the next sequence is then 0).
func (e *producerEntry) last() batchMeta {
	if e.n == 0 {
		return batchMeta{firstSeq: -1, lastSeq: -1, firstOffset: e.markerOffset, lastOffset: e.markerOffset}
	}
	return e.batches[e.n-1]
}

// lastOffset is the last offset this producer wrote (data or marker).
func (e *producerEntry) lastOffset() int64 { return max(e.last().lastOffset, e.markerOffset) }

func (e *producerEntry) push(m batchMeta) {
	if e.n == producerBatchesCached {
		copy(e.batches[:], e.batches[1:])
		e.n--
	}
	e.batches[e.n] = m
	e.n++
}

// producerState is Kafka's ProducerStateManager: idempotent and transactional
// producers, ongoing transactions and the aborted-transaction list (txn.go). It has no
// lock: Log.mu guards it, except firstUnstable.
type producerState struct {
	producers map[int64]*producerEntry
	// ongoing maps the producer id of every ongoing transaction to its first offset.
	ongoing map[int64]int64
	// aborted lists the aborted transactions whose marker is at or above the log
	// start, in marker (LastOffset) order.
	aborted []AbortedTxn
	// firstUnstable is min(ongoing), -1 when no transaction is open; written under
	// Log.mu, read without it by fetches.
	firstUnstable atomic.Int64
}

func newProducerState() *producerState {
	ps := &producerState{producers: map[int64]*producerEntry{}, ongoing: map[int64]int64{}}
	ps.firstUnstable.Store(-1)
	return ps
}

// batchSeqs returns the first and last sequence numbers of b; sequences wrap from
// MaxInt32 to 0.
func batchSeqs(b recordbatch.Batch) (first, last int32) {
	first = b.BaseSequence()
	return first, int32((int64(first) + int64(b.LastOffsetDelta())) % (math.MaxInt32 + 1))
}

func nextSeq(s int32) int32 {
	if s == math.MaxInt32 {
		return 0
	}
	return s + 1
}

// pendingSeq is the effect of an earlier batch of the same append on a producer.
type pendingSeq struct {
	pid     int64
	epoch   int16
	lastSeq int32
}

// check validates b against the state and against the earlier batches of the same
// append (pending). It returns the original batch when b is a retry of one of the
// last five batches of its producer.
func (ps *producerState) check(b recordbatch.Batch, pending []pendingSeq) (dup *batchMeta, err error) {
	pid, epoch := b.ProducerID(), b.ProducerEpoch()
	first, last := batchSeqs(b)
	for i := len(pending) - 1; i >= 0; i-- {
		if p := pending[i]; p.pid == pid {
			return nil, checkSeq(pid, p.epoch, p.lastSeq, epoch, first)
		}
	}
	e := ps.producers[pid]
	if e == nil {
		return nil, nil // unknown producer: any sequence (Kafka >= 2.5)
	}
	if e.txnFirst >= 0 && !b.IsTransactional() && epoch == e.epoch {
		return nil, fmt.Errorf("%w: producer %d wrote a non-transactional batch inside its ongoing transaction", ErrInvalidTxnState, pid)
	}
	if e.n == 0 && epoch == e.epoch {
		return nil, checkSeq(pid, e.epoch, -1, epoch, first)
	}
	if epoch == e.epoch {
		for i := 0; i < e.n; i++ {
			if m := &e.batches[i]; m.firstSeq == first && m.lastSeq == last {
				return m, nil
			}
		}
	}
	return nil, checkSeq(pid, e.epoch, e.last().lastSeq, epoch, first)
}

func checkSeq(pid int64, curEpoch int16, lastSeq int32, epoch int16, first int32) error {
	switch {
	case epoch < curEpoch:
		return fmt.Errorf("%w: producer %d epoch %d is older than %d", ErrInvalidProducerEpoch, pid, epoch, curEpoch)
	case epoch > curEpoch && first != 0:
		return fmt.Errorf("%w: producer %d new epoch %d starts at sequence %d, not 0", ErrOutOfOrderSequence, pid, epoch, first)
	case epoch == curEpoch && first != nextSeq(lastSeq):
		return fmt.Errorf("%w: producer %d epoch %d sent sequence %d, expected %d", ErrOutOfOrderSequence, pid, epoch, first, nextSeq(lastSeq))
	}
	return nil
}

// update records an appended batch (offsets assigned). Followers and recovery call it
// without check.
func (ps *producerState) update(b recordbatch.Batch) {
	pid := b.ProducerID()
	if pid < 0 {
		return
	}
	e := ps.producers[pid]
	if e == nil {
		e = newProducerEntry()
		ps.producers[pid] = e
	}
	if e.n > 0 && b.ProducerEpoch() != e.epoch {
		e.n = 0
	}
	e.epoch = b.ProducerEpoch()
	if b.IsControl() {
		ps.applyMarker(pid, e, b)
		return
	}
	first, last := batchSeqs(b)
	e.push(batchMeta{firstSeq: first, lastSeq: last, firstOffset: b.BaseOffset(), lastOffset: b.LastOffset()})
	if b.IsTransactional() && e.txnFirst < 0 {
		e.txnFirst = b.BaseOffset()
		ps.ongoing[pid] = e.txnFirst
		ps.updateFirstUnstable()
	}
}

// truncateHead forgets the producers whose last write is below the log start offset
// and have no ongoing transaction, and the aborted transactions wholly below it.
func (ps *producerState) truncateHead(logStart int64) {
	for pid, e := range ps.producers {
		if e.lastOffset() < logStart && e.txnFirst < 0 {
			delete(ps.producers, pid)
		}
	}
	i := 0
	for i < len(ps.aborted) && ps.aborted[i].LastOffset < logStart {
		i++
	}
	ps.aborted = append(ps.aborted[:0], ps.aborted[i:]...)
}

func (ps *producerState) clear() {
	clear(ps.producers)
	clear(ps.ongoing)
	ps.aborted = nil
	ps.firstUnstable.Store(-1)
}

// Snapshot file format (<offset>.snapshot, the state after every batch below offset),
// big endian:
//
//	version int16 (2) | crc32c uint32 of the rest | count int32 | count entries:
//	  producerId int64 | epoch int16 | n int8 | coordinatorEpoch int32 |
//	  txnFirstOffset int64 | markerOffset int64 |
//	  n x (firstSeq int32, lastSeq int32, firstOffset int64, lastOffset int64)
//	abortedCount int32 | abortedCount x (producerId int64, firstOffset int64, lastOffset int64)
//
// Version 1 (no transactions) entries stop after n and have no aborted list; they are
// still read, with n >= 1 required.
const (
	snapshotVersion    = 2
	snapshotHeaderSize = 2 + 4 + 4
	snapshotBatchSize  = 4 + 4 + 8 + 8
	snapshotEntryV1    = 8 + 2 + 1
	snapshotEntryV2    = snapshotEntryV1 + 4 + 8 + 8
	snapshotAbortedLen = 8 + 8 + 8
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// producerSnapshot is a decoded snapshot.
type producerSnapshot struct {
	producers map[int64]*producerEntry
	aborted   []AbortedTxn
}

// restore replaces the state with a snapshot's.
func (ps *producerState) restore(s producerSnapshot) {
	ps.clear()
	ps.producers = s.producers
	ps.aborted = s.aborted
	for pid, e := range s.producers {
		if e.txnFirst >= 0 {
			ps.ongoing[pid] = e.txnFirst
		}
	}
	ps.updateFirstUnstable()
}

func (ps *producerState) encode() []byte {
	pids := make([]int64, 0, len(ps.producers))
	for pid := range ps.producers {
		pids = append(pids, pid)
	}
	sort.Slice(pids, func(i, j int) bool { return pids[i] < pids[j] })
	b := make([]byte, snapshotHeaderSize, snapshotHeaderSize+len(pids)*(snapshotEntryV2+producerBatchesCached*snapshotBatchSize))
	binary.BigEndian.PutUint16(b, snapshotVersion)
	binary.BigEndian.PutUint32(b[6:], uint32(len(pids)))
	for _, pid := range pids {
		b = appendSnapshotEntry(b, pid, ps.producers[pid])
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(ps.aborted)))
	for _, a := range ps.aborted {
		b = binary.BigEndian.AppendUint64(b, uint64(a.ProducerID))
		b = binary.BigEndian.AppendUint64(b, uint64(a.FirstOffset))
		b = binary.BigEndian.AppendUint64(b, uint64(a.LastOffset))
	}
	binary.BigEndian.PutUint32(b[2:], crc32.Checksum(b[6:], castagnoli))
	return b
}

func appendSnapshotEntry(b []byte, pid int64, e *producerEntry) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(pid))
	b = binary.BigEndian.AppendUint16(b, uint16(e.epoch))
	b = append(b, byte(e.n))
	b = binary.BigEndian.AppendUint32(b, uint32(e.coordinatorEpoch))
	b = binary.BigEndian.AppendUint64(b, uint64(e.txnFirst))
	b = binary.BigEndian.AppendUint64(b, uint64(e.markerOffset))
	for _, m := range e.batches[:e.n] {
		b = binary.BigEndian.AppendUint32(b, uint32(m.firstSeq))
		b = binary.BigEndian.AppendUint32(b, uint32(m.lastSeq))
		b = binary.BigEndian.AppendUint64(b, uint64(m.firstOffset))
		b = binary.BigEndian.AppendUint64(b, uint64(m.lastOffset))
	}
	return b
}

func snapshotCorrupt(why string) error {
	return fmt.Errorf("%w: producer snapshot: %s", ErrCorruption, why)
}

// decodeProducerSnapshot parses a snapshot (version 1 or 2); any inconsistency is
// ErrCorruption.
func decodeProducerSnapshot(b []byte) (producerSnapshot, error) {
	var s producerSnapshot
	if len(b) < snapshotHeaderSize {
		return s, snapshotCorrupt("short")
	}
	version := binary.BigEndian.Uint16(b)
	if version != 1 && version != snapshotVersion {
		return s, snapshotCorrupt("unknown version")
	}
	if crc32.Checksum(b[6:], castagnoli) != binary.BigEndian.Uint32(b[2:]) {
		return s, snapshotCorrupt("CRC mismatch")
	}
	count := int(binary.BigEndian.Uint32(b[6:]))
	s.producers = make(map[int64]*producerEntry, min(count, 1<<16))
	p := b[snapshotHeaderSize:]
	for i := 0; i < count; i++ {
		pid, e, rest, err := decodeSnapshotEntry(p, version)
		if err != nil {
			return s, err
		}
		s.producers[pid], p = e, rest
	}
	if version == 1 {
		if len(p) != 0 {
			return s, snapshotCorrupt("trailing bytes")
		}
		return s, nil
	}
	aborted, err := decodeAborted(p)
	s.aborted = aborted
	return s, err
}

func decodeSnapshotEntry(p []byte, version uint16) (int64, *producerEntry, []byte, error) {
	size, minN := snapshotEntryV2, 0
	if version == 1 {
		size, minN = snapshotEntryV1, 1
	}
	if len(p) < size {
		return 0, nil, nil, snapshotCorrupt("truncated entry")
	}
	pid := int64(binary.BigEndian.Uint64(p))
	e := newProducerEntry()
	e.epoch, e.n = int16(binary.BigEndian.Uint16(p[8:])), int(p[10])
	if version > 1 {
		e.coordinatorEpoch = int32(binary.BigEndian.Uint32(p[11:]))
		e.txnFirst = int64(binary.BigEndian.Uint64(p[15:]))
		e.markerOffset = int64(binary.BigEndian.Uint64(p[23:]))
	}
	p = p[size:]
	if e.n < minN || e.n > producerBatchesCached || len(p) < e.n*snapshotBatchSize {
		return 0, nil, nil, snapshotCorrupt("bad batch count")
	}
	for j := 0; j < e.n; j++ {
		e.batches[j] = batchMeta{
			firstSeq: int32(binary.BigEndian.Uint32(p)), lastSeq: int32(binary.BigEndian.Uint32(p[4:])),
			firstOffset: int64(binary.BigEndian.Uint64(p[8:])), lastOffset: int64(binary.BigEndian.Uint64(p[16:])),
		}
		p = p[snapshotBatchSize:]
	}
	return pid, e, p, nil
}

func decodeAborted(p []byte) ([]AbortedTxn, error) {
	if len(p) < 4 {
		return nil, snapshotCorrupt("missing aborted transactions")
	}
	n := int(binary.BigEndian.Uint32(p))
	p = p[4:]
	if len(p) != n*snapshotAbortedLen {
		return nil, snapshotCorrupt("bad aborted transaction count")
	}
	var out []AbortedTxn
	for ; len(p) > 0; p = p[snapshotAbortedLen:] {
		out = append(out, AbortedTxn{ProducerID: int64(binary.BigEndian.Uint64(p)),
			FirstOffset: int64(binary.BigEndian.Uint64(p[8:])), LastOffset: int64(binary.BigEndian.Uint64(p[16:]))})
	}
	return out, nil
}
