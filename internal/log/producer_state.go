package log

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"sort"

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
	// batches holds the last n batches, oldest first. Invariant: 1 <= n <= 5.
	batches [producerBatchesCached]batchMeta
	n       int
}

func (e *producerEntry) last() batchMeta { return e.batches[e.n-1] }

func (e *producerEntry) push(m batchMeta) {
	if e.n == producerBatchesCached {
		copy(e.batches[:], e.batches[1:])
		e.n--
	}
	e.batches[e.n] = m
	e.n++
}

// producerState is Kafka's ProducerStateManager for idempotent producers (no
// transactions). It has no lock: Log.mu guards it.
type producerState struct {
	producers map[int64]*producerEntry
}

func newProducerState() *producerState {
	return &producerState{producers: map[int64]*producerEntry{}}
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
	first, last := batchSeqs(b)
	e := ps.producers[pid]
	if e == nil {
		e = &producerEntry{}
		ps.producers[pid] = e
	}
	if e.n > 0 && b.ProducerEpoch() != e.epoch {
		e.n = 0
	}
	e.epoch = b.ProducerEpoch()
	e.push(batchMeta{firstSeq: first, lastSeq: last, firstOffset: b.BaseOffset(), lastOffset: b.LastOffset()})
}

// truncateHead forgets the producers whose last batch is below the log start offset.
func (ps *producerState) truncateHead(logStart int64) {
	for pid, e := range ps.producers {
		if e.last().lastOffset < logStart {
			delete(ps.producers, pid)
		}
	}
}

func (ps *producerState) clear() { clear(ps.producers) }

// Snapshot file format (<offset>.snapshot, the state after every batch below offset),
// big endian:
//
//	version int16 (1) | crc32c uint32 of the rest | count int32 | count entries:
//	producerId int64 | epoch int16 | n int8 | n x (firstSeq int32, lastSeq int32, firstOffset int64, lastOffset int64)
const (
	snapshotVersion    = 1
	snapshotHeaderSize = 2 + 4 + 4
	snapshotBatchSize  = 4 + 4 + 8 + 8
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func (ps *producerState) encode() []byte {
	pids := make([]int64, 0, len(ps.producers))
	for pid := range ps.producers {
		pids = append(pids, pid)
	}
	sort.Slice(pids, func(i, j int) bool { return pids[i] < pids[j] })
	b := make([]byte, snapshotHeaderSize, snapshotHeaderSize+len(pids)*(11+producerBatchesCached*snapshotBatchSize))
	binary.BigEndian.PutUint16(b, snapshotVersion)
	binary.BigEndian.PutUint32(b[6:], uint32(len(pids)))
	for _, pid := range pids {
		e := ps.producers[pid]
		b = binary.BigEndian.AppendUint64(b, uint64(pid))
		b = binary.BigEndian.AppendUint16(b, uint16(e.epoch))
		b = append(b, byte(e.n))
		for _, m := range e.batches[:e.n] {
			b = binary.BigEndian.AppendUint32(b, uint32(m.firstSeq))
			b = binary.BigEndian.AppendUint32(b, uint32(m.lastSeq))
			b = binary.BigEndian.AppendUint64(b, uint64(m.firstOffset))
			b = binary.BigEndian.AppendUint64(b, uint64(m.lastOffset))
		}
	}
	binary.BigEndian.PutUint32(b[2:], crc32.Checksum(b[6:], castagnoli))
	return b
}

// decodeProducerSnapshot parses a snapshot; any inconsistency is ErrCorruption.
func decodeProducerSnapshot(b []byte) (map[int64]*producerEntry, error) {
	bad := func(why string) error { return fmt.Errorf("%w: producer snapshot: %s", ErrCorruption, why) }
	if len(b) < snapshotHeaderSize || binary.BigEndian.Uint16(b) != snapshotVersion {
		return nil, bad("short or unknown version")
	}
	if crc32.Checksum(b[6:], castagnoli) != binary.BigEndian.Uint32(b[2:]) {
		return nil, bad("CRC mismatch")
	}
	count := int(binary.BigEndian.Uint32(b[6:]))
	out := make(map[int64]*producerEntry, min(count, 1<<16))
	p := b[snapshotHeaderSize:]
	for i := 0; i < count; i++ {
		if len(p) < 11 {
			return nil, bad("truncated entry")
		}
		e := &producerEntry{epoch: int16(binary.BigEndian.Uint16(p[8:])), n: int(p[10])}
		pid := int64(binary.BigEndian.Uint64(p))
		p = p[11:]
		if e.n < 1 || e.n > producerBatchesCached || len(p) < e.n*snapshotBatchSize {
			return nil, bad("bad batch count")
		}
		for j := 0; j < e.n; j++ {
			e.batches[j] = batchMeta{
				firstSeq: int32(binary.BigEndian.Uint32(p)), lastSeq: int32(binary.BigEndian.Uint32(p[4:])),
				firstOffset: int64(binary.BigEndian.Uint64(p[8:])), lastOffset: int64(binary.BigEndian.Uint64(p[16:])),
			}
			p = p[snapshotBatchSize:]
		}
		out[pid] = e
	}
	if len(p) != 0 {
		return nil, bad("trailing bytes")
	}
	return out, nil
}
