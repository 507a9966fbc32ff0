package mirror

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
)

// run says that source offsets Src..Src+N-1 were mirrored to target offsets
// Tgt..Tgt+N-1, one for one.
type run struct {
	Src, Tgt, N int64
}

// chunkRuns is how many runs one progress record of the map holds. A worker rewrites
// its current chunk in every transaction, so this bounds the write amplification
// (at most chunkRuns*15 bytes per transaction) as well as the number of keys.
const chunkRuns = 128

// offsetMap is one partition's exact source → target offset map: runs sorted by Src
// (and so by Tgt), never overlapping. The runs are stored in chunks of chunkRuns
// (the last one filling): runs[0] is the first run of chunk first. It is not safe
// for concurrent use.
type offsetMap struct {
	runs  []run
	first int
}

// lastChunk is the index of the chunk being filled.
func (m *offsetMap) lastChunk() int { return m.first + max(len(m.runs)-1, 0)/chunkRuns }

// chunkOf is the chunk that run i is in.
func (m *offsetMap) chunkOf(i int) int { return m.first + i/chunkRuns }

// chunk returns chunk n's runs.
func (m *offsetMap) chunk(n int) []run {
	lo := (n - m.first) * chunkRuns
	if lo < 0 || lo >= len(m.runs) {
		return nil
	}
	return m.runs[lo:min(lo+chunkRuns, len(m.runs))]
}

// add records that source offset src became target offset tgt. Offsets must grow.
func (m *offsetMap) add(src, tgt int64) {
	if n := len(m.runs); n > 0 {
		last := &m.runs[n-1]
		if src == last.Src+last.N && tgt == last.Tgt+last.N {
			last.N++
			return
		}
	}
	m.runs = append(m.runs, run{src, tgt, 1})
}

// translate returns the target offset of the first mirrored record at or after
// source offset o, given that every source offset below next has been mirrored or
// skipped, and targetEnd is the target offset after the last mirrored record. ok is
// false when o is past next: that record is not mirrored yet, so its translation is
// not known.
func (m *offsetMap) translate(o, next, targetEnd int64) (int64, bool) {
	if o > next {
		return 0, false
	}
	i := sort.Search(len(m.runs), func(i int) bool { return m.runs[i].Src+m.runs[i].N > o })
	if i == len(m.runs) {
		return targetEnd, true
	}
	r := m.runs[i]
	if o < r.Src {
		return r.Tgt, true
	}
	return r.Tgt + o - r.Src, true
}

// trimBelow drops the whole chunks whose target offsets all lie below start (the
// target's log start offset): those records are gone. It returns the chunks dropped.
func (m *offsetMap) trimBelow(start int64) []int {
	var dropped []int
	for len(m.runs) > chunkRuns {
		last := m.runs[chunkRuns-1]
		if last.Tgt+last.N > start {
			break
		}
		dropped = append(dropped, m.first)
		m.runs = append(m.runs[:0:0], m.runs[chunkRuns:]...)
		m.first++
	}
	return dropped
}

// encodeRuns appends runs as varints: the count, then each run's Src (delta from the
// previous run's end), Tgt (delta from the previous run's end) and N.
func encodeRuns(b []byte, runs []run) []byte {
	b = binary.AppendUvarint(b, uint64(len(runs)))
	var srcEnd, tgtEnd int64
	for i, r := range runs {
		if i == 0 {
			b = binary.AppendVarint(b, r.Src)
			b = binary.AppendVarint(b, r.Tgt)
		} else {
			b = binary.AppendUvarint(b, uint64(r.Src-srcEnd))
			b = binary.AppendUvarint(b, uint64(r.Tgt-tgtEnd))
		}
		b = binary.AppendUvarint(b, uint64(r.N))
		srcEnd, tgtEnd = r.Src+r.N, r.Tgt+r.N
	}
	return b
}

var errBadRuns = errors.New("bad offset map chunk")

// decodeRuns reads what encodeRuns wrote.
func decodeRuns(b []byte) ([]run, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return nil, errBadRuns
	}
	b = b[k:]
	runs := make([]run, 0, n)
	var srcEnd, tgtEnd int64
	for i := uint64(0); i < n; i++ {
		var v [3]int64
		for j := range v {
			var k int
			if i == 0 && j < 2 {
				v[j], k = binary.Varint(b)
			} else {
				var u uint64
				u, k = binary.Uvarint(b)
				v[j] = int64(u)
			}
			if k <= 0 {
				return nil, fmt.Errorf("%w: run %d of %d truncated", errBadRuns, i, n)
			}
			b = b[k:]
		}
		r := run{Src: v[0], Tgt: v[1], N: v[2]}
		if i > 0 {
			r.Src += srcEnd
			r.Tgt += tgtEnd
		}
		if r.N <= 0 {
			return nil, fmt.Errorf("%w: run %d is empty", errBadRuns, i)
		}
		runs = append(runs, r)
		srcEnd, tgtEnd = r.Src+r.N, r.Tgt+r.N
	}
	return runs, nil
}
