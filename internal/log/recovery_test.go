package log

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/log/logtest"
	"github.com/runnel-io/runnel/internal/recordbatch"
	"github.com/runnel-io/runnel/internal/testutil"
	"github.com/runnel-io/runnel/internal/vfs"
)

// history remembers every appended batch by base offset, to compare after a crash.
type history map[int64][]byte

// checkAgainst reads the whole log batch by batch and fails unless every batch is
// byte-for-byte one that was appended, and offsets are contiguous from 0 to the end.
func (h history) checkAgainst(t *testing.T, l *Log) {
	t.Helper()
	for off := l.LogStartOffset(); off < l.LogEndOffset(); {
		ri, err := l.Read(off, 1, l.LogEndOffset(), true)
		if err != nil {
			t.Fatalf("Read(%d): %v", off, err)
		}
		got, _ := ri.AppendTo(nil)
		first := off == l.LogStartOffset() && ri.FirstOffset <= off // the batch holding the log start
		if (ri.FirstOffset != off && !first) || !bytes.Equal(got, h[ri.FirstOffset]) {
			t.Fatalf("batch at %d (read %d bytes from %d) differs from the one appended", off, len(got), ri.FirstOffset)
		}
		off = recordbatch.Batch(got).NextOffset()
	}
}

// TestCrashKeepsFlushedOffsets appends, flushes and rolls at random, crashes the
// memory filesystem, and checks that recovery keeps every flushed offset, only
// offsets that were appended, contiguously, and that recovering twice is a no-op.
func TestCrashKeepsFlushedOffsets(t *testing.T) {
	for name, cfg := range testConfigs() {
		t.Run(name, func(t *testing.T) {
			for seed := int64(0); seed < 25; seed++ {
				crashOnce(t, cfg, seed)
			}
		})
	}
}

func crashOnce(t *testing.T, cfg Config, seed int64) {
	rng := rand.New(rand.NewSource(seed))
	env := memEnv()
	var l *Log
	var flushed, checkpointed int64
	// As the Manager does, checkpoint the recovery point after a truncation.
	l = openLog(t, env, cfg, func(o *Options) { o.OnTruncate = func() { checkpointed = l.RecoveryPoint() } })
	h := history{}
	for i := 0; i < 60+rng.Intn(60); i++ {
		b := logtest.BatchWith(logtest.BatchOptions{Records: 1 + rng.Intn(8), ValueSize: 8 + rng.Intn(40), Timestamp: int64(1000 + i)})
		info, err := l.AppendAsLeader(b, int32(1+i/40))
		if err != nil {
			t.Fatal(err)
		}
		h[info.FirstOffset] = b
		switch r := rng.Intn(10); {
		case r < 3:
			if err := l.Flush(l.LogEndOffset()); err != nil {
				t.Fatal(err)
			}
			flushed = l.LogEndOffset()
		case r == 3:
			checkpointed = l.RecoveryPoint()
		case r == 4:
			l.Roll()
		case r == 5 && rng.Intn(3) == 0:
			if err := l.Truncate(l.LogStartOffset() + rng.Int63n(l.LogEndOffset()-l.LogStartOffset()+1)); err != nil {
				t.Fatal(err)
			}
			flushed = min(flushed, l.LogEndOffset())
		case r == 6 && rng.Intn(3) == 0:
			if _, err := l.DeleteRecordsBefore(l.LogStartOffset() + rng.Int63n(l.LogEndOffset()-l.LogStartOffset()+1)); err != nil {
				t.Fatal(err)
			}
		}
	}
	logStart := l.LogStartOffset()
	crashed := testEnv{fs: env.mem.CrashClone(seed), dir: env.dir}
	r := openLog(t, crashed, cfg, withRecoveryPoint(checkpointed), withLogStart(logStart))
	leo := r.LogEndOffset()
	if leo < flushed {
		t.Fatalf("seed %d: recovered log end %d, but %d was flushed", seed, leo, flushed)
	}
	h.checkAgainst(t, r)
	if r.RecoveryPoint() != leo {
		t.Fatalf("seed %d: recovery point %d after recovery, log end %d", seed, r.RecoveryPoint(), leo)
	}
	for _, e := range r.EpochEntries() {
		// An empty log (start == end) keeps its latest epoch, moved to the log start.
		if e.StartOffset > leo || (e.StartOffset == leo && leo != r.LogStartOffset()) {
			t.Fatalf("seed %d: epoch %v starts past the log end %d", seed, e, leo)
		}
	}
	// Crash again right away (everything recovered is durable) and recover again.
	again := openLog(t, testEnv{fs: crashed.mem2(r), dir: env.dir}, cfg, withRecoveryPoint(0), withLogStart(logStart))
	if again.LogEndOffset() != leo || again.Size() != r.Size() {
		t.Fatalf("seed %d: second recovery changed the log: end %d size %d, was %d %d", seed, again.LogEndOffset(), again.Size(), leo, r.Size())
	}
	if _, err := again.AppendAsLeader(logtest.Batch(2, 10), 9); err != nil {
		t.Fatalf("seed %d: append after recovery: %v", seed, err)
	}
}

// mem2 crashes the filesystem of an env made by CrashClone.
func (e testEnv) mem2(*Log) vfs.FS { return e.fs.(*vfs.Mem).CrashClone(99) }

func TestCorruptTailTruncated(t *testing.T) {
	forEachLogConfig(t, func(t *testing.T, env testEnv, cfg Config) {
		l := openLog(t, env, cfg)
		leo := appendRecords(t, l, 40, 5, 30)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		bases := l.SegmentBaseOffsets()
		active := MakeFilename(env.dir, FileTypeSegment, bases[len(bases)-1])
		f, _ := env.fs.OpenFile(active, os.O_WRONLY|os.O_APPEND, 0)
		f.Write(bytes.Repeat([]byte{0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 1, 0}, 3)) // a header announcing 256 bytes, torn
		f.Close()

		var logs logBuffer
		r := openLog(t, env, cfg, withRecoveryPoint(leo), withLogger(logs.logger()))
		if r.LogEndOffset() != leo {
			t.Fatalf("log end %d after truncating the tail, want %d", r.LogEndOffset(), leo)
		}
		out := logs.String()
		if !strings.Contains(out, "truncating torn segment tail") || !strings.Contains(out, active) ||
			!strings.Contains(out, "bytes_dropped=36") {
			t.Fatalf("no warning naming the file and the bytes dropped:\n%s", out)
		}
		checkContiguous(t, readAll(t, r, 0, leo, 1<<20), 0, leo)
	})
}

// TestCorruptLastBatchBelowRecoveryPointKept: a CRC failure in the last batch of the
// log is a torn tail only above the recovery point. Below it (here after a clean
// close) the batch was written and fsynced: it is damage, kept, and the log end stays.
// (Before the integrity work recovery cut it: log end 19 instead of 23.)
func TestCorruptLastBatchBelowRecoveryPointKept(t *testing.T) {
	env := memEnv()
	cfg := DefaultConfig()
	l := openLog(t, env, cfg)
	appendRecords(t, l, 10, 3, 30)
	// In the record time of appendRecords' batches: a batch stamped now would be more
	// than segment.ms after the first one and start a segment of its own.
	last := mustAppend(t, l, logtest.BatchWith(logtest.BatchOptions{Records: 4, ValueSize: 30, Timestamp: 2000}))
	l.Close()
	path := MakeFilename(env.dir, FileTypeSegment, 0)
	data, _ := vfs.ReadFile(env.fs, path)
	data[len(data)-5] ^= 0xff // inside the last batch's records: CRC mismatch
	vfs.WriteFileAtomic(env.fs, path, data)
	r := openLog(t, env, cfg, withRecoveryPoint(l.RecoveryPoint()))
	if r.LogEndOffset() != last.LastOffset+1 || r.Size() != int64(len(data)) {
		t.Fatalf("log end %d size %d, want %d and %d (the damaged last batch kept)", r.LogEndOffset(), r.Size(), last.LastOffset+1, len(data))
	}
	ds := r.Damaged()
	if len(ds) != 1 || ds[0].FirstOffset != last.FirstOffset || ds[0].LastOffset != last.LastOffset {
		t.Fatalf("damaged ranges %+v, want offsets %d-%d", ds, last.FirstOffset, last.LastOffset)
	}
	_, err := r.Read(last.FirstOffset, 1<<20, r.LogEndOffset(), true)
	wantErr(t, err, ErrKafkaStorage)
	checkContiguous(t, readAll(t, r, 0, last.FirstOffset, 1<<20), 0, last.FirstOffset)
}

// TestCorruptionBelowRecoveryPoint checks that a bad batch in a trusted segment is
// reported, not truncated away: found when the missing index is rebuilt on the first
// read, it is stepped over (that read ends before it), a read at it fails, and
// Verify records it at once.
func TestCorruptionBelowRecoveryPoint(t *testing.T) {
	env := memEnv()
	cfg := testConfigs()["tiny"]
	l := openLog(t, env, cfg)
	leo := appendRecords(t, l, 60, 4, 30)
	l.Close()
	path := MakeFilename(env.dir, FileTypeSegment, 0)
	data, _ := vfs.ReadFile(env.fs, path)
	first := recordbatch.Batch(data)
	data[first.Size()+70] ^= 0xff // the second batch's records
	vfs.WriteFileAtomic(env.fs, path, data)
	env.fs.Remove(MakeFilename(env.dir, FileTypeOffsetIndex, 0))

	r := openLog(t, env, cfg, withRecoveryPoint(leo))
	if r.LogEndOffset() != leo || r.SegmentBaseOffsets()[0] != 0 {
		t.Fatalf("recovery changed a segment below the recovery point: leo %d segments %v", r.LogEndOffset(), r.SegmentBaseOffsets())
	}
	ri, err := r.Read(0, 1<<20, leo, true)
	if err != nil || ri.Size != int32(first.Size()) {
		t.Fatalf("Read(0): %v, %d bytes; want the first batch only (%d bytes)", err, ri.Size, first.Size())
	}
	_, err = r.Read(first.NextOffset(), 1<<20, leo, true)
	wantErr(t, err, ErrKafkaStorage)
	if _, err := r.Verify(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if ds := r.Damaged(); len(ds) != 1 || ds[0].FirstOffset != first.NextOffset() || ds[0].Quarantine == "" {
		t.Fatalf("damaged ranges %+v, want one from offset %d, quarantined", ds, first.NextOffset())
	}
	after := r.SegmentBaseOffsets()[1]
	_, err = r.Read(after, 1<<20, leo, true)
	wantErr(t, err, ErrKafkaStorage) // past the damage: refused until repaired
}

func TestMissingOrBadIndexRebuilt(t *testing.T) {
	forEachLogConfig(t, func(t *testing.T, env testEnv, cfg Config) {
		l := openLog(t, env, cfg)
		leo := appendRecords(t, l, 80, 5, 30)
		l.Close()
		names, _ := env.fs.ReadDir(env.dir)
		for i, name := range names {
			ft, _, _ := ParseFilename(name)
			p := filepath.Join(env.dir, name)
			switch {
			case ft == FileTypeOffsetIndex && i%2 == 0:
				env.fs.Remove(p)
			case ft == FileTypeOffsetIndex:
				vfs.WriteFileAtomic(env.fs, p, bytes.Repeat([]byte{0xff, 0, 0, 1, 0, 0, 0, 0}, 3))
			case ft == FileTypeTimeIndex && i%3 == 0:
				vfs.WriteFileAtomic(env.fs, p, []byte{1, 2, 3})
			}
		}
		r := openLog(t, env, cfg, withRecoveryPoint(leo))
		checkContiguous(t, readAll(t, r, 0, leo, 1<<20), 0, leo)
		for off := int64(0); off < leo; off += 11 {
			checkContiguous(t, readAll(t, r, off, leo, 200), off, leo)
		}
		if off, _, ok := r.FetchOffsetByTimestamp(1050); !ok || off > leo {
			t.Fatalf("timestamp lookup after rebuild: %d %v", off, ok)
		}
		if _, err := env.fs.Stat(MakeFilename(env.dir, FileTypeOffsetIndex, 0)); r.NumSegments() > 1 && err != nil {
			t.Fatalf("rebuilt index not written back: %v", err)
		}
	})
}

func TestDiskFullAppendsResumeWhenSpaceIsFreed(t *testing.T) {
	env := memEnv()
	cfg := testConfigs()["tiny"]
	var reports atomic.Int32
	l := openLog(t, env, cfg, func(o *Options) { o.OnStorageError = func(error) { reports.Add(1) } })
	leo := appendRecords(t, l, 20, 4, 30)
	if err := l.Flush(leo); err != nil {
		t.Fatal(err)
	}
	// Two appends find the disk full (each fault fires once): the first after storing
	// part of its batch, which must be cut back off the segment; the second before
	// storing anything.
	size := logFileBytes(t, env)
	env.mem.InjectShortWrite(env.dir+"/*.log", 100, syscall.ENOSPC)
	env.mem.Inject(vfs.OpWrite, env.dir+"/*.log", syscall.ENOSPC)
	for range 2 {
		_, err := l.AppendAsLeader(logtest.Batch(3, 30), 1)
		wantErr(t, err, ErrKafkaStorage)
		wantErr(t, err, ErrDiskFull)
		if !strings.Contains(err.Error(), "no space") {
			t.Fatalf("error does not say why: %v", err)
		}
		if l.LogEndOffset() != leo {
			t.Fatalf("log end moved to %d after a failed append", l.LogEndOffset())
		}
		if got := logFileBytes(t, env); got != size {
			t.Fatalf("segment files hold %d bytes after a failed append, %d before it", got, size)
		}
		if l.Offline() {
			t.Fatal("a full disk took the log offline")
		}
	}
	// Space freed: the next append goes in right after what was there, and is durable.
	info, err := l.AppendAsLeader(logtest.Batch(3, 30), 1)
	if err != nil {
		t.Fatalf("append once the disk has room: %v", err)
	}
	if info.FirstOffset != leo || info.LastOffset != leo+2 {
		t.Fatalf("append after the full disk got offsets [%d,%d], want [%d,%d]", info.FirstOffset, info.LastOffset, leo, leo+2)
	}
	if err := l.Flush(leo + 3); err != nil {
		t.Fatalf("flush after the full disk: %v", err)
	}
	checkContiguous(t, readAll(t, l, 0, leo+3, 1<<20), 0, leo+3)
	// A second episode is reported again; the first reported once for two failures.
	env.mem.Inject(vfs.OpWrite, env.dir+"/*.log", syscall.ENOSPC)
	_, err = l.AppendAsLeader(logtest.Batch(3, 30), 1)
	wantErr(t, err, ErrKafkaStorage)
	testutil.Eventually(t, 5*time.Second, func() error {
		if n := reports.Load(); n < 2 {
			return fmt.Errorf("%d disk-full reports, want 2 (one per episode)", n)
		}
		return nil
	})
	time.Sleep(50 * time.Millisecond) // reports run on goroutines: let a third one show
	if n := reports.Load(); n != 2 {
		t.Fatalf("%d disk-full reports for two episodes, want 2", n)
	}
	r := reopen(t, env, l, cfg)
	checkContiguous(t, readAll(t, r, 0, leo+3, 1<<20), 0, leo+3)
}

// logFileBytes is the total size of the log's segment files.
func logFileBytes(t *testing.T, env testEnv) int64 {
	t.Helper()
	names, err := env.fs.ReadDir(env.dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, name := range names {
		if !strings.HasSuffix(name, ".log") {
			continue
		}
		fi, err := env.fs.Stat(filepath.Join(env.dir, name))
		if err != nil {
			t.Fatal(err)
		}
		n += fi.Size()
	}
	return n
}

func TestWriteErrorGoesOffline(t *testing.T) {
	env := memEnv()
	cfg := testConfigs()["tiny"]
	l := openLog(t, env, cfg)
	leo := appendRecords(t, l, 20, 4, 30)
	if err := l.Flush(leo); err != nil {
		t.Fatal(err)
	}
	env.mem.Inject(vfs.OpWrite, env.dir+"/*.log", syscall.EIO)
	_, err := l.AppendAsLeader(logtest.Batch(3, 30), 1)
	wantErr(t, err, ErrKafkaStorage)
	if errors.Is(err, ErrDiskFull) {
		t.Fatalf("an I/O error reported as a full disk: %v", err)
	}
	if !l.Offline() {
		t.Fatal("Offline() is false after a write error")
	}
	_, err = l.AppendAsLeader(logtest.Batch(3, 30), 1)
	wantErr(t, err, ErrKafkaStorage) // offline, although the disk "recovered"
	wantErr(t, l.Flush(leo+1), ErrKafkaStorage)
	if l.LogEndOffset() != leo {
		t.Fatalf("log end moved to %d", l.LogEndOffset())
	}
	checkContiguous(t, readAll(t, l, 0, leo, 1<<20), 0, leo)
	l.Close()
	r := openLog(t, env, cfg, withRecoveryPoint(leo))
	checkContiguous(t, readAll(t, r, 0, leo, 1<<20), 0, leo)
	if _, err := r.AppendAsLeader(logtest.Batch(3, 30), 1); err != nil {
		t.Fatalf("append after reopen: %v", err)
	}
}

func TestFsyncFailureKeepsRecoveryPoint(t *testing.T) {
	env := memEnv()
	l := openLog(t, env, DefaultConfig())
	leo := appendRecords(t, l, 5, 4, 30)
	env.mem.Inject(vfs.OpSync, "", syscall.EIO)
	wantErr(t, l.Flush(leo), ErrKafkaStorage)
	if l.RecoveryPoint() != 0 {
		t.Fatalf("recovery point %d after a failed fsync", l.RecoveryPoint())
	}
	_, err := l.AppendAsLeader(logtest.Batch(1, 10), 1)
	wantErr(t, err, ErrKafkaStorage)
}

func TestLeftoverFilesRemoved(t *testing.T) {
	env := memEnv()
	l := openLog(t, env, DefaultConfig())
	leo := appendRecords(t, l, 5, 4, 30)
	l.Close()
	for _, name := range []string{"00000000000000000003.log.deleted", "00000000000000000003.index.swap",
		"leader-epoch-checkpoint.tmp", "00000000000000000099.snapshot"} {
		vfs.WriteFileAtomic(env.fs, filepath.Join(env.dir, name), []byte("junk"))
	}
	r := openLog(t, env, DefaultConfig(), withRecoveryPoint(leo))
	for _, name := range []string{"00000000000000000003.log.deleted", "00000000000000000003.index.swap",
		"leader-epoch-checkpoint.tmp", "00000000000000000099.snapshot"} {
		if _, err := env.fs.Stat(filepath.Join(env.dir, name)); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%s not removed at recovery: %v", name, err)
		}
	}
	checkContiguous(t, readAll(t, r, 0, leo, 1<<20), 0, leo)
}

// A follower's truncation that finds the disk full when it writes the leader-epoch
// checkpoint keeps the log writable (the node stays up, issue 11's "degrade, not
// stop"); the checkpoint is written by the next flush once there is room, and a
// reopen after a crash recovers the truncated end and its epochs.
func TestEpochCheckpointOnFullDisk(t *testing.T) {
	env := memEnv()
	cfg := DefaultConfig()
	l := openLog(t, env, cfg)
	for e := int32(0); e < 3; e++ {
		for range 3 {
			mustAppendEpoch(t, l, logtest.Batch(1, 10), e)
		}
	}
	if err := l.Flush(l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	env.mem.Inject(vfs.OpWrite, env.dir+"/leader-epoch-checkpoint*", syscall.ENOSPC)
	err := l.Truncate(5)
	wantErr(t, err, ErrDiskFull)
	if l.Offline() {
		t.Fatal("a full disk at the epoch checkpoint took the log offline")
	}
	if leo := l.LogEndOffset(); leo != 5 {
		t.Fatalf("log end %d after truncating to 5", leo)
	}
	// Room again: appends and the flush (which writes the checkpoint) work.
	mustAppendEpoch(t, l, logtest.Batch(1, 10), 3)
	if err := l.Flush(l.LogEndOffset()); err != nil {
		t.Fatalf("flush once the disk has room: %v", err)
	}
	l.Close()
	r := openLog(t, env, cfg, withRecoveryPoint(l.RecoveryPoint()))
	if leo := r.LogEndOffset(); leo != 6 {
		t.Fatalf("log end after reopening = %d, want 6", leo)
	}
	if e, _ := r.LatestEpoch(); e != 3 {
		t.Fatalf("latest epoch after reopening = %d, want 3", e)
	}
	if _, end := r.EndOffsetForEpoch(1); end != 5 {
		t.Fatalf("end of epoch 1 after reopening = %d, want 5 (the truncation point)", end)
	}
}

func mustAppendEpoch(t *testing.T, l *Log, b []byte, epoch int32) {
	t.Helper()
	if _, err := l.AppendAsLeader(b, epoch); err != nil {
		t.Fatal(err)
	}
}
