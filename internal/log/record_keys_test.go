package log

import (
	"errors"
	"slices"
	"testing"

	"github.com/runnel-io/runnel/internal/log/logtest"
	"github.com/runnel-io/runnel/internal/vfs"
)

// A compacted log's leader refuses a batch holding records without a key, naming each
// by its index in the batch with Kafka's message, and writes nothing; a key of zero
// bytes is a key. Compressed batches are looked into.
func TestCompactedLogRefusesKeylessRecords(t *testing.T) {
	for _, codec := range []int8{0, 1, 4} { // none, gzip, zstd
		l := openLog(t, memEnv(), compactConfig(DefaultConfig()))
		recs := []kv{rec("a", "1", 1000), {value: []byte("x"), ts: 1000}, {key: []byte{}, value: []byte("y"), ts: 1000}, {value: []byte("z"), ts: 1000}}
		_, err := l.AppendAsLeader(keyedBatch(t, batchSpec{recs: recs, codec: codec}), 1)
		var re *RecordErrors
		if !errors.As(err, &re) || !errors.Is(err, ErrInvalidRecord) {
			t.Fatalf("codec %d: append = %v, want RecordErrors wrapping ErrInvalidRecord", codec, err)
		}
		var idx []int32
		for _, e := range re.Errors {
			idx = append(idx, e.BatchIndex)
			if want := "Compacted topic cannot accept message without key in topic partition topic-0."; e.Message != want {
				t.Fatalf("codec %d: message %q, want %q", codec, e.Message, want)
			}
		}
		if !slices.Equal(idx, []int32{1, 3}) {
			t.Fatalf("codec %d: refused records %v, want [1 3]", codec, idx)
		}
		want := "One or more records have been rejected due to 2 record errors in total, and only showing the first three errors at most: " +
			"[RecordError(batchIndex=1, message='Compacted topic cannot accept message without key in topic partition topic-0.'), " +
			"RecordError(batchIndex=3, message='Compacted topic cannot accept message without key in topic partition topic-0.')]"
		if err.Error() != want {
			t.Fatalf("codec %d: error %q, want Kafka's %q", codec, err, want)
		}
		if leo := l.LogEndOffset(); leo != 0 {
			t.Fatalf("codec %d: log end %d after a refused append, want 0", codec, leo)
		}
		if _, err := l.AppendAsLeader(keyedBatch(t, batchSpec{recs: []kv{rec("a", "1", 1000), {key: []byte{}, value: []byte("y"), ts: 1000}}, codec: codec}), 1); err != nil {
			t.Fatalf("codec %d: keyed batch: %v", codec, err)
		}
	}
}

// Only a compacted log's leader checks keys: a delete-policy log takes keyless
// records, and a follower copies whatever its leader stored.
func TestKeylessRecordsElsewhere(t *testing.T) {
	keyless := []kv{{value: []byte("x"), ts: 1000}}
	l := openLog(t, memEnv(), DefaultConfig())
	if _, err := l.AppendAsLeader(keyedBatch(t, batchSpec{recs: keyless}), 1); err != nil {
		t.Fatalf("delete policy: %v", err)
	}
	c := openLog(t, memEnv(), compactConfig(DefaultConfig()))
	if _, err := c.AppendAsFollower(keyedBatch(t, batchSpec{recs: keyless})); err != nil {
		t.Fatalf("follower of a compacted log: %v", err)
	}
}

// Checking an uncompressed batch whose records all have keys allocates nothing.
func TestCheckKeysAllocs(t *testing.T) {
	batch := logtest.BatchWith(logtest.BatchOptions{Records: 100, ValueSize: 100, KeySize: 16})
	if err := checkKeys(batch, TopicPartition{Topic: "t"}); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { _ = checkKeys(batch, TopicPartition{Topic: "t"}) }); n != 0 {
		t.Fatalf("checkKeys allocates %.1f times per batch, want 0", n)
	}
}

// BenchmarkAppendCompacted100B is BenchmarkAppend100B/nosync on a compacted log
// (records with 16-byte keys): the cost of reading every record's key length.
func BenchmarkAppendCompacted100B(b *testing.B) {
	l, err := Open(Options{FS: vfs.OS(), Dir: b.TempDir() + "/bench-0", Config: compactConfig(DefaultConfig())})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	batch := logtest.BatchWith(logtest.BatchOptions{Records: 100, ValueSize: 100, KeySize: 16})
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.AppendAsLeader(batch, 1); err != nil {
			b.Fatal(err)
		}
	}
}
