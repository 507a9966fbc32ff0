package log

import (
	"bytes"
	"testing"

	"github.com/runnel-io/runnel/internal/log/logtest"
	"github.com/runnel-io/runnel/internal/recordbatch"
)

func TestAppendReadAcrossRolls(t *testing.T) {
	forEachLogConfig(t, func(t *testing.T, env testEnv, cfg Config) {
		l := openLog(t, env, cfg)
		leo := appendRecords(t, l, 300, 7, 20)
		if cfg.SegmentBytes < 2000 && l.NumSegments() < 10 {
			t.Fatalf("%d segments with segment.bytes %d: the log did not roll", l.NumSegments(), cfg.SegmentBytes)
		}
		checkContiguous(t, readAll(t, l, 0, leo, 1<<20), 0, leo)
		checkContiguous(t, readAll(t, l, 0, leo, 1), 0, leo) // one batch per read (minOneBatch)
		for off := int64(0); off < leo; off += 37 {
			checkContiguous(t, readAll(t, l, off, leo, 300), off, leo)
		}
		if err := l.Flush(leo); err != nil {
			t.Fatal(err)
		}
		l = reopen(t, env, l, cfg)
		if l.LogEndOffset() != leo {
			t.Fatalf("log end %d after reopen, want %d", l.LogEndOffset(), leo)
		}
		checkContiguous(t, readAll(t, l, 0, leo, 4096), 0, leo)
		next := mustAppend(t, l, logtest.Batch(3, 10))
		if next.FirstOffset != leo || next.LastOffset != leo+2 {
			t.Fatalf("append after reopen got offsets %d-%d, want %d-%d", next.FirstOffset, next.LastOffset, leo, leo+2)
		}
	})
}

func TestAppendAssignsOffsetsAndEpoch(t *testing.T) {
	l := openLog(t, memEnv(), DefaultConfig())
	two := append(logtest.Batch(3, 10), logtest.Batch(2, 10)...)
	info, err := l.AppendAsLeader(two, 7)
	if err != nil {
		t.Fatal(err)
	}
	want := AppendInfo{FirstOffset: 0, LastOffset: 4, LogAppendTime: -1, NumBatches: 2, NumRecords: 5, Bytes: len(two)}
	if info != want {
		t.Fatalf("info %+v, want %+v", info, want)
	}
	b := recordbatch.Batch(two[:recordbatch.Batch(two).Size()])
	if b.BaseOffset() != 0 || b.PartitionLeaderEpoch() != 7 || recordbatch.Batch(two[len(b):]).BaseOffset() != 3 {
		t.Fatalf("batches not stamped in place: base %d epoch %d", b.BaseOffset(), b.PartitionLeaderEpoch())
	}
	ri, _ := l.Read(0, 1<<20, 5, false)
	got, _ := ri.AppendTo(nil)
	if !bytes.Equal(got, two) {
		t.Fatal("the log does not hold the stamped bytes")
	}
	if e, ok := l.LatestEpoch(); !ok || e != 7 {
		t.Fatalf("latest epoch %d %v", e, ok)
	}
}

func TestAppendLogAppendTime(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MessageTimestampType = LogAppendTime
	l := openLog(t, memEnv(), cfg)
	b := logtest.BatchWith(logtest.BatchOptions{Records: 2, Timestamp: 5})
	info := mustAppend(t, l, b)
	if info.LogAppendTime < 1e12 || recordbatch.Batch(b).MaxTimestamp() != info.LogAppendTime {
		t.Fatalf("log append time %d, batch max timestamp %d", info.LogAppendTime, recordbatch.Batch(b).MaxTimestamp())
	}
	if err := recordbatch.Batch(b).Verify(); err != nil {
		t.Fatalf("stamped batch fails Verify: %v", err)
	}
}

func TestAppendRejectsBadBatches(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxMessageBytes = 500
	l := openLog(t, memEnv(), cfg)
	good := logtest.Batch(1, 10)
	badCRC := logtest.Batch(1, 10)
	badCRC[len(badCRC)-1] ^= 1
	badMagic := logtest.Batch(1, 10)
	badMagic[16] = 1
	cases := []struct {
		name    string
		records []byte
		want    error
	}{
		{"too large", logtest.Batch(10, 100), ErrRecordTooLarge},
		{"bad crc", badCRC, ErrCorruption},
		{"bad magic", badMagic, ErrInvalidRecord},
		{"truncated", good[:len(good)-1], ErrCorruption},
		{"good then truncated", append(append([]byte(nil), good...), good[:30]...), ErrCorruption},
		{"empty", nil, ErrInvalidRecord},
	}
	for _, c := range cases {
		_, err := l.AppendAsLeader(c.records, 0)
		if err == nil {
			t.Fatalf("%s: accepted", c.name)
		}
		wantErr(t, err, c.want)
	}
	if l.LogEndOffset() != 0 || l.Size() != 0 {
		t.Fatalf("rejected appends wrote something: leo %d size %d", l.LogEndOffset(), l.Size())
	}
}

func TestReadLimits(t *testing.T) {
	l := openLog(t, memEnv(), DefaultConfig())
	var sizes []int
	for i := 0; i < 10; i++ {
		b := logtest.Batch(10, 50) // offsets 10i .. 10i+9
		sizes = append(sizes, len(b))
		mustAppend(t, l, b)
	}
	cases := []struct {
		name           string
		offset         int64
		maxBytes       int32
		maxOffset      int64
		minOne         bool
		wantSize       int
		wantFirstBatch int64
	}{
		{"whole log", 0, 1 << 20, 100, false, sizes[0] * 10, 0},
		{"mid batch starts at its base", 15, 1 << 20, 100, false, sizes[0] * 9, 10},
		{"high watermark excludes batches", 0, 1 << 20, 30, false, sizes[0] * 3, 0},
		{"high watermark mid batch", 0, 1 << 20, 35, false, sizes[0] * 3, 0},
		{"max bytes cuts at a batch", 0, int32(sizes[0]*2 + 10), 100, false, sizes[0] * 2, 0},
		{"max bytes below one batch", 0, 10, 100, false, 0, -1},
		{"min one batch", 20, 10, 100, true, sizes[0], 20},
		{"at high watermark", 40, 1 << 20, 40, true, 0, -1},
		{"at log end", 100, 1 << 20, 200, true, 0, -1},
	}
	for _, c := range cases {
		ri, err := l.Read(c.offset, c.maxBytes, c.maxOffset, c.minOne)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if int(ri.Size) != c.wantSize || ri.FirstOffset != c.wantFirstBatch {
			t.Fatalf("%s: size %d first %d, want %d and %d", c.name, ri.Size, ri.FirstOffset, c.wantSize, c.wantFirstBatch)
		}
	}
	_, err := l.Read(101, 100, 200, true)
	wantErr(t, err, ErrOffsetOutOfRange)
	_, err = l.Read(-1, 100, 200, true)
	wantErr(t, err, ErrOffsetOutOfRange)
}

func TestFollowerAppendKeepsOffsets(t *testing.T) {
	leader := openLog(t, memEnv(), DefaultConfig())
	for e := int32(1); e <= 3; e++ {
		for i := 0; i < 3; i++ {
			if _, err := leader.AppendAsLeader(logtest.Batch(2, 10), e); err != nil {
				t.Fatal(err)
			}
		}
	}
	follower := openLog(t, memEnv(), DefaultConfig())
	ri, _ := leader.Read(0, 1<<20, leader.LogEndOffset(), true)
	data, _ := ri.AppendTo(nil)
	if _, err := follower.AppendAsFollower(data[:recordbatch.Batch(data).Size()]); err != nil {
		t.Fatal(err)
	}
	_, err := follower.AppendAsFollower(data[:recordbatch.Batch(data).Size()])
	wantErr(t, err, ErrOffsetOutOfRange)
	info, err := follower.AppendAsFollower(data[recordbatch.Batch(data).Size():])
	if err != nil {
		t.Fatal(err)
	}
	if info.LastOffset != 17 || follower.LogEndOffset() != 18 {
		t.Fatalf("follower info %+v leo %d", info, follower.LogEndOffset())
	}
	got, want := follower.EpochEntries(), leader.EpochEntries()
	if len(got) != 3 || len(want) != 3 || got[2] != want[2] || got[2] != (EpochEntry{3, 12}) {
		t.Fatalf("follower epochs %v, leader %v", got, want)
	}
}
