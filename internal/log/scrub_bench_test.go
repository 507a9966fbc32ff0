package log

import (
	"context"
	"log/slog"
	"testing"

	"github.com/runnel-io/runnel/internal/log/logtest"
	"github.com/runnel-io/runnel/internal/vfs"
)

// BenchmarkVerify measures the scrubber's speed (Log.Verify, unpaced): every batch's
// CRC-32C, framing and offsets, and the index entries, of 15 rolled 8 MiB segments of
// 1 KiB records in ~1 MiB uncompressed batches, read from a real file system (the
// page cache, after the first pass: the CPU cost, not the disk's). The MB/s it
// reports is docs/benchmarks.md's "scrubber throughput".
func BenchmarkVerify(b *testing.B) {
	dir := b.TempDir()
	m, err := NewManager(ManagerOptions{FS: vfs.OS(), DataDir: dir, Defaults: DefaultConfig(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	cfg := DefaultConfig()
	cfg.SegmentBytes = 8 << 20
	l, err := m.GetOrCreate(TopicPartition{Topic: "bench"}, cfg)
	if err != nil {
		b.Fatal(err)
	}
	batch := logtest.BatchWith(logtest.BatchOptions{Records: 1000, ValueSize: 1024, Timestamp: 1})
	for l.Size() < 128<<20 {
		if _, err := l.AppendAsLeader(batch, 0); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Flush(l.LogEndOffset()); err != nil {
		b.Fatal(err)
	}
	r, err := l.Verify(context.Background(), nil) // warms the page cache
	if err != nil || r.Corrupt != 0 {
		b.Fatalf("Verify: %+v, %v", r, err)
	}
	b.SetBytes(r.Bytes)
	b.ResetTimer()
	for b.Loop() {
		if _, err := l.Verify(context.Background(), nil); err != nil {
			b.Fatal(err)
		}
	}
}
