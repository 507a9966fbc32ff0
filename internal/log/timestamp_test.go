package log

import (
	"testing"

	"github.com/runnel-io/runnel/internal/log/logtest"
)

func TestFetchOffsetByTimestamp(t *testing.T) {
	forEachLogConfig(t, func(t *testing.T, env testEnv, cfg Config) {
		l := openLog(t, env, cfg)
		var all []logtest.Record
		for i := 0; i < 80; i++ {
			b := logtest.BatchWith(logtest.BatchOptions{Records: 5, ValueSize: 20, Timestamp: 10_000 + int64(i)*100, TimestampStep: 10})
			mustAppend(t, l, b)
			recs, _ := logtest.Decode(b)
			all = append(all, recs...)
		}
		for i := range all {
			all[i].Offset = int64(i)
		}
		check := func(l *Log) {
			for q := int64(9_000); q <= 18_100; q += 37 {
				wantOff, wantTs, wantOK := int64(-1), int64(-1), false
				for _, r := range all {
					if r.Timestamp >= q {
						wantOff, wantTs, wantOK = r.Offset, r.Timestamp, true
						break
					}
				}
				off, ts, ok := l.FetchOffsetByTimestamp(q)
				if off != wantOff || ts != wantTs || ok != wantOK {
					t.Fatalf("FetchOffsetByTimestamp(%d) = %d %d %v, want %d %d %v", q, off, ts, ok, wantOff, wantTs, wantOK)
				}
			}
			if off, _, _ := l.FetchOffsetByTimestamp(LatestTimestamp); off != 400 {
				t.Fatalf("latest = %d", off)
			}
			if off, _, _ := l.FetchOffsetByTimestamp(EarliestTimestamp); off != 0 {
				t.Fatalf("earliest = %d", off)
			}
			if off, ts, ok := l.FetchOffsetByTimestamp(MaxTimestamp); !ok || off != 399 || ts != 17_940 {
				t.Fatalf("max timestamp = %d %d %v", off, ts, ok)
			}
		}
		check(l)
		check(reopen(t, env, l, cfg))
	})
}

func TestMaxTimestampOutOfOrder(t *testing.T) {
	l := openLog(t, memEnv(), DefaultConfig())
	for i, ts := range []int64{100, 500, 300} {
		mustAppend(t, l, logtest.BatchWith(logtest.BatchOptions{Records: 4, Timestamp: ts, TimestampStep: int64(i + 1)}))
	}
	if off, ts, ok := l.FetchOffsetByTimestamp(MaxTimestamp); !ok || off != 7 || ts != 506 {
		t.Fatalf("max timestamp = %d %d %v, want 7 506", off, ts, ok)
	}
	if off, ts, ok := l.FetchOffsetByTimestamp(301); !ok || off != 4 || ts != 500 {
		t.Fatalf("first at or after 301 = %d %d %v, want 4 500", off, ts, ok)
	}
	empty := openLog(t, memEnv(), DefaultConfig())
	if _, _, ok := empty.FetchOffsetByTimestamp(MaxTimestamp); ok {
		t.Fatal("max timestamp of an empty log")
	}
	if off, _, ok := empty.FetchOffsetByTimestamp(LatestTimestamp); !ok || off != 0 {
		t.Fatal("latest of an empty log")
	}
}

// TestFetchOffsetByTimestampInsideCompressedBatch: a time that falls inside a
// compressed batch answers the record's own offset and timestamp, as Kafka does, not
// the batch's first offset (a consumer seeking there would get the earlier records).
func TestFetchOffsetByTimestampInsideCompressedBatch(t *testing.T) {
	for _, codec := range []int8{1, 2, 3, 4} {
		l := openLog(t, memEnv(), DefaultConfig())
		mustAppend(t, l, keyedBatch(t, batchSpec{codec: codec, recs: []kv{
			rec("a", "1", 1000), rec("b", "2", 2000), rec("c", "3", 3000), rec("d", "4", 4000)}}))
		for _, c := range []struct{ ts, off, got int64 }{{500, 0, 1000}, {1000, 0, 1000}, {1500, 1, 2000}, {3000, 2, 3000}, {3999, 3, 4000}} {
			off, ts, ok := l.FetchOffsetByTimestamp(c.ts)
			if !ok || off != c.off || ts != c.got {
				t.Errorf("codec %d: FetchOffsetByTimestamp(%d) = %d %d %v, want %d %d", codec, c.ts, off, ts, ok, c.off, c.got)
			}
		}
		if _, _, ok := l.FetchOffsetByTimestamp(4001); ok {
			t.Errorf("codec %d: a time after every record found one", codec)
		}
	}
}
