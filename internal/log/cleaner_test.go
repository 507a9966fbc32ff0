package log

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"
)

// appendUpdates appends n batches of 1..4 records updating keys k0..k(keys-1), with
// timestamps from ts, and returns the log end offset.
func appendUpdates(t *testing.T, m *model, l *Log, rng *rand.Rand, n, keys int, ts int64, codec int8) int64 {
	t.Helper()
	for i := 0; i < n; i++ {
		var recs []kv
		for j := 0; j < 1+rng.Intn(4); j++ {
			recs = append(recs, rec(fmt.Sprintf("k%d", rng.Intn(keys)), fmt.Sprintf("v%d-%d", i, j), ts+int64(i)))
		}
		m.appendKV(t, l, batchSpec{recs: recs, codec: codec})
	}
	return l.LogEndOffset()
}

func TestCleanerKeepsLatestValuePerKey(t *testing.T) {
	forEachLogConfig(t, func(t *testing.T, env testEnv, cfg Config) {
		cfg = compactConfig(cfg)
		l := openLog(t, env, cfg)
		m, rng := newModel(), rand.New(rand.NewSource(1))
		leo := appendUpdates(t, m, l, rng, 300, 20, 1000, 0)
		before := l.Size()
		s, ok := cleanNow(t, l, 1<<20, time.Now())
		if !ok || s.EndOffset != leo || s.RecordsRemoved == 0 {
			t.Fatalf("pass %+v ok %v, want it to map everything up to %d", s, ok, leo)
		}
		got := readLog(t, l)
		checkSegments(t, l)
		if want := m.compactedOffsets(leo, leo, false); !slices.Equal(offsetsOf(got), want) {
			t.Fatalf("offsets after cleaning\n got %v\nwant %v", offsetsOf(got), want)
		}
		m.check(t, got, leo, leo, false)
		if len(got) != 20 || l.Size() >= before || l.LogEndOffset() != leo {
			t.Fatalf("%d records, size %d (was %d), log end %d (was %d)", len(got), l.Size(), before, l.LogEndOffset(), leo)
		}
		// Cleaning again finds nothing dirty; the log survives a restart (a full
		// scan from recovery point 0 sees the gaps between segments) unchanged.
		if _, ok := cleanNow(t, l, 1<<20, time.Now()); ok {
			t.Fatal("a clean log was cleaned again")
		}
		l.Close()
		r := openLog(t, env, cfg)
		if again := readLog(t, r); !slices.Equal(offsetsOf(again), offsetsOf(got)) || r.LogEndOffset() != leo {
			t.Fatalf("after reopen: %v, log end %d; want %v, %d", offsetsOf(again), r.LogEndOffset(), offsetsOf(got), leo)
		}
	})
}

func TestCleanerSecondPassAndAppendsInBetween(t *testing.T) {
	forEachLogConfig(t, func(t *testing.T, env testEnv, cfg Config) {
		cfg = compactConfig(cfg)
		l := openLog(t, env, cfg)
		m, rng := newModel(), rand.New(rand.NewSource(2))
		for round := 0; round < 3; round++ {
			leo := appendUpdates(t, m, l, rng, 100, 30, 1000, 0)
			cleanNow(t, l, 1<<20, time.Now())
			got := readLog(t, l)
			if want := m.compactedOffsets(leo, leo, false); !slices.Equal(offsetsOf(got), want) {
				t.Fatalf("round %d:\n got %v\nwant %v", round, offsetsOf(got), want)
			}
			m.check(t, got, leo, leo, false)
		}
	})
}

func TestCleanerNeverTouchesTheActiveSegment(t *testing.T) {
	cfg := compactConfig(DefaultConfig())
	l := openLog(t, memEnv(), cfg)
	m, rng := newModel(), rand.New(rand.NewSource(3))
	leo := appendUpdates(t, m, l, rng, 50, 3, 1000, 0)
	l.Flush(leo)
	l.SetHighWatermark(leo)
	if _, ok, err := l.clean(newCleanerResources(1<<20, nil, nil), time.Now()); ok || err != nil {
		t.Fatalf("cleaning a log with only an active segment: ok %v err %v", ok, err)
	}
	if got := readLog(t, l); len(got) != int(leo) {
		t.Fatalf("%d records left of %d", len(got), leo)
	}
	// Roll, then append more duplicates: only the rolled segment is cleaned.
	l.Roll()
	end := l.LogEndOffset()
	leo = appendUpdates(t, m, l, rng, 50, 3, 2000, 0)
	l.Flush(leo)
	l.SetHighWatermark(leo)
	if s, ok, err := l.clean(newCleanerResources(1<<20, nil, nil), time.Now()); !ok || err != nil || s.EndOffset != end {
		t.Fatalf("pass %+v ok %v err %v, want it to end at %d", s, ok, err, end)
	}
	got := readLog(t, l)
	m.check(t, got, end, end, false)
	if want := m.compactedOffsets(end, leo, false); !slices.Equal(offsetsOf(got), want) {
		t.Fatalf("\n got %v\nwant %v", offsetsOf(got), want)
	}
}

func TestCleanerStopsAtTheHighWatermarkAndRecoveryPoint(t *testing.T) {
	cfg := compactConfig(DefaultConfig())
	cfg.FlushMessages = 1 << 30
	l := openLog(t, memEnv(), cfg)
	m, rng := newModel(), rand.New(rand.NewSource(4))
	appendUpdates(t, m, l, rng, 20, 3, 1000, 0)
	l.Roll()
	mid := l.LogEndOffset()
	leo := appendUpdates(t, m, l, rng, 20, 3, 1000, 0)
	l.Roll()
	l.SetHighWatermark(leo)
	r := newCleanerResources(1<<20, nil, nil)
	if _, ok, _ := l.clean(r, time.Now()); ok {
		t.Fatal("cleaned segments above the recovery point")
	}
	l.Flush(leo)
	l.SetHighWatermark(mid + 1)
	if s, ok, err := l.clean(r, time.Now()); !ok || err != nil || s.EndOffset != mid {
		t.Fatalf("pass %+v ok %v err %v, want it to stop at the segment below the high watermark (%d)", s, ok, err, mid)
	}
	m.check(t, readLog(t, l), mid, mid, false)
}

func TestCleanerMinCompactionLag(t *testing.T) {
	clock := newTestClock()
	cfg := compactConfig(DefaultConfig())
	cfg.MinCompactionLagMs = 10_000
	l := openLog(t, memEnv(), cfg, withNow(clock.Now))
	m, rng := newModel(), rand.New(rand.NewSource(5))
	t0 := clock.Now().UnixMilli()
	leo := appendUpdates(t, m, l, rng, 40, 3, t0, 0)
	prepareClean(t, l)
	r := newCleanerResources(1<<20, nil, nil)
	clock.Add(5 * time.Second)
	if s, ok, err := l.clean(r, clock.Now()); ok || err != nil {
		t.Fatalf("records younger than min.compaction.lag.ms were cleaned: %+v %v", s, err)
	}
	if got := readLog(t, l); len(got) != int(leo) {
		t.Fatalf("%d records left of %d", len(got), leo)
	}
	clock.Add(6 * time.Second)
	if s, ok, err := l.clean(r, clock.Now()); !ok || err != nil || s.EndOffset != leo {
		t.Fatalf("pass after the lag: %+v ok %v err %v", s, ok, err)
	}
	got := readLog(t, l)
	if want := m.compactedOffsets(leo, leo, false); !slices.Equal(offsetsOf(got), want) {
		t.Fatalf("\n got %v\nwant %v", offsetsOf(got), want)
	}
}

func TestCleanerDirtyRatioAndMaxCompactionLag(t *testing.T) {
	clock := newTestClock()
	cfg := compactConfig(DefaultConfig())
	cfg.MinCleanableDirtyRatio = 0.9
	cfg.MaxCompactionLagMs = 60_000
	l := openLog(t, memEnv(), cfg, withNow(clock.Now))
	m, rng := newModel(), rand.New(rand.NewSource(6))
	t0 := clock.Now().UnixMilli()
	appendUpdates(t, m, l, rng, 200, 100, t0, 0)
	cleanNow(t, l, 1<<20, clock.Now()) // clean is called directly: ratio ignored
	appendUpdates(t, m, l, rng, 5, 100, t0, 0)
	prepareClean(t, l)
	c, _ := l.cleanableAt(clock.Now())
	if c.ratio() <= 0 || c.ratio() >= 0.9 || c.worthCleaning() {
		t.Fatalf("dirty ratio %.2f, worth cleaning %v: want a small ratio, not worth it", c.ratio(), c.worthCleaning())
	}
	clock.Add(2 * time.Minute)
	if c, _ = l.cleanableAt(clock.Now()); !c.needNow || !c.worthCleaning() {
		t.Fatalf("past max.compaction.lag.ms: needNow %v worth %v", c.needNow, c.worthCleaning())
	}
}

func TestCleanerTombstones(t *testing.T) {
	forEachLogConfig(t, func(t *testing.T, env testEnv, cfg Config) {
		clock := newTestClock()
		cfg = compactConfig(cfg)
		cfg.DeleteRetentionMs = 10_000
		l := openLog(t, env, cfg, withNow(clock.Now))
		m := newModel()
		ts := clock.Now().UnixMilli()
		m.appendKV(t, l, batchSpec{recs: []kv{rec("a", "1", ts), rec("b", "1", ts), rec("gone", "1", ts)}})
		m.appendKV(t, l, batchSpec{recs: []kv{rec("gone", "", ts)}}) // tombstone
		tomb := l.LogEndOffset() - 1
		m.appendKV(t, l, batchSpec{recs: []kv{rec("a", "2", ts)}})
		pass := func(wantTomb bool) {
			t.Helper()
			m.appendKV(t, l, batchSpec{recs: []kv{rec(fmt.Sprintf("filler-%d", l.LogEndOffset()), "x", ts)}})
			if _, ok := cleanNow(t, l, 1<<20, clock.Now()); !ok {
				t.Fatal("nothing cleaned")
			}
			got := readLog(t, l)
			leo := l.LogEndOffset()
			m.check(t, got, leo, leo, !wantTomb)
			if has := slices.Contains(offsetsOf(got), tomb); has != wantTomb {
				t.Fatalf("at +%v tombstone present %v, want %v: %v", clock.Now().UnixMilli()-ts, has, wantTomb, got)
			}
			if slices.Contains(offsetsOf(got), 2) {
				t.Fatalf("the value the tombstone deletes is still there: %v", got)
			}
		}
		pass(true) // first pass: the tombstone is cleaned once, kept
		clock.Add(9 * time.Second)
		pass(true) // cleaned once, but not delete.retention.ms ago
		// A restart keeps the cleaner state: the tombstone's clock still runs.
		l.Close()
		l = openLog(t, env, cfg, withNow(clock.Now))
		clock.Add(1 * time.Second)
		pass(false)
	})
}

func TestCleanerPartialCleanWithASmallMap(t *testing.T) {
	forEachLogConfig(t, func(t *testing.T, env testEnv, cfg Config) {
		cfg = compactConfig(cfg)
		l := openLog(t, env, cfg)
		m, rng := newModel(), rand.New(rand.NewSource(7))
		leo := appendUpdates(t, m, l, rng, 200, 60, 1000, 0)
		memory := int64(20 * offsetMapSlotSize) // 18 keys per pass
		var ends []int64
		for {
			s, ok := cleanNow(t, l, memory, time.Now())
			if !ok {
				break
			}
			ends = append(ends, s.EndOffset)
			if s.MapUtilization > 1 {
				t.Fatalf("map utilization %.2f", s.MapUtilization)
			}
			got := readLog(t, l)
			m.check(t, got, leo, leo, false)
			if len(ends) > 200 {
				t.Fatal("the cleaner makes no progress")
			}
		}
		if len(ends) < 3 || ends[len(ends)-1] != leo || !slices.IsSorted(ends) {
			t.Fatalf("pass ends %v, want several partial passes ending at %d", ends, leo)
		}
		// Every superseded record in a range a pass mapped is gone by the end.
		got := readLog(t, l)
		m.check(t, got, leo, leo, false)
		if len(got) > 60+len(ends)*18 {
			t.Fatalf("%d records left after %d passes", len(got), len(ends))
		}
	})
}

func TestCleanerMapTooSmallForOneBatch(t *testing.T) {
	l := openLog(t, memEnv(), compactConfig(DefaultConfig()))
	m := newModel()
	var recs []kv
	for i := 0; i < 40; i++ {
		recs = append(recs, rec(fmt.Sprintf("k%d", i), "v", 1000))
	}
	m.appendKV(t, l, batchSpec{recs: recs})
	prepareClean(t, l)
	if _, ok, err := l.clean(newCleanerResources(20*offsetMapSlotSize, nil, nil), time.Now()); !ok || err == nil {
		t.Fatalf("ok %v err %v, want an error naming log.cleaner.dedupe.buffer.size", ok, err)
	}
	if got := readLog(t, l); len(got) != 40 {
		t.Fatalf("%d records left", len(got))
	}
}
