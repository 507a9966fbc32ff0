package log

import (
	"testing"

	"github.com/runnel-io/runnel/internal/log/logtest"
	"github.com/runnel-io/runnel/internal/vfs"
)

// A rolled segment's indexes keep no slack: the active segment's buffers grow by
// doubling, and a log of many segments would otherwise hold up to twice its indexes.
func TestRolledSegmentIndexesTrimmed(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SegmentBytes = 64 << 10
	cfg.IndexIntervalBytes = 1
	l, err := Open(Options{FS: vfs.OS(), Dir: t.TempDir() + "/t-0", Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for range 300 {
		if _, err := l.AppendAsLeader(logtest.Batch(1, 1000), 0); err != nil {
			t.Fatal(err)
		}
	}
	ss := l.segs()
	if len(ss) < 3 {
		t.Fatalf("%d segments, want several", len(ss))
	}
	for _, s := range ss[:len(ss)-1] {
		for _, x := range []*entryIndex{&s.index.entryIndex, &s.timeIndex.entryIndex} {
			if len(x.buf) == 0 || cap(x.buf) != len(x.buf) {
				t.Errorf("segment %d: index %s holds %d bytes in a buffer of %d", s.baseOffset, x.path, len(x.buf), cap(x.buf))
			}
		}
	}
}
