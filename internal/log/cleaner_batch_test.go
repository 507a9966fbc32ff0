package log

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/recordbatch"
)

// readBatches returns every batch of l, in order.
func readBatches(t *testing.T, l *Log) []recordbatch.Batch {
	t.Helper()
	var out []recordbatch.Batch
	leo := l.LogEndOffset()
	for off := l.LogStartOffset(); off < leo; {
		ri, err := l.Read(off, 1<<20, leo, true)
		if err != nil || ri.Size == 0 {
			break
		}
		data, _ := ri.AppendTo(nil)
		_, bs := decodeBatches(t, data)
		out = append(out, bs...)
		off = bs[len(bs)-1].NextOffset()
	}
	return out
}

func TestCleanerCompressedBatches(t *testing.T) {
	for _, codec := range []int8{1, 2, 3, 4} { // gzip, snappy, lz4, zstd
		t.Run(fmt.Sprint("codec", codec), func(t *testing.T) {
			cfg := compactConfig(DefaultConfig())
			l := openLog(t, memEnv(), cfg)
			m, rng := newModel(), rand.New(rand.NewSource(21))
			leo := appendUpdates(t, m, l, rng, 60, 8, 1000, codec)
			// A batch whose every record survives is kept byte for byte.
			keepAll := keyedBatch(t, batchSpec{recs: []kv{rec("only-a", "1", 5000), rec("only-b", "1", 5001)}, codec: codec})
			m.appendKV(t, l, batchSpec{recs: []kv{rec("only-a", "1", 5000), rec("only-b", "1", 5001)}, codec: codec})
			leo = l.LogEndOffset()
			if s, _ := cleanNow(t, l, 1<<20, time.Now()); s.RecordsRemoved == 0 {
				t.Fatal("nothing removed")
			}
			got := readLog(t, l)
			m.check(t, got, leo, leo, false)
			if want := m.compactedOffsets(leo, leo, false); !slices.Equal(offsetsOf(got), want) {
				t.Fatalf("\n got %v\nwant %v", offsetsOf(got), want)
			}
			bs := readBatches(t, l)
			for _, b := range bs {
				if b.Compression() != codec {
					t.Fatalf("batch at %d has codec %d, want %d", b.BaseOffset(), b.Compression(), codec)
				}
			}
			last := bs[len(bs)-1]
			// From the CRC on: the leader stamped the base offset and epoch before it.
			if !bytes.Equal(last[17:], keepAll[17:]) {
				t.Fatal("a batch that kept every record was rewritten")
			}
		})
	}
}

func TestCleanerRebuiltBatchKeepsItsHeader(t *testing.T) {
	cfg := compactConfig(DefaultConfig())
	l := openLog(t, memEnv(), cfg)
	m := newModel()
	spec := batchSpec{recs: []kv{rec("a", "1", 1000), rec("b", "1", 1001), rec("c", "1", 1002), rec("d", "1", 1003)},
		producerID: 77, epoch: 3, baseSeq: 10}
	m.appendKV(t, l, spec)
	before := readBatches(t, l)[0]
	m.appendKV(t, l, batchSpec{recs: []kv{rec("a", "2", 2000), rec("d", "2", 2001)}, producerID: 77, epoch: 3, baseSeq: 14})
	leo := l.LogEndOffset()
	cleanNow(t, l, 1<<20, time.Now())
	m.check(t, readLog(t, l), leo, leo, false)
	after := readBatches(t, l)[0]
	if after.RecordCount() != 2 || after.BaseOffset() != 0 || after.LastOffsetDelta() != 3 {
		t.Fatalf("rebuilt batch: base %d, %d records, last offset delta %d", after.BaseOffset(), after.RecordCount(), after.LastOffsetDelta())
	}
	if after.ProducerID() != 77 || after.ProducerEpoch() != 3 || after.BaseSequence() != 10 ||
		after.Attributes() != before.Attributes() || after.PartitionLeaderEpoch() != before.PartitionLeaderEpoch() ||
		after.BaseTimestamp() != before.BaseTimestamp() {
		t.Fatalf("header changed: %x, was %x", []byte(after[:recordbatch.HeaderSize]), []byte(before[:recordbatch.HeaderSize]))
	}
	if after.MaxTimestamp() != 1002 {
		t.Fatalf("max timestamp %d, want 1002 (the kept records' largest)", after.MaxTimestamp())
	}
	// The producer state still recognises a retry of the last batch after a restart.
	l.Close()
	r := openLog(t, testEnv{fs: l.fs, dir: l.dir}, cfg)
	if e, seq, ok := r.ProducerState(77); !ok || e != 3 || seq != 15 {
		t.Fatalf("producer state after cleaning and reopening: epoch %d last seq %d ok %v", e, seq, ok)
	}
}

func TestCleanerKeepsKeylessRecordsAndControlBatches(t *testing.T) {
	cfg := compactConfig(DefaultConfig())
	l := openLog(t, memEnv(), cfg)
	m := newModel()
	// A leader refuses keyless records on a compacted topic; a log may still hold some
	// written before that, which cleaning must keep (here copied as a follower does).
	if _, err := l.AppendAsFollower(keyedBatch(t, batchSpec{recs: []kv{{value: []byte("no key"), ts: 1000}, rec("a", "1", 1000)}})); err != nil {
		t.Fatal(err)
	}
	ctrl := controlBatch(l.LogEndOffset())
	if _, err := l.AppendAsFollower(ctrl); err != nil {
		t.Fatal(err)
	}
	m.appendKV(t, l, batchSpec{recs: []kv{rec("a", "2", 2000)}})
	leo := l.LogEndOffset()
	cleanNow(t, l, 1<<20, time.Now())
	bs := readBatches(t, l)
	if len(bs) != 3 || !bs[1].IsControl() || !bytes.Equal(bs[1][12:], ctrl[12:]) {
		t.Fatalf("batches after cleaning: %d, want the control batch kept as is", len(bs))
	}
	got := readLog(t, l)
	if offs := offsetsOf(got); !slices.Equal(offs, []int64{0, 2, 3}) || leo != 4 {
		t.Fatalf("offsets %v (log end %d), want the keyless record, the control record and a=2", offs, leo)
	}
}

// controlBatch is a transaction commit marker at base offset base.
func controlBatch(base int64) []byte {
	var b []byte
	b = binary.BigEndian.AppendUint64(b, uint64(base))
	b = binary.BigEndian.AppendUint32(b, 0) // length, set below
	b = binary.BigEndian.AppendUint32(b, 0) // leader epoch
	b = append(b, 2, 0, 0, 0, 0)            // magic, crc
	b = binary.BigEndian.AppendUint16(b, recordbatch.ControlFlag|recordbatch.TransactionalFlag)
	b = binary.BigEndian.AppendUint32(b, 0)          // last offset delta
	b = binary.BigEndian.AppendUint64(b, 1000)       // base timestamp
	b = binary.BigEndian.AppendUint64(b, 1000)       // max timestamp
	b = binary.BigEndian.AppendUint64(b, 9)          // producer id
	b = binary.BigEndian.AppendUint16(b, 0)          // epoch
	b = binary.BigEndian.AppendUint32(b, 0xffffffff) // base sequence
	b = binary.BigEndian.AppendUint32(b, 1)          // records
	key := []byte{0, 0, 0, 1}                        // version 0, commit
	val := []byte{0, 0, 0, 0, 0, 0}                  // version 0, coordinator epoch 0
	body := []byte{0, 0, 0, byte(len(key) * 2)}      // attributes, ts delta, offset delta, key length
	body = append(append(body, key...), byte(len(val)*2))
	body = append(append(body, val...), 0) // no headers
	b = binary.AppendVarint(b, int64(len(body)))
	b = append(b, body...)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], castagnoli))
	return b
}

// Transactional batches are neither mapped nor filtered: an aborted record must not
// supersede a committed one.
func TestCleanerLeavesTransactionalBatchesAlone(t *testing.T) {
	cfg := compactConfig(DefaultConfig())
	l := openLog(t, memEnv(), cfg)
	m := newModel()
	m.appendKV(t, l, batchSpec{recs: []kv{rec("a", "committed", 1000), rec("b", "1", 1000)}})
	txn := batchSpec{recs: []kv{rec("a", "maybe-aborted", 2000), rec("a", "again", 2001)}, producerID: 5, transactional: true}
	m.appendKV(t, l, txn)
	m.appendKV(t, l, batchSpec{recs: []kv{rec("b", "2", 3000)}})
	cleanNow(t, l, 1<<20, time.Now())
	if got := offsetsOf(readLog(t, l)); !slices.Equal(got, []int64{0, 2, 3, 4}) {
		t.Fatalf("offsets %v, want a=committed and the whole transactional batch kept, b=1 gone", got)
	}
}
