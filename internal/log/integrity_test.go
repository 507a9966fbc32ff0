package log

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/runnel-io/runnel/internal/log/logtest"
	"github.com/runnel-io/runnel/internal/recordbatch"
	"github.com/runnel-io/runnel/internal/vfs"
)

// batchAt finds, in the segment file data, the batch holding byte position pos.
func batchAt(t *testing.T, data []byte, pos int) (start int, b recordbatch.Batch) {
	t.Helper()
	for p := 0; p < len(data); {
		b, _, err := recordbatch.Next(data[p:], 0)
		if err != nil {
			t.Fatalf("segment does not parse at %d: %v", p, err)
		}
		if pos < p+len(b) {
			return p, b
		}
		p += len(b)
	}
	t.Fatalf("position %d past the segment end %d", pos, len(data))
	return 0, nil
}

// corruptFile applies fn to the bytes of path.
func corruptFile(t *testing.T, fsys vfs.FS, path string, fn func(data []byte) []byte) {
	t.Helper()
	data, err := vfs.ReadFile(fsys, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := vfs.WriteFileAtomic(fsys, path, fn(data)); err != nil {
		t.Fatal(err)
	}
}

// readRecordsSkippingEmpty reads [from, to) batch by batch, stepping over empty batches (what
// DropDamaged leaves), and returns the records.
func readRecordsSkippingEmpty(t *testing.T, l *Log, from, to int64) []logtest.Record {
	t.Helper()
	var out []logtest.Record
	for off := from; off < to; {
		ri, err := l.Read(off, 1, to, true)
		if err != nil {
			t.Fatalf("Read(%d): %v", off, err)
		}
		data, _ := ri.AppendTo(nil)
		b, _, err := recordbatch.Next(data, 0)
		if err != nil || b.Verify() != nil {
			t.Fatalf("Read(%d) returned a bad batch: %v", off, err)
		}
		recs, err := logtest.Decode(data)
		if err != nil {
			t.Fatalf("decoding the read at %d: %v", off, err)
		}
		for _, r := range recs {
			if r.Offset >= off {
				out = append(out, r)
			}
		}
		off = b.NextOffset()
	}
	return out
}

// TestIssue29BitRotKeepsAcknowledgedRecords is issue 29's reproduction at the log
// level: many batches in one segment, a clean shutdown, two bytes changed at position
// 5000, a restart. Before, recovery truncated the segment there ("truncating torn or
// corrupt segment tail") and every record after the damage was gone. Now the log end
// stays, the records before the damage are served, a read at it fails with a storage
// error naming the file and the offsets, the segment is copied to quarantine, and
// only DropDamaged (accept-loss) removes the damaged batch, nothing else.
func TestIssue29BitRotKeepsAcknowledgedRecords(t *testing.T) {
	mem, logs, opts, tp, leo, size, path := writtenEvents(t)
	var start int
	var victim recordbatch.Batch
	corruptFile(t, mem, path, func(data []byte) []byte {
		start, victim = batchAt(t, data, 5000)
		victim = append(recordbatch.Batch(nil), victim...)
		copy(data[5000:], "XX")
		return data
	})

	m2 := newManager(t, mem, "/d", opts)
	r := m2.Get(tp)
	if r.LogEndOffset() != leo || r.Size() != size {
		t.Fatalf("after the restart: log end %d, %d bytes; want %d and %d (nothing truncated)", r.LogEndOffset(), r.Size(), leo, size)
	}
	first, last := victim.BaseOffset(), victim.LastOffset()
	ds := r.Damaged()
	if len(ds) != 1 || ds[0].FirstOffset != first || ds[0].LastOffset != last || ds[0].Position != int64(start) ||
		ds[0].Length != int64(len(victim)) || ds[0].Segment != path {
		t.Fatalf("damaged ranges %+v, want offsets %d-%d at byte %d (%d bytes) of %s", ds, first, last, start, len(victim), path)
	}
	checkContiguous(t, readAll(t, r, 0, first, 1<<20), 0, first)
	ri, err := r.Read(0, 1<<20, leo, true)
	if err != nil || ri.Position+int64(ri.Size) > int64(start) {
		t.Fatalf("a read below the damage: %v, range [%d, %d) reaches the damage at %d", err, ri.Position, ri.Position+int64(ri.Size), start)
	}
	for _, off := range []int64{first, last, last + 1, leo - 1, leo} {
		_, err := r.Read(off, 1<<20, leo, true)
		var de *DamageError
		if !errors.Is(err, ErrKafkaStorage) || !errors.As(err, &de) || errors.Is(err, ErrOffsetOutOfRange) {
			t.Fatalf("Read(%d): %v, want a storage error for the damage", off, err)
		}
		msg := err.Error()
		for _, want := range []string{"events-0:", "offsets " + itoa(first) + "-" + itoa(last), "00000000000000000000.log", "at byte " + itoa(int64(start)), "quarantine"} {
			if !strings.Contains(msg, want) {
				t.Fatalf("error %q does not say %q", msg, want)
			}
		}
	}
	q, err := vfs.ReadFile(mem, ds[0].Quarantine)
	if !strings.HasPrefix(ds[0].Quarantine, "/d/quarantine/events-0/00000000000000000000.log.") || err != nil || int64(len(q)) != size {
		t.Fatalf("quarantined copy %q: %d bytes, %v", ds[0].Quarantine, len(q), err)
	}
	out := logs.String()
	if !strings.Contains(out, "corrupt data in segment") || !strings.Contains(out, path) || !strings.Contains(out, "position="+itoa(int64(start))) {
		t.Fatalf("no warning naming the file, position and offsets:\n%s", out)
	}
	if strings.Contains(out, "truncating") {
		t.Fatalf("recovery truncated:\n%s", out)
	}
	if st := m2.IntegrityStats(); st.CorruptBatches != 1 {
		t.Fatalf("integrity stats %+v", st)
	}
	// Appends after the log end go on.
	if info := mustAppend(t, r, logtest.Batch(2, 10)); info.FirstOffset != leo {
		t.Fatalf("append after the damage at %d, want %d", info.FirstOffset, leo)
	}
	leo = r.LogEndOffset()

	// A second restart still knows (and still keeps everything).
	if err := m2.Close(); err != nil {
		t.Fatal(err)
	}
	m3 := newManager(t, mem, "/d", opts)
	r = m3.Get(tp)
	if ds2 := r.Damaged(); len(ds2) != 1 || ds2[0].Quarantine != ds[0].Quarantine || r.LogEndOffset() != leo {
		t.Fatalf("after a second restart: damaged %+v, log end %d (want %d)", ds2, r.LogEndOffset(), leo)
	}
	if st := m3.IntegrityStats(); st.CorruptBatches != 0 {
		t.Fatalf("known damage counted again: %+v", st)
	}

	// Accept the loss: only the damaged batch goes.
	dropped, err := r.DropDamaged()
	if err != nil || dropped != last-first+1 {
		t.Fatalf("DropDamaged: %d, %v; want %d offsets", dropped, err, last-first+1)
	}
	if len(r.Damaged()) != 0 || r.LogEndOffset() != leo {
		t.Fatalf("after DropDamaged: damaged %+v, log end %d (want %d)", r.Damaged(), r.LogEndOffset(), leo)
	}
	if st := m3.IntegrityStats(); st.RepairedBatches != 1 {
		t.Fatalf("integrity stats %+v", st)
	}
	check := func(r *Log) {
		t.Helper()
		recs := readRecordsSkippingEmpty(t, r, 0, leo)
		if int64(len(recs)) != leo-(last-first+1) {
			t.Fatalf("%d records after the repair, want %d", len(recs), leo-(last-first+1))
		}
		for _, rec := range recs {
			if rec.Offset >= first && rec.Offset <= last {
				t.Fatalf("record %d of the damaged batch read back", rec.Offset)
			}
		}
	}
	check(r)
	if _, err := vfs.ReadFile(mem, ds[0].Quarantine); err != nil {
		t.Fatalf("the quarantined copy went: %v", err)
	}
	if err := m3.Close(); err != nil {
		t.Fatal(err)
	}
	m4 := newManager(t, mem, "/d", opts)
	r = m4.Get(tp)
	if len(r.Damaged()) != 0 || r.LogEndOffset() != leo {
		t.Fatalf("after the repair and a restart: damaged %+v, log end %d", r.Damaged(), r.LogEndOffset())
	}
	check(r)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestDamagedLengthFieldMidLog: a batch whose length field is garbage (its framing
// cannot be trusted) in the middle of a segment, above the recovery point. Recovery
// finds the next batch by scanning for a header whose CRC verifies; before, it cut
// the log at the bad header.
func TestDamagedLengthFieldMidLog(t *testing.T) {
	for _, length := range []uint32{0xffffff00, 30, 700} { // absurd, too short for a header, wrong but plausible
		env := memEnv()
		cfg := DefaultConfig()
		l := openLog(t, env, cfg)
		leo := appendRecords(t, l, 50, 4, 40)
		l.Close()
		var victim recordbatch.Batch
		corruptFile(t, env.fs, MakeFilename(env.dir, FileTypeSegment, 0), func(data []byte) []byte {
			var start int
			start, victim = batchAt(t, data, len(data)/2)
			victim = append(recordbatch.Batch(nil), victim...)
			data[start+8], data[start+9], data[start+10], data[start+11] = byte(length>>24), byte(length>>16), byte(length>>8), byte(length)
			return data
		})
		// No recovery point checkpoint: every batch is above it, and still the damage
		// has valid batches after it, so it is no torn tail.
		r := openLog(t, env, cfg, withRecoveryPoint(0))
		if r.LogEndOffset() != leo {
			t.Fatalf("length %#x: log end %d, want %d", length, r.LogEndOffset(), leo)
		}
		ds := r.Damaged()
		if len(ds) != 1 || ds[0].FirstOffset != victim.BaseOffset() || ds[0].LastOffset != victim.LastOffset() || ds[0].Length != int64(len(victim)) {
			t.Fatalf("length %#x: damaged %+v, want the batch at %d-%d (%d bytes)", length, ds, victim.BaseOffset(), victim.LastOffset(), len(victim))
		}
		checkContiguous(t, readAll(t, r, 0, victim.BaseOffset(), 1<<20), 0, victim.BaseOffset())
		if _, err := r.DropDamaged(); err != nil {
			t.Fatal(err)
		}
		if n := len(readRecordsSkippingEmpty(t, r, 0, leo)); int64(n) != leo-int64(victim.LastOffsetDelta()+1) {
			t.Fatalf("length %#x: %d records after DropDamaged", length, n)
		}
	}
}

// TestTornTailStillCut: a last batch cut short by a crash, beyond the recovery point,
// is still truncated (and is no damage).
func TestTornTailStillCut(t *testing.T) {
	env := memEnv()
	cfg := DefaultConfig()
	l := openLog(t, env, cfg)
	before := appendRecords(t, l, 20, 3, 30)
	mustAppend(t, l, logtest.BatchWith(logtest.BatchOptions{Records: 5, ValueSize: 30, Timestamp: 1500}))
	l.Close()
	corruptFile(t, env.fs, MakeFilename(env.dir, FileTypeSegment, 0), func(data []byte) []byte {
		return data[:len(data)-40] // half the last batch
	})
	r := openLog(t, env, cfg, withRecoveryPoint(before))
	if r.LogEndOffset() != before || len(r.Damaged()) != 0 {
		t.Fatalf("log end %d, damaged %+v; want %d and none", r.LogEndOffset(), r.Damaged(), before)
	}
	checkContiguous(t, readAll(t, r, 0, before, 1<<20), 0, before)
}

// TestVerifyFindsFlippedByte: Verify reads a cold segment below the recovery point
// (never scanned at Open) and records a flipped byte as recovery would; a second
// pass finds nothing new.
func TestVerifyFindsFlippedByte(t *testing.T) {
	env := memEnv()
	cfg := testConfigs()["tiny"]
	l := openLog(t, env, cfg)
	leo := appendRecords(t, l, 60, 4, 30)
	l.Close()
	r := openLog(t, env, cfg, withRecoveryPoint(leo))
	segs := r.SegmentBaseOffsets()
	path := MakeFilename(env.dir, FileTypeSegment, segs[1])
	var victim recordbatch.Batch
	// The flip happens under the running log (bit rot), through another handle.
	f, err := env.fs.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := vfs.ReadFile(env.fs, path)
	_, victim = batchAt(t, data, len(data)-10)
	f.WriteAt([]byte{data[len(data)-10] ^ 0x40}, int64(len(data)-10))
	f.Close()

	lim := &countingLimiter{}
	res, err := r.Verify(context.Background(), lim)
	if err != nil {
		t.Fatal(err)
	}
	if res.Corrupt != 1 || res.Batches == 0 || lim.n == 0 || lim.n != res.Bytes {
		t.Fatalf("Verify: %+v, limiter asked for %d bytes", res, lim.n)
	}
	ds := r.Damaged()
	if len(ds) != 1 || ds[0].FirstOffset != victim.BaseOffset() || ds[0].LastOffset != segs[2]-1 || ds[0].Quarantine == "" {
		t.Fatalf("damaged %+v, want offsets %d-%d, quarantined", ds, victim.BaseOffset(), segs[2]-1)
	}
	if _, err := r.Read(victim.BaseOffset(), 1<<20, leo, true); !errors.Is(err, ErrKafkaStorage) {
		t.Fatalf("Read at the damage: %v", err)
	}
	if res, err := r.Verify(context.Background(), nil); err != nil || res.Corrupt != 0 {
		t.Fatalf("second Verify: %+v, %v", res, err)
	}
	if st := r.IntegrityStats(); st.CorruptBatches != 1 {
		t.Fatalf("integrity stats %+v", st)
	}
	// A follower's way out: truncate to the damage, quarantine kept.
	end, err := r.TruncateDamaged()
	if err != nil || end != victim.BaseOffset() || len(r.Damaged()) != 0 {
		t.Fatalf("TruncateDamaged: %d, %v, damaged %+v", end, err, r.Damaged())
	}
	if _, err := vfs.ReadFile(env.fs, ds[0].Quarantine); err != nil {
		t.Fatal(err)
	}
	checkContiguous(t, readAll(t, r, 0, end, 1<<20), 0, end)
}

type countingLimiter struct{ n int64 }

func (c *countingLimiter) WaitN(_ context.Context, n int) error {
	if n > VerifyChunk {
		return errors.New("asked for more than VerifyChunk")
	}
	c.n += int64(n)
	return nil
}

// TestCorruptIndexAndCheckpointFiles corrupts each index and checkpoint file in turn
// (garbage, cut short, plausible but wrong entries): the log opens, serves every
// record, and logs a WARN naming the file. Before, a garbage
// replication-offset-checkpoint stopped the node ("bad version line"), and a wrong but
// ordered offset index entry made reads fail.
func TestCorruptIndexAndCheckpointFiles(t *testing.T) {
	tp := TopicPartition{Topic: "orders"}
	seg0 := func(t FileType) string { return MakeFilename("/d/orders-0", t, 0) }
	cases := map[string]struct {
		path    string
		corrupt func([]byte) []byte
	}{
		"offset index garbage":      {seg0(FileTypeOffsetIndex), garbage},
		"offset index cut":          {seg0(FileTypeOffsetIndex), func(b []byte) []byte { return b[:len(b)-3] }},
		"offset index wrong":        {seg0(FileTypeOffsetIndex), shiftPositions},
		"time index garbage":        {seg0(FileTypeTimeIndex), garbage},
		"time index cut":            {seg0(FileTypeTimeIndex), func(b []byte) []byte { return b[:len(b)-5] }},
		"epoch checkpoint garbage":  {"/d/orders-0/leader-epoch-checkpoint", garbage},
		"epoch checkpoint cut":      {"/d/orders-0/leader-epoch-checkpoint", func(b []byte) []byte { return b[:len(b)-4] }},
		"epoch checkpoint wrong":    {"/d/orders-0/leader-epoch-checkpoint", func([]byte) []byte { return []byte("0\n2\n1 0\n7 3\n") }},
		"producer snapshot garbage": {"", nil}, // the latest snapshot, found below
		"high watermark garbage":    {"/d/" + ReplicationCheckpointFile, garbage},
		"recovery point garbage":    {"/d/" + RecoveryPointCheckpointFile, garbage},
		"log start garbage":         {"/d/" + LogStartOffsetCheckpointFile, garbage},
		"damage checkpoint garbage": {"/d/orders-0/" + damageCheckpointName, garbage},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			mem := vfs.NewMem()
			m := newManager(t, mem, "/d")
			cfg := testConfigs()["tiny"]
			cfg.SegmentBytes = 8 << 10
			l, _ := m.GetOrCreate(tp, cfg)
			for i := 0; i < 150; i++ {
				b := logtest.BatchWith(logtest.BatchOptions{Records: 1 + i%4, ValueSize: 30, Timestamp: 1000 + int64(i)})
				if _, err := l.AppendAsLeader(b, int32(1+i/50)); err != nil {
					t.Fatal(err)
				}
			}
			leo, epochs := l.LogEndOffset(), l.EpochEntries()
			m.WriteHighWatermarks(map[TopicPartition]int64{tp: leo})
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
			path := c.path
			corrupt := c.corrupt
			if path == "" {
				names, _ := mem.ReadDir("/d/orders-0")
				for _, n := range names {
					if ft, _, _ := ParseFilename(n); ft == FileTypeProducerSnapshot {
						path = "/d/orders-0/" + n
					}
				}
				corrupt = garbage
			}
			if strings.Contains(name, "damage checkpoint") {
				vfs.WriteFileAtomic(mem, path, nil)
			}
			corruptFile(t, mem, path, corrupt)

			var logs logBuffer
			o := ManagerOptions{FS: mem, DataDir: "/d", Defaults: cfg, Logger: logs.logger()}
			m2, err := NewManager(o)
			if err != nil {
				t.Fatalf("the node does not start: %v", err)
			}
			defer m2.Close()
			if _, err := m2.ReadHighWatermarks(); err != nil {
				t.Fatalf("ReadHighWatermarks: %v", err)
			}
			r := m2.Get(tp)
			if r.LogEndOffset() != leo {
				t.Fatalf("log end %d, want %d", r.LogEndOffset(), leo)
			}
			checkContiguous(t, readAll(t, r, 0, leo, 300), 0, leo)
			checkContiguous(t, readAll(t, r, 0, leo, 1<<20), 0, leo)
			if got := r.EpochEntries(); !equalEpochs(got, epochs) {
				t.Fatalf("epochs %v, want %v", got, epochs)
			}
			if res, err := r.Verify(context.Background(), nil); err != nil || res.Corrupt != 0 {
				t.Fatalf("Verify: %+v, %v", res, err)
			}
			if len(r.Damaged()) != 0 {
				t.Fatalf("damaged %+v", r.Damaged())
			}
			if out := logs.String(); !strings.Contains(out, "level=WARN") || !strings.Contains(out, filepath.Base(path)) {
				t.Fatalf("no WARN naming %s:\n%s", filepath.Base(path), out)
			}
		})
	}
}

func garbage(b []byte) []byte {
	out := []byte("\x00garbage\xff\x13 not a checkpoint\n")
	for len(out) < max(len(b), 64) {
		out = append(out, out...)
	}
	return out[:max(len(b), 64)]
}

// shiftPositions moves every offset index entry's position but the last 5 bytes on:
// still increasing and inside the segment, and the last entry still names its batch,
// so the load checks pass, but the others name no batch. (Before, reads starting
// from such an entry failed with "batch ... announces ... bytes".)
func shiftPositions(b []byte) []byte {
	for i := 4; i+4 < len(b)-offsetEntrySize; i += offsetEntrySize {
		binary.BigEndian.PutUint32(b[i:], binary.BigEndian.Uint32(b[i:])+5)
	}
	return b
}

func equalEpochs(a, b []EpochEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A follower reading from a damaged leader gets everything past the damage
// (ReadForReplica), so that an intact follower can catch up, rejoin the ISR and take
// the leadership over; inside the damage it gets the storage error, as a consumer.
func TestReadForReplicaPastDamage(t *testing.T) {
	mem := vfs.NewMem()
	m := newManager(t, mem, "/d")
	tp := TopicPartition{Topic: "events"}
	l, err := m.GetOrCreate(tp, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 120; i++ {
		mustAppend(t, l, logtest.BatchWith(logtest.BatchOptions{Records: 1 + i%3, ValueSize: 100, Timestamp: 1000 + int64(i)}))
	}
	leo := l.LogEndOffset()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	var victim recordbatch.Batch
	corruptFile(t, mem, "/d/events-0/00000000000000000000.log", func(data []byte) []byte {
		_, victim = batchAt(t, data, 5000)
		victim = append(recordbatch.Batch(nil), victim...)
		copy(data[5000:], "XX")
		return data
	})
	r := newManager(t, mem, "/d").Get(tp)
	first, last := victim.BaseOffset(), victim.LastOffset()
	for _, off := range []int64{first, last} {
		if _, err := r.ReadForReplica(off, 1<<20, leo, true); !errors.Is(err, ErrKafkaStorage) {
			t.Fatalf("ReadForReplica(%d) inside the damage: %v, want a storage error", off, err)
		}
	}
	// Below the damage: stops before it.
	recs := readAll(t, r, 0, first, 1<<20)
	checkContiguous(t, recs, 0, first)
	ri, err := r.ReadForReplica(0, 1<<30, leo, true)
	if err != nil {
		t.Fatal(err)
	}
	if end := ri.Position + int64(ri.Size); end > 5000 {
		t.Fatalf("a replica read from 0 reaches byte %d, past the damage at 5000", end)
	}
	// Past the damage: everything to the log end.
	var got []logtest.Record
	for off := last + 1; off < leo; {
		ri, err := r.ReadForReplica(off, 1<<20, leo, true)
		if err != nil {
			t.Fatalf("ReadForReplica(%d) past the damage: %v", off, err)
		}
		b, err := ri.AppendTo(nil)
		if err != nil {
			t.Fatal(err)
		}
		rs, err := logtest.Decode(b)
		if err != nil || len(rs) == 0 {
			t.Fatalf("ReadForReplica(%d): no records (%v)", off, err)
		}
		got = append(got, rs...)
		off = rs[len(rs)-1].Offset + 1
	}
	checkContiguous(t, got, last+1, leo)
	// Consumers still get the error past it.
	if _, err := r.Read(last+1, 1<<20, leo, true); !errors.Is(err, ErrKafkaStorage) {
		t.Fatalf("Read(%d) past the damage: %v, want a storage error", last+1, err)
	}
}

// A read of an inactive segment checks its batches the first time (verify on read):
// a flipped byte under the running log is never handed to a reader as if valid, and is
// recorded as damage (quarantined, counted) on that read; an intact range is checked
// once, and read again for free.
func TestVerifyOnRead(t *testing.T) {
	env := memEnv()
	cfg := testConfigs()["tiny"]
	l := openLog(t, env, cfg)
	leo := appendRecords(t, l, 60, 4, 30)
	l.Close()
	r := openLog(t, env, cfg, withRecoveryPoint(leo))
	segs := r.SegmentBaseOffsets()
	if len(segs) < 3 {
		t.Fatalf("want at least 3 segments, have %v", segs)
	}
	// An intact range: checked on the first read only.
	before := ReadVerifiedBytes.Load()
	ri, err := r.Read(segs[0], 1<<20, leo, true)
	if err != nil || ri.Size == 0 {
		t.Fatalf("Read(%d): %+v, %v", segs[0], ri, err)
	}
	first := ReadVerifiedBytes.Load() - before
	if first != int64(ri.Size) {
		t.Fatalf("the first read of [%d, +%d) verified %d bytes", ri.Position, ri.Size, first)
	}
	if _, err := r.Read(segs[0], 1<<20, leo, true); err != nil || ReadVerifiedBytes.Load()-before != first {
		t.Fatalf("the second read of the same range verified it again (%d bytes), %v", ReadVerifiedBytes.Load()-before-first, err)
	}

	// A flip in segment 1 under the running log: the first read there finds it.
	path := MakeFilename(env.dir, FileTypeSegment, segs[1])
	data, _ := vfs.ReadFile(env.fs, path)
	_, victim := batchAt(t, data, len(data)/2)
	victim = append(recordbatch.Batch(nil), victim...)
	f, err := env.fs.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte{data[len(data)/2] ^ 0x40}, int64(len(data)/2))
	f.Close()
	for off := segs[1]; off < victim.BaseOffset(); {
		ri, err := r.Read(off, 1<<20, leo, true)
		if err != nil {
			t.Fatalf("Read(%d) before the damage: %v", off, err)
		}
		if end := ri.Position + int64(ri.Size); ri.Size > 0 && ri.FirstOffset < segs[1] || end > int64(len(data)/2) {
			t.Fatalf("Read(%d) hands out [%d, %d) of segment %d, past the flipped byte at %d", off, ri.Position, end, segs[1], len(data)/2)
		}
		b, _ := ri.AppendTo(nil)
		recs, err := logtest.Decode(b)
		if err != nil || len(recs) == 0 {
			t.Fatalf("Read(%d): %d records, %v", off, len(recs), err)
		}
		off = recs[len(recs)-1].Offset + 1
	}
	if _, err := r.Read(victim.BaseOffset(), 1<<20, leo, true); !errors.Is(err, ErrKafkaStorage) {
		t.Fatalf("Read at the flipped batch: %v, want the storage error", err)
	}
	ds := r.Damaged()
	if len(ds) != 1 || ds[0].FirstOffset != victim.BaseOffset() || ds[0].Quarantine == "" {
		t.Fatalf("damage recorded by the read: %+v, want it at offset %d, quarantined", ds, victim.BaseOffset())
	}
	if st := r.IntegrityStats(); st.CorruptBatches != 1 {
		t.Fatalf("integrity stats %+v", st)
	}
}

// Verify on read with batches that straddle its read chunks (and one larger than a
// chunk): every intact batch passes, nothing is taken for damage.
func TestVerifyOnReadAcrossChunks(t *testing.T) {
	defer func(c int64) { verifyChunk = c }(verifyChunk)
	verifyChunk = 3000
	env := memEnv()
	cfg := testConfigs()["tiny"]
	l := openLog(t, env, cfg)
	for i := 0; i < 40; i++ {
		mustAppend(t, l, logtest.BatchWith(logtest.BatchOptions{Records: 1 + i%5, ValueSize: 700 + 300*(i%4), Timestamp: 1000 + int64(i)}))
	}
	leo := l.LogEndOffset()
	l.Close()
	var logs logBuffer
	r := openLog(t, env, cfg, withRecoveryPoint(leo), withLogger(logs.logger()))
	if n := len(r.SegmentBaseOffsets()); n < 3 {
		t.Fatalf("want at least 3 segments, have %d", n)
	}
	checkContiguous(t, readAll(t, r, 0, leo, 1<<20), 0, leo)
	if ds := r.Damaged(); len(ds) != 0 {
		t.Fatalf("intact batches taken for damage: %+v", ds)
	}
	if out := logs.String(); strings.Contains(out, "failing its checks") {
		t.Fatalf("the read's check refused intact batches:\n%s", out)
	}
}

// A flipped bit in a batch's base offset, which its CRC does not cover: the batch
// seems to leave a gap and the intact batches after it seem to go backwards. Recovery
// must find the one batch damaged (its neighbours agree where it starts), keep the log
// end and every other batch, and not take the bogus offset for the log end (before,
// the log end jumped to the flipped offset and everything after the batch was damage).
func TestFlippedBaseOffsetIsOneDamagedBatch(t *testing.T) {
	mem, logs, opts, tp, leo, size, path := writtenEvents(t)
	var start int
	var victim recordbatch.Batch
	corruptFile(t, mem, path, func(data []byte) []byte {
		start, victim = batchAt(t, data, 5000)
		victim = append(recordbatch.Batch(nil), victim...)
		data[start+5] ^= 0x40 // a bit of the base offset's third-lowest byte: +4194304
		return data
	})

	m2 := newManager(t, mem, "/d", opts)
	r := m2.Get(tp)
	if r.LogEndOffset() != leo || r.Size() != size {
		t.Fatalf("after the restart: log end %d, %d bytes; want %d and %d", r.LogEndOffset(), r.Size(), leo, size)
	}
	first, last := victim.BaseOffset(), victim.LastOffset()
	ds := r.Damaged()
	if len(ds) != 1 || ds[0].FirstOffset != first || ds[0].LastOffset != last || ds[0].Position != int64(start) || ds[0].Length != int64(len(victim)) {
		t.Fatalf("damaged ranges %+v, want the one batch: offsets %d-%d at byte %d (%d bytes)", ds, first, last, start, len(victim))
	}
	checkContiguous(t, readAll(t, r, 0, first, 1<<20), 0, first)
	if out := logs.String(); !strings.Contains(out, "its offset field is damaged") || strings.Contains(out, "truncating") {
		t.Fatalf("want the damage named as the batch's offset field, and nothing truncated:\n%s", out)
	}
}

// writtenEvents writes 120 batches of 1-3 records to partition events-0 of a manager
// on a memory file system and closes it cleanly; it returns what a test restarts the
// manager with (opts logs into logs), the log end, the size and the segment's path.
func writtenEvents(t *testing.T) (mem *vfs.Mem, logs *logBuffer, opts func(*ManagerOptions), tp TopicPartition, leo, size int64, path string) {
	t.Helper()
	mem = vfs.NewMem()
	logs = &logBuffer{}
	opts = func(o *ManagerOptions) { o.Logger = logs.logger() }
	m := newManager(t, mem, "/d", opts)
	tp = TopicPartition{Topic: "events"}
	l, err := m.GetOrCreate(tp, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 120; i++ {
		mustAppend(t, l, logtest.BatchWith(logtest.BatchOptions{Records: 1 + i%3, ValueSize: 100, Timestamp: 1000 + int64(i)}))
	}
	leo, size = l.LogEndOffset(), l.Size()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	return mem, logs, opts, tp, leo, size, "/d/events-0/00000000000000000000.log"
}
