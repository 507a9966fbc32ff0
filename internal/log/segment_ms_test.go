package log

import (
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/log/logtest"
	"github.com/runnel-io/runnel/internal/vfs"
)

// segment.ms is measured in record time, from the max timestamp of the segment's first
// batch, as Kafka's; the clock survives a restart, since the timestamp is read back
// from the segment file (it used to be the wall clock of the first append, lost with
// the process).
func TestSegmentMsSurvivesRestart(t *testing.T) {
	dir := t.TempDir() + "/t-0"
	cfg := DefaultConfig()
	cfg.SegmentMs = 1000
	open := func() *Log {
		t.Helper()
		l, err := Open(Options{FS: vfs.OS(), Dir: dir, Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	ts := time.Now().Add(-time.Hour).UnixMilli() // record time, unrelated to the wall clock
	appendAt := func(l *Log, at int64) {
		t.Helper()
		if _, err := l.AppendAsLeader(logtest.BatchWith(logtest.BatchOptions{Records: 1, ValueSize: 10, Timestamp: at}), 0); err != nil {
			t.Fatal(err)
		}
	}
	l := open()
	appendAt(l, ts)
	appendAt(l, ts+900) // within segment.ms of the first batch: same segment
	if n := len(l.segs()); n != 1 {
		t.Fatalf("%d segments after two batches 900 ms apart in record time, want 1", n)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = open()
	defer l.Close()
	appendAt(l, ts+1500) // 1500 ms after the first batch: roll, restart or not
	if n := len(l.segs()); n != 2 {
		t.Fatalf("%d segments after a batch 1500 ms past the first one (segment.ms 1000) across a restart, want 2", n)
	}
	if base := l.segs()[1].baseOffset; base != 2 {
		t.Fatalf("new segment starts at %d, want 2", base)
	}
}
