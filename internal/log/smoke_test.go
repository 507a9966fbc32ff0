package log

import (
	"testing"

	"github.com/runnel-io/runnel/internal/log/logtest"
	"github.com/runnel-io/runnel/internal/vfs"
)

func TestSmoke(t *testing.T) {
	fs := vfs.NewMem()
	cfg := DefaultConfig()
	cfg.SegmentBytes = 4096
	cfg.IndexIntervalBytes = 1
	l, err := Open(Options{FS: fs, Dir: "/data/t-0", Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		info, err := l.AppendAsLeader(logtest.Batch(10, 50), 1)
		if err != nil {
			t.Fatal(err)
		}
		if info.FirstOffset != int64(i*10) {
			t.Fatal(info)
		}
	}
	if err := l.Flush(l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	for off := int64(0); off < 1000; off += 7 {
		ri, err := l.Read(off, 1000, 1000, true)
		if err != nil {
			t.Fatal(err)
		}
		b, err := ri.AppendTo(nil)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := logtest.Decode(b)
		if err != nil || len(recs) == 0 || recs[0].Offset > off || recs[len(recs)-1].Offset < off {
			t.Fatalf("off %d: %v %d %+v", off, err, len(recs), ri)
		}
	}
	t.Log(l.NumSegments(), l.Size())
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, err = Open(Options{FS: fs, Dir: "/data/t-0", Config: cfg, RecoveryPoint: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() != 1000 {
		t.Fatal(l.LogEndOffset())
	}
}
