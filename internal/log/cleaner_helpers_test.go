package log

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/recordbatch"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kv is one record of a compacted topic in a test: a nil value is a tombstone, a nil
// key a keyless record.
type kv struct {
	key   []byte
	value []byte
	ts    int64
}

func rec(key, value string, ts int64) kv {
	r := kv{key: []byte(key), value: []byte(value), ts: ts}
	if value == "" {
		r.value = nil
	}
	return r
}

// batchSpec describes a test batch: its records, codec and producer.
type batchSpec struct {
	recs       []kv
	codec      int8
	producerID int64 // -1 or 0 = none
	epoch      int16
	baseSeq    int32
	// transactional sets the transactional attribute (with producerID).
	transactional bool
}

// keyedBatch encodes a v2 batch at base offset 0 (the leader stamps it).
func keyedBatch(t testing.TB, s batchSpec) []byte {
	t.Helper()
	base, maxTs := s.recs[0].ts, s.recs[0].ts
	var body []byte
	for i, r := range s.recs {
		maxTs = max(maxTs, r.ts)
		kr := kmsg.Record{TimestampDelta64: r.ts - base, OffsetDelta: int32(i), Key: r.key, Value: r.value}
		kr.Length = int32(len(kr.AppendTo(nil)) - 1)
		body = kr.AppendTo(body)
	}
	if s.codec != 0 {
		comp, err := kgo.DefaultCompressor(codecByID[s.codec]())
		if err != nil {
			t.Fatal(err)
		}
		out, used := comp.Compress(new(bytes.Buffer), body)
		if int8(used) != s.codec {
			t.Fatalf("compressed with %d, want %d", used, s.codec)
		}
		body = append([]byte(nil), out...)
	}
	b := kmsg.RecordBatch{
		Length: int32(49 + len(body)), PartitionLeaderEpoch: -1, Magic: 2, Attributes: int16(s.codec),
		LastOffsetDelta: int32(len(s.recs) - 1), FirstTimestamp: base, MaxTimestamp: maxTs,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: int32(len(s.recs)), Records: body,
	}
	if s.producerID > 0 {
		b.ProducerID, b.ProducerEpoch, b.FirstSequence = s.producerID, s.epoch, s.baseSeq
	}
	if s.transactional {
		b.Attributes |= recordbatch.TransactionalFlag
	}
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], castagnoli))
	return out
}

// decoded is a record read back from the log.
type decoded struct {
	offset int64
	key    []byte
	value  []byte
	ts     int64
}

func (d decoded) String() string {
	return fmt.Sprintf("%d:%q=%q", d.offset, d.key, d.value)
}

// decodeBatches decodes concatenated batches, compressed or not, checking each
// batch's CRC and that its records lie within its offsets.
func decodeBatches(t testing.TB, data []byte) ([]decoded, []recordbatch.Batch) {
	t.Helper()
	dec := kgo.DefaultDecompressor()
	var out []decoded
	var batches []recordbatch.Batch
	for len(data) > 0 {
		b, rest, err := recordbatch.Next(data, 0)
		if err != nil {
			t.Fatalf("cutting batch: %v", err)
		}
		data = rest
		if err := b.Verify(); err != nil {
			t.Fatalf("batch at %d: %v", b.BaseOffset(), err)
		}
		batches = append(batches, b)
		recs, err := dec.Decompress(b[recordbatch.HeaderSize:], kgo.CompressionCodecType(b.Compression()))
		if err != nil {
			t.Fatalf("decompressing batch at %d: %v", b.BaseOffset(), err)
		}
		for i := int32(0); i < b.RecordCount(); i++ {
			length, n := binary.Varint(recs)
			var r kmsg.Record
			if n <= 0 || int(length)+n > len(recs) || r.ReadFrom(recs[:n+int(length)]) != nil {
				t.Fatalf("batch at %d: bad record %d", b.BaseOffset(), i)
			}
			recs = recs[n+int(length):]
			off := b.BaseOffset() + int64(r.OffsetDelta)
			if off > b.LastOffset() {
				t.Fatalf("record offset %d past the batch's last offset %d", off, b.LastOffset())
			}
			out = append(out, decoded{offset: off, key: r.Key, value: r.Value, ts: b.BaseTimestamp() + r.TimestampDelta64})
		}
		if len(recs) != 0 {
			t.Fatalf("batch at %d: %d trailing bytes", b.BaseOffset(), len(recs))
		}
	}
	return out, batches
}

// readLog reads every record of l from the log start to the log end, checking that
// offsets strictly increase.
func readLog(t testing.TB, l *Log) []decoded {
	t.Helper()
	var out []decoded
	leo := l.LogEndOffset()
	for off := l.LogStartOffset(); off < leo; {
		ri, err := l.Read(off, 64<<10, leo, true)
		if err != nil {
			t.Fatalf("Read(%d): %v", off, err)
		}
		if ri.Size == 0 {
			break
		}
		data, err := ri.AppendTo(nil)
		if err != nil {
			t.Fatal(err)
		}
		recs, batches := decodeBatches(t, data)
		for _, r := range recs {
			if r.offset >= off {
				if len(out) > 0 && r.offset <= out[len(out)-1].offset {
					t.Fatalf("offset %d after %d", r.offset, out[len(out)-1].offset)
				}
				out = append(out, r)
			}
		}
		off = batches[len(batches)-1].NextOffset()
	}
	return out
}

// model remembers every record appended, by offset.
type model struct {
	mu   sync.Mutex
	recs map[int64]kv
}

func newModel() *model { return &model{recs: map[int64]kv{}} }

// appendKV appends the records as one batch and records their offsets.
func (m *model) appendKV(t testing.TB, l *Log, s batchSpec) AppendInfo {
	t.Helper()
	info, err := l.AppendAsLeader(keyedBatch(t, s), 1)
	if err != nil {
		t.Fatalf("AppendAsLeader: %v", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, r := range s.recs {
		m.recs[info.FirstOffset+int64(i)] = r
	}
	return info
}

// latest returns, for every key, the offset of its last record below end.
func (m *model) latest(end int64) map[string]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]int64{}
	for off, r := range m.recs {
		if off < end && r.key != nil {
			if cur, ok := out[string(r.key)]; !ok || off > cur {
				out[string(r.key)] = off
			}
		}
	}
	return out
}

// check verifies that got is a compaction of the model: every record read is the
// one appended at its offset, the latest record of every key below end is there
// (tombstones too unless dropTombstones), and from keepAllFrom on nothing is missing.
func (m *model) check(t testing.TB, got []decoded, end, keepAllFrom int64, dropTombstones bool) {
	t.Helper()
	m.mu.Lock()
	seen := map[int64]bool{}
	for _, r := range got {
		want, ok := m.recs[r.offset]
		if !ok || !bytes.Equal(want.key, r.key) || !bytes.Equal(want.value, r.value) || (want.value == nil) != (r.value == nil) || want.ts != r.ts {
			m.mu.Unlock()
			t.Fatalf("read %v, appended %q=%q ts %d (ok %v)", r, want.key, want.value, want.ts, ok)
		}
		seen[r.offset] = true
	}
	var missing []int64
	for off, r := range m.recs {
		if !seen[off] && (off >= keepAllFrom || r.key == nil) {
			missing = append(missing, off)
		}
	}
	m.mu.Unlock()
	if len(missing) > 0 {
		sort.Slice(missing, func(i, j int) bool { return missing[i] < missing[j] })
		t.Fatalf("records from offset %d on are missing: %v", keepAllFrom, missing)
	}
	for k, off := range m.latest(end) {
		m.mu.Lock()
		tomb := m.recs[off].value == nil
		m.mu.Unlock()
		if !seen[off] && !(tomb && dropTombstones) {
			t.Fatalf("the latest record of key %q (offset %d) is gone", k, off)
		}
	}
}

// compactedOffsets returns the offsets a full compaction of [0, end) keeps, plus
// every offset from end to leo.
func (m *model) compactedOffsets(end, leo int64, dropTombstones bool) []int64 {
	latest := m.latest(end)
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []int64
	for off := int64(0); off < leo; off++ {
		r, ok := m.recs[off]
		switch {
		case !ok:
		case off >= end || r.key == nil:
			out = append(out, off)
		case latest[string(r.key)] == off && !(r.value == nil && dropTombstones):
			out = append(out, off)
		}
	}
	return out
}

func offsetsOf(recs []decoded) []int64 {
	out := make([]int64, len(recs))
	for i, r := range recs {
		out[i] = r.offset
	}
	return out
}

// compactConfig is cfg made compacted, cleaned whatever the dirty ratio.
func compactConfig(cfg Config) Config {
	cfg.CleanupPolicy = CleanupPolicyCompact
	cfg.MinCleanableDirtyRatio = 0
	cfg.MaxCompactionLagMs = 1<<63 - 1
	cfg.DeleteRetentionMs = 1000
	return cfg
}

// testClock is a settable clock.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func newTestClock() *testClock { return &testClock{now: time.UnixMilli(1_700_000_000_000)} }

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func withNow(f func() time.Time) openOpt { return func(o *Options) { o.Now = f } }

// cleanNow makes everything appended cleanable (rolls, flushes, high watermark at
// the end) and runs one pass with a fresh map of memory bytes.
func cleanNow(t testing.TB, l *Log, memory int64, now time.Time) (PassStats, bool) {
	t.Helper()
	prepareClean(t, l)
	s, ok, err := l.clean(newCleanerResources(memory, nil, nil), now)
	if err != nil {
		t.Fatalf("clean: %v", err)
	}
	return s, ok
}

func prepareClean(t testing.TB, l *Log) {
	t.Helper()
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	l.SetHighWatermark(l.LogEndOffset())
}

// checkSegments fails unless every batch of every segment verifies and lies within
// the segment's offsets [base, next base).
func checkSegments(t testing.TB, l *Log) {
	t.Helper()
	ss := l.segs()
	for i, seg := range ss {
		end := l.LogEndOffset()
		if i+1 < len(ss) {
			end = ss[i+1].baseOffset
		}
		size := seg.size.Load()
		valid, err := scanBatches(seg.file, 0, size, true, func(b recordbatch.Batch, _ int64) error {
			if b.BaseOffset() < seg.baseOffset || b.LastOffset() >= end {
				return fmt.Errorf("batch [%d, %d] outside segment [%d, %d)", b.BaseOffset(), b.LastOffset(), seg.baseOffset, end)
			}
			return nil
		})
		if err != nil || valid != size {
			t.Fatalf("segment %d: %v (valid %d of %d)", seg.baseOffset, err, valid, size)
		}
	}
}
