package log

import (
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/testutil"
	"github.com/runnel-io/runnel/internal/vfs"
)

func withCleaner(o CleanerOptions) func(*ManagerOptions) {
	return func(m *ManagerOptions) { m.Cleaner = o }
}

func TestManagerCleanerCompactsOnlyCompactedLogs(t *testing.T) {
	fsys := vfs.NewMem()
	m := newManager(t, fsys, "/data", withCleaner(CleanerOptions{Enable: true, Threads: 2, Backoff: 5 * time.Millisecond}))
	compacted, err := m.GetOrCreate(TopicPartition{Topic: "__consumer_offsets"}, compactConfig(DefaultConfig()))
	testutil.NoError(t, err)
	plain, err := m.GetOrCreate(TopicPartition{Topic: "orders"}, DefaultConfig())
	testutil.NoError(t, err)
	both := compactConfig(DefaultConfig())
	both.CleanupPolicy = "compact,delete"
	mixed, err := m.GetOrCreate(TopicPartition{Topic: "mixed"}, both)
	testutil.NoError(t, err)
	models := map[*Log]*model{}
	for i, l := range []*Log{compacted, plain, mixed} {
		models[l] = newModel()
		appendUpdates(t, models[l], l, rand.New(rand.NewSource(int64(i))), 100, 5, 1000, 0)
		prepareClean(t, l)
	}
	m.Start()
	testutil.Eventually(t, 10*time.Second, func() error {
		if s := m.CleanerStats(); s.Passes < 2 {
			return fmt.Errorf("%d passes", s.Passes)
		}
		return nil
	})
	for _, l := range []*Log{compacted, mixed} {
		leo := l.LogEndOffset()
		got := readLog(t, l)
		if want := models[l].compactedOffsets(leo, leo, false); !slices.Equal(offsetsOf(got), want) {
			t.Fatalf("%s:\n got %v\nwant %v", l.TopicPartition().Topic, offsetsOf(got), want)
		}
	}
	if got := readLog(t, plain); len(got) != int(plain.LogEndOffset()) {
		t.Fatalf("a log with cleanup.policy=delete lost records: %d of %d", len(got), plain.LogEndOffset())
	}
	s := m.CleanerStats()
	if s.BytesRead == 0 || s.BytesWritten == 0 || s.RecordsRemoved == 0 || s.Segments < 2 || s.LastPassEnd.IsZero() ||
		s.Failures != 0 || s.LastError != "" {
		t.Fatalf("stats %+v", s)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestManagerCleanerLeavesAFailingLogAlone(t *testing.T) {
	m := newManager(t, vfs.NewMem(), "/data", withCleaner(CleanerOptions{Enable: true, DedupeBufferSize: 20 * offsetMapSlotSize, Backoff: 5 * time.Millisecond}))
	l, err := m.GetOrCreate(TopicPartition{Topic: "big-batches"}, compactConfig(DefaultConfig()))
	testutil.NoError(t, err)
	var recs []kv
	for i := 0; i < 40; i++ {
		recs = append(recs, rec(fmt.Sprintf("k%d", i), "v", 1000))
	}
	newModel().appendKV(t, l, batchSpec{recs: recs})
	prepareClean(t, l)
	m.Start()
	testutil.Eventually(t, 10*time.Second, func() error {
		if s := m.CleanerStats(); s.Failures != 1 || s.UncleanablePartitions != 1 || s.LastError == "" {
			return fmt.Errorf("stats %+v", s)
		}
		return nil
	})
	time.Sleep(50 * time.Millisecond) // ten backoffs: the log is not retried yet
	if s := m.CleanerStats(); s.Failures != 1 {
		t.Fatalf("a failing log was retried at once: %d failures", s.Failures)
	}
}

func TestManagerCleanerStopsOnClose(t *testing.T) {
	// A throttled cleaner in the middle of a long pass stops when the Manager closes.
	m := newManager(t, vfs.NewMem(), "/data", withCleaner(CleanerOptions{Enable: true, IOMaxBytesPerSecond: 1000, Backoff: time.Millisecond}))
	l, err := m.GetOrCreate(TopicPartition{Topic: "t"}, compactConfig(DefaultConfig()))
	testutil.NoError(t, err)
	appendUpdates(t, newModel(), l, rand.New(rand.NewSource(1)), 200, 5, 1000, 0)
	prepareClean(t, l)
	m.cleaner.io.interval = time.Nanosecond // check at every read: the pass is short
	m.Start()
	testutil.Eventually(t, 10*time.Second, func() error {
		if m.CleanerStats().ThrottledTime == 0 {
			return errors.New("not throttled yet")
		}
		return nil
	})
	done := make(chan error)
	go func() { done <- m.Close() }()
	select {
	case err := <-done:
		testutil.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Close waits for the throttled cleaner")
	}
}

func TestThrottler(t *testing.T) {
	clock := newTestClock()
	var slept []time.Duration
	th := newThrottler(1000, clock.Now)
	th.sleep = func(d time.Duration, _ <-chan struct{}) bool {
		slept = append(slept, d)
		clock.Add(d)
		return true
	}
	for i := 0; i < 30; i++ { // 100 bytes every 100 ms: 1000 bytes/s, at the limit
		clock.Add(100 * time.Millisecond)
		testutil.NoError(t, th.throttle(100, nil))
	}
	if len(slept) != 0 {
		t.Fatalf("slept %v at the limit", slept)
	}
	for i := 0; i < 10; i++ { // 500 bytes every 100 ms
		clock.Add(100 * time.Millisecond)
		testutil.NoError(t, th.throttle(500, nil))
	}
	var total time.Duration
	for _, d := range slept {
		total += d
	}
	// 5000 bytes at 1000 bytes/s take 5 s, of which 1 s passed.
	if total < 3500*time.Millisecond || total > 4500*time.Millisecond || th.total() != total {
		t.Fatalf("slept %v (total %v), want about 4s", slept, total)
	}
	done := make(chan struct{})
	close(done)
	th.sleep = sleepOrDone
	clock.Add(time.Second)
	if err := th.throttle(1e9, done); !errors.Is(err, errCleanAborted) {
		t.Fatalf("throttle after done: %v", err)
	}
	if newThrottler(1.7976931348623157e308, time.Now) != nil || newThrottler(0, time.Now) != nil {
		t.Fatal("Kafka's default and 0 must not throttle")
	}
}

func TestOffsetMap(t *testing.T) {
	m := newOffsetMap(100_000 * offsetMapSlotSize)
	for i := 0; i < 50_000; i++ {
		if !m.fits(1) {
			t.Fatalf("full after %d keys", i)
		}
		m.put([]byte(fmt.Sprint("key-", i%20_000)), int64(i))
	}
	if m.count != 20_000 || m.latest != 49_999 {
		t.Fatalf("count %d latest %d", m.count, m.latest)
	}
	for i := 0; i < 20_000; i++ {
		off, ok := m.get([]byte(fmt.Sprint("key-", i)))
		want := int64(40_000 + i)
		if i >= 10_000 {
			want = int64(20_000 + i)
		}
		if !ok || off != want {
			t.Fatalf("key-%d: %d %v, want %d", i, off, ok, want)
		}
	}
	if _, ok := m.get([]byte("absent")); ok {
		t.Fatal("found an absent key")
	}
	if _, ok := m.get(nil); ok {
		t.Fatal("found the empty key")
	}
	small := newOffsetMap(20 * offsetMapSlotSize)
	for i := 0; small.fits(1); i++ {
		small.put([]byte(fmt.Sprint(i)), int64(i))
	}
	if small.count != 18 || len(small.slots) != 20 || small.utilization() != 1 {
		t.Fatalf("a 20-slot map holds %d keys in %d slots", small.count, len(small.slots))
	}
	small.reset()
	if small.count != 0 || !small.fits(18) {
		t.Fatal("reset")
	}
}
