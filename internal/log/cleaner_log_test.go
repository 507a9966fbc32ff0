package log

import (
	"errors"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/recordbatch"
)

// A follower replicating a cleaned leader from offset 0 gets batches with gaps
// between them, and must take them.
func TestFollowerReplicatesACleanedLeader(t *testing.T) {
	cfg := compactConfig(DefaultConfig())
	leader := openLog(t, memEnv(), cfg)
	m, rng := newModel(), rand.New(rand.NewSource(41))
	leo := appendUpdates(t, m, leader, rng, 80, 4, 1000, 0)
	cleanNow(t, leader, 1<<20, time.Now())
	follower := openLog(t, memEnv(), cfg)
	for off := int64(0); off < leo; {
		ri, err := leader.Read(off, 300, leo, true)
		if err != nil || ri.Size == 0 {
			t.Fatalf("leader read at %d: %v", off, err)
		}
		data, _ := ri.AppendTo(nil)
		info, err := follower.AppendAsFollower(data)
		if err != nil {
			t.Fatalf("follower append at %d (first batch %d): %v", off, recordbatch.Batch(data).BaseOffset(), err)
		}
		off = info.LastOffset + 1
	}
	if follower.LogEndOffset() != leo {
		t.Fatalf("follower log end %d, leader %d", follower.LogEndOffset(), leo)
	}
	if got, want := offsetsOf(readLog(t, follower)), offsetsOf(readLog(t, leader)); !slices.Equal(got, want) {
		t.Fatalf("follower %v, leader %v", got, want)
	}
	// Below the log end is still refused.
	ri, _ := leader.Read(0, 300, leo, true)
	data, _ := ri.AppendTo(nil)
	if _, err := follower.AppendAsFollower(data); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("append below the log end: %v", err)
	}
}

func TestRetentionFollowsTheCleanupPolicy(t *testing.T) {
	for _, policy := range []string{CleanupPolicyCompact, "compact,delete", CleanupPolicyDelete} {
		t.Run(policy, func(t *testing.T) {
			clock := newTestClock()
			cfg := compactConfig(DefaultConfig())
			cfg.CleanupPolicy = policy
			cfg.RetentionMs = 1000
			cfg.RetentionBytes = 10
			l := openLog(t, memEnv(), cfg, withNow(clock.Now))
			m := newModel()
			ts := clock.Now().UnixMilli()
			m.appendKV(t, l, batchSpec{recs: []kv{rec("a", "1", ts)}})
			l.Roll()
			m.appendKV(t, l, batchSpec{recs: []kv{rec("b", "1", ts)}})
			clock.Add(time.Hour)
			n, err := l.DeleteOldSegments(clock.Now())
			if err != nil {
				t.Fatal(err)
			}
			if want := policy != CleanupPolicyCompact; (n > 0) != want {
				t.Fatalf("cleanup.policy=%s: retention deleted %d segments", policy, n)
			}
		})
	}
}

// An empty segment the cleaner left before the active one does not stop time
// retention of compact,delete logs.
func TestRetentionDeletesEmptyCleanedSegments(t *testing.T) {
	clock := newTestClock()
	cfg := compactConfig(DefaultConfig())
	cfg.CleanupPolicy = "compact,delete"
	cfg.DeleteRetentionMs = 0
	cfg.RetentionMs = 60_000
	cfg.SegmentBytes = 100 // one batch per segment, one segment per group
	l := openLog(t, memEnv(), cfg, withNow(clock.Now))
	m := newModel()
	ts := clock.Now().UnixMilli()
	m.appendKV(t, l, batchSpec{recs: []kv{rec("a", "1", ts)}})
	l.Roll()
	m.appendKV(t, l, batchSpec{recs: []kv{rec("a", "", ts)}}) // tombstone
	cleanNow(t, l, 1<<20, clock.Now())
	m.appendKV(t, l, batchSpec{recs: []kv{rec("b", "1", ts)}})
	cleanNow(t, l, 1<<20, clock.Now()) // the tombstone goes: its segment is empty
	sizes := []int64{}
	for _, s := range l.segs() {
		sizes = append(sizes, s.size.Load())
	}
	if sizes[0] != 0 {
		t.Fatalf("segment sizes %v, want the first one emptied", sizes)
	}
	clock.Add(2 * time.Minute)
	n, err := l.DeleteOldSegments(clock.Now())
	if err != nil || n < 2 {
		t.Fatalf("retention deleted %d segments (%v), want the empty one and the expired ones", n, err)
	}
}

// A truncation below what the cleaner reached cuts its state, and a pass that was
// running when the log was truncated does not swap.
func TestCleanerAndTruncation(t *testing.T) {
	env := memEnv()
	cfg := compactConfig(DefaultConfig())
	l := openLog(t, env, cfg)
	m, rng := newModel(), rand.New(rand.NewSource(42))
	appendUpdates(t, m, l, rng, 40, 4, 1000, 0)
	l.Roll()
	mid := l.LogEndOffset()
	appendUpdates(t, m, l, rng, 40, 4, 1000, 0)
	cleanNow(t, l, 1<<20, time.Now())
	if l.cleanerEnd.Load() <= mid {
		t.Fatalf("cleaner end %d", l.cleanerEnd.Load())
	}
	if err := l.Truncate(mid); err != nil {
		t.Fatal(err)
	}
	if l.cleanerEnd.Load() != mid {
		t.Fatalf("cleaner end %d after truncating to %d", l.cleanerEnd.Load(), mid)
	}
	if s, err := readCleanerState(env.fs, env.dir); err != nil || s.firstDirty() != mid {
		t.Fatalf("cleaner checkpoint %v %v after truncating to %d", s.marks, err, mid)
	}
	// A pass whose swap finds the log truncated gives up.
	appendUpdates(t, m, l, rng, 40, 4, 2000, 0)
	prepareClean(t, l)
	r := newCleanerResources(1<<20, nil, nil)
	r.hook = func(step string) {
		if step == "cleaned" && l.truncations.Load() == 2 {
			l.Truncate(l.LogEndOffset() - 1)
		}
	}
	l.truncations.Store(2)
	before := readLog(t, l)
	_, _, err := l.clean(r, time.Now())
	if !errors.Is(err, errCleanAborted) {
		t.Fatalf("clean after a concurrent truncation: %v", err)
	}
	var want []int64
	for _, r := range before {
		if r.offset < l.LogEndOffset() {
			want = append(want, r.offset)
		}
	}
	if got := offsetsOf(readLog(t, l)); !slices.Equal(got, want) {
		t.Fatalf("after the aborted pass:\n got %v\nwant %v (only the truncation)", got, want)
	}
	names, _ := env.fs.ReadDir(env.dir)
	for _, name := range names {
		if marker, _, _, ok := ParseMarkedFilename(name); ok && marker == FileTypeCleaned {
			t.Fatalf("%s left by the aborted pass", name)
		}
	}
	// TruncateFullyAndStartAt empties the cleaner state below the log's first offset.
	if err := l.TruncateFullyAndStartAt(5000); err != nil {
		t.Fatal(err)
	}
	if s := l.cleanerEnd.Load(); s > 0 {
		t.Fatalf("cleaner end %d after a full truncation", s)
	}
}
