package log

import (
	"strings"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/log/logtest"
)

// appendTimed appends n batches of 3 records, batch i stamped 1000*(i+1) ms.
func appendTimed(t *testing.T, l *Log, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		mustAppend(t, l, logtest.BatchWith(logtest.BatchOptions{Records: 3, ValueSize: 40, Timestamp: int64(1000 * (i + 1))}))
	}
}

func noDeletedFiles(t *testing.T, env testEnv) {
	t.Helper()
	names, _ := env.fs.ReadDir(env.dir)
	for _, n := range names {
		if strings.HasSuffix(n, ".deleted") {
			t.Fatalf("%s still there", n)
		}
	}
}

func TestRetentionByTime(t *testing.T) {
	forEachLogConfig(t, func(t *testing.T, env testEnv, cfg Config) {
		cfg.SegmentBytes, cfg.RetentionMs, cfg.FileDeleteDelayMs = 1000, 10_000, 0
		l := openLog(t, env, cfg)
		appendTimed(t, l, 60) // timestamps 1 s .. 60 s
		segs := l.NumSegments()
		n, err := l.DeleteOldSegments(time.UnixMilli(40_000))
		if err != nil || n == 0 {
			t.Fatalf("DeleteOldSegments = %d, %v", n, err)
		}
		if l.NumSegments() != segs-n {
			t.Fatalf("%d segments, want %d", l.NumSegments(), segs-n)
		}
		start := l.LogStartOffset()
		if start != l.SegmentBaseOffsets()[0] || start == 0 {
			t.Fatalf("log start %d, first segment %d", start, l.SegmentBaseOffsets()[0])
		}
		// Every record left in the first segment, or after, is newer than 30 s - a
		// segment's worth; every deleted one was older than 30 s.
		if off, ts, ok := l.FetchOffsetByTimestamp(0); !ok || off != start || ts > 31_000 || ts < 20_000 {
			t.Fatalf("oldest record left: offset %d ts %d", off, ts)
		}
		_, err = l.Read(start-1, 100, l.LogEndOffset(), true)
		wantErr(t, err, ErrOffsetOutOfRange)
		noDeletedFiles(t, env)
		checkContiguous(t, readAll(t, l, start, l.LogEndOffset(), 1<<20), start, l.LogEndOffset())

		// Everything expired: the log rolls and keeps an empty active segment.
		leo := l.LogEndOffset()
		if _, err := l.DeleteOldSegments(time.UnixMilli(1_000_000)); err != nil {
			t.Fatal(err)
		}
		if l.NumSegments() != 1 || l.LogStartOffset() != leo || l.LogEndOffset() != leo || l.Size() != 0 {
			t.Fatalf("after expiring everything: %d segments, log [%d, %d), %d bytes", l.NumSegments(), l.LogStartOffset(), l.LogEndOffset(), l.Size())
		}
		if info := mustAppend(t, l, logtest.Batch(1, 10)); info.FirstOffset != leo {
			t.Fatalf("append after full retention at %d, want %d", info.FirstOffset, leo)
		}
		l = reopen(t, env, l, cfg)
		if l.LogStartOffset() != leo || l.LogEndOffset() != leo+1 {
			t.Fatalf("after reopen: log [%d, %d)", l.LogStartOffset(), l.LogEndOffset())
		}
	})
}

func TestRetentionByBytes(t *testing.T) {
	env := memEnv()
	cfg := DefaultConfig()
	cfg.SegmentBytes, cfg.RetentionBytes, cfg.RetentionMs = 1000, 3000, -1
	l := openLog(t, env, cfg)
	appendTimed(t, l, 60)
	if _, err := l.DeleteOldSegments(time.Now()); err != nil {
		t.Fatal(err)
	}
	first := l.segs()[0].size.Load()
	if l.Size() < cfg.RetentionBytes || l.Size()-first >= cfg.RetentionBytes {
		t.Fatalf("size %d after retention.bytes %d (first segment %d bytes)", l.Size(), cfg.RetentionBytes, first)
	}
}

func TestRetentionStopsAtHighWatermark(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SegmentBytes, cfg.RetentionMs = 1000, 1
	l := openLog(t, memEnv(), cfg)
	appendTimed(t, l, 30)
	hw := l.SegmentBaseOffsets()[2]
	l.SetHighWatermark(hw)
	if n, _ := l.DeleteOldSegments(time.UnixMilli(1 << 40)); n != 2 || l.LogStartOffset() != hw {
		t.Fatalf("deleted %d segments, log start %d: want 2 and %d", n, l.LogStartOffset(), hw)
	}
}

func TestDeletedSegmentReadableDuringDelay(t *testing.T) {
	env := memEnv()
	cfg := DefaultConfig()
	cfg.SegmentBytes, cfg.RetentionMs, cfg.FileDeleteDelayMs = 1000, 1, 60_000
	l := openLog(t, env, cfg)
	appendTimed(t, l, 20)
	ri, err := l.Read(0, 1<<20, l.LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	now := time.UnixMilli(1 << 40)
	l.SetHighWatermark(l.SegmentBaseOffsets()[1])
	if n, err := l.DeleteOldSegments(now); n != 1 || err != nil {
		t.Fatalf("DeleteOldSegments = %d, %v", n, err)
	}
	if _, err := ri.AppendTo(nil); err != nil {
		t.Fatalf("read in flight failed after deletion: %v", err)
	}
	if _, err := env.fs.Stat(DeletedFilename(MakeFilename(env.dir, FileTypeSegment, 0))); err != nil {
		t.Fatalf("segment not renamed .deleted: %v", err)
	}
	l.DeleteOldSegments(now.Add(time.Minute))
	noDeletedFiles(t, env)
}

func TestDeleteRecordsBefore(t *testing.T) {
	forEachLogConfig(t, func(t *testing.T, env testEnv, cfg Config) {
		l := openLog(t, env, cfg)
		leo := appendRecords(t, l, 100, 4, 30)
		segs := l.NumSegments()
		mid := leo / 2
		got, err := l.DeleteRecordsBefore(mid)
		if err != nil || got != mid || l.LogStartOffset() != mid {
			t.Fatalf("DeleteRecordsBefore(%d) = %d, %v (log start %d)", mid, got, err, l.LogStartOffset())
		}
		if first := l.SegmentBaseOffsets()[0]; first > mid || (segs > 1 && l.NumSegments() == segs) {
			t.Fatalf("segments %v after deleting below %d (had %d)", l.SegmentBaseOffsets(), mid, segs)
		}
		_, err = l.Read(mid-1, 100, leo, true)
		wantErr(t, err, ErrOffsetOutOfRange)
		checkContiguous(t, readAll(t, l, mid, leo, 1<<20), mid, leo)
		if got, _ := l.DeleteRecordsBefore(mid - 10); got != mid {
			t.Fatalf("moving the log start back returned %d", got)
		}
		_, err = l.DeleteRecordsBefore(leo + 1)
		wantErr(t, err, ErrOffsetOutOfRange)
		l = reopen(t, env, l, cfg)
		if l.LogStartOffset() != mid {
			t.Fatalf("log start %d after reopen, want %d", l.LogStartOffset(), mid)
		}
		if off, _, _ := l.FetchOffsetByTimestamp(EarliestTimestamp); off != mid {
			t.Fatalf("earliest offset %d, want %d", off, mid)
		}
	})
}

func TestTruncate(t *testing.T) {
	forEachLogConfig(t, func(t *testing.T, env testEnv, cfg Config) {
		l := openLog(t, env, cfg)
		var bases []int64
		for i := 0; i < 100; i++ {
			bases = append(bases, mustAppend(t, l, logtest.Batch(1+i%4, 30)).FirstOffset)
		}
		leo := l.LogEndOffset()
		for _, to := range []int64{leo + 5, leo, bases[90], bases[70] + 1, bases[50], l.SegmentBaseOffsets()[l.NumSegments()/2]} {
			want := min(to, l.LogEndOffset())
			if want < l.LogEndOffset() {
				floor := int64(0) // the batch holding to goes whole: the end is its base
				for _, b := range bases {
					if b <= want {
						floor = b
					}
				}
				want = floor
			}
			if err := l.Truncate(to); err != nil {
				t.Fatalf("Truncate(%d): %v", to, err)
			}
			if l.LogEndOffset() != want {
				t.Fatalf("Truncate(%d): log end %d, want %d", to, l.LogEndOffset(), want)
			}
			if l.RecoveryPoint() > want {
				t.Fatalf("recovery point %d past the log end %d", l.RecoveryPoint(), want)
			}
			checkContiguous(t, readAll(t, l, 0, want, 1<<20), 0, want)
		}
		end := l.LogEndOffset()
		if info := mustAppend(t, l, logtest.Batch(3, 30)); info.FirstOffset != end {
			t.Fatalf("append after truncation at %d, want %d", info.FirstOffset, end)
		}
		l = reopen(t, env, l, cfg)
		if l.LogEndOffset() != end+3 {
			t.Fatalf("log end %d after reopen, want %d", l.LogEndOffset(), end+3)
		}
		checkContiguous(t, readAll(t, l, 0, end+3, 1<<20), 0, end+3)
	})
}

func TestTruncateFullyAndStartAt(t *testing.T) {
	forEachLogConfig(t, func(t *testing.T, env testEnv, cfg Config) {
		l := openLog(t, env, cfg)
		appendRecords(t, l, 50, 4, 30)
		if err := l.TruncateFullyAndStartAt(1000); err != nil {
			t.Fatal(err)
		}
		if l.LogStartOffset() != 1000 || l.LogEndOffset() != 1000 || l.NumSegments() != 1 || l.Size() != 0 {
			t.Fatalf("log [%d, %d) %d segments %d bytes", l.LogStartOffset(), l.LogEndOffset(), l.NumSegments(), l.Size())
		}
		if _, ok := l.LatestEpoch(); ok {
			t.Fatal("epoch cache not cleared")
		}
		if info := mustAppend(t, l, logtest.Batch(2, 10)); info.FirstOffset != 1000 {
			t.Fatalf("append at %d", info.FirstOffset)
		}
		l = reopen(t, env, l, cfg)
		checkContiguous(t, readAll(t, l, 1000, 1002, 1<<20), 1000, 1002)
		if l.LogStartOffset() != 1000 {
			t.Fatalf("log start %d", l.LogStartOffset())
		}
	})
}
