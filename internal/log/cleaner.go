package log

import (
	"errors"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// CleanerStats are the log cleaner's counters since the Manager started, for
// metrics (Kafka's kafka.log:type=LogCleaner and LogCleanerManager metrics).
type CleanerStats struct {
	Passes         int64 // passes that cleaned something
	Failures       int64 // passes that failed; the log is then left alone for a while
	Segments       int64 // cleaned segments swapped in
	BytesRead      int64
	BytesWritten   int64
	RecordsRead    int64
	RecordsRemoved int64
	// ThrottledTime is the time the cleaners slept for
	// log.cleaner.io.max.bytes.per.second.
	ThrottledTime time.Duration
	// MaxDirtyRatio is the largest dirty ratio among compacted logs at the last
	// choice of a log (Kafka max-dirty-percent / 100).
	MaxDirtyRatio float64
	// UncleanablePartitions counts the logs left alone after a failed pass.
	UncleanablePartitions int
	LastPass              PassStats // the last pass that cleaned something
	LastPassPartition     TopicPartition
	LastPassEnd           time.Time // zero before the first pass
	LastError             string    // the last failure, "" if none
}

// logCleaner runs the cleaning passes of the compacted logs of a Manager (Kafka
// LogCleaner + LogCleanerManager): CleanerOptions.Threads goroutines each pick the
// dirtiest log no other is cleaning, clean it, and back off for CleanerOptions.Backoff
// when no log is worth cleaning.
type logCleaner struct {
	m       *Manager      // immutable
	logger  *slog.Logger  // immutable
	io      *throttler    // immutable; shared by the goroutines, nil = unthrottled
	memory  int64         // immutable: offset map bytes per goroutine
	backoff time.Duration // immutable

	mu sync.Mutex
	// guarded by mu:
	inProgress map[*Log]bool
	failedAt   map[*Log]time.Time // logs whose last pass failed, left alone until failedAt+failedBackoff
	stats      CleanerStats
}

// failedBackoff is how long a log whose pass failed is left alone.
func (c *logCleaner) failedBackoff() time.Duration { return max(4*c.backoff, time.Minute) }

func newLogCleaner(m *Manager) *logCleaner {
	o := m.o.Cleaner
	return &logCleaner{
		m: m, logger: m.logger.With("component", "log-cleaner"),
		io:      newThrottler(o.IOMaxBytesPerSecond, time.Now),
		memory:  o.DedupeBufferSize / int64(o.Threads),
		backoff: o.Backoff, inProgress: map[*Log]bool{}, failedAt: map[*Log]time.Time{},
	}
}

// start starts the cleaner goroutines, tracked by the Manager's WaitGroup and
// stopped by its done channel.
func (c *logCleaner) start(threads int) {
	for i := 0; i < threads; i++ {
		c.m.wg.Add(1)
		go func() {
			defer c.m.wg.Done()
			c.run(newCleanerResources(c.memory, c.io, c.m.done))
		}()
	}
}

func (c *logCleaner) run(r *cleanerResources) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-c.m.done:
			return
		case <-t.C:
		}
		if c.cleanOnce(r) {
			t.Reset(0)
		} else {
			t.Reset(c.backoff)
		}
	}
}

// cleanOnce cleans the dirtiest log, if any is worth it. It reports whether it
// cleaned something.
func (c *logCleaner) cleanOnce(r *cleanerResources) bool {
	now := c.m.o.Now()
	l := c.grab(now)
	if l == nil {
		return false
	}
	defer c.release(l)
	stats, ok, err := l.clean(r, now)
	c.record(l, stats, ok, err)
	return ok && err == nil
}

// grab picks the log to clean and marks it in progress: among the compacted logs
// worth cleaning that no goroutine is cleaning and that did not fail recently, those
// past max.compaction.lag.ms first, then the dirtiest.
func (c *logCleaner) grab(now time.Time) *Log {
	logs := c.m.All()
	c.mu.Lock()
	defer c.mu.Unlock()
	for l := range c.failedAt {
		if logs[l.TopicPartition()] != l {
			delete(c.failedAt, l) // deleted or replaced
		}
	}
	var best *cleanable
	maxRatio := 0.0
	for _, l := range logs {
		if c.inProgress[l] || now.Before(c.failedAt[l].Add(c.failedBackoff())) {
			continue
		}
		cl, ok := l.cleanableAt(now)
		if !ok {
			continue
		}
		maxRatio = max(maxRatio, cl.ratio())
		if cl.worthCleaning() && (best == nil || dirtier(&cl, best)) {
			best = &cl
		}
	}
	c.stats.MaxDirtyRatio = maxRatio
	if best == nil {
		return nil
	}
	c.inProgress[best.log] = true
	return best.log
}

func dirtier(a, b *cleanable) bool {
	if a.needNow != b.needNow {
		return a.needNow
	}
	return a.ratio() > b.ratio()
}

func (c *logCleaner) release(l *Log) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.inProgress, l)
}

// record adds a pass to the stats and logs it.
func (c *logCleaner) record(l *Log, s PassStats, ok bool, err error) {
	tp := l.TopicPartition()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stats.BytesRead += s.BytesRead
	c.stats.BytesWritten += s.BytesWritten
	c.stats.RecordsRead += s.RecordsRead
	c.stats.RecordsRemoved += s.RecordsRemoved
	c.stats.Segments += int64(s.Segments)
	switch {
	case errors.Is(err, errCleanAborted):
		c.logger.Info("cleaning pass aborted", "topic", tp.Topic, "partition", tp.Partition)
	case err != nil:
		c.stats.Failures++
		c.stats.LastError = err.Error()
		c.failedAt[l] = c.m.o.Now()
		c.logger.Error("cleaning pass failed; leaving the log alone for a while", "topic", tp.Topic,
			"partition", tp.Partition, "retry_in", c.failedBackoff(), "err", err)
	case ok:
		delete(c.failedAt, l)
		c.stats.Passes++
		c.stats.LastPass, c.stats.LastPassPartition, c.stats.LastPassEnd = s, tp, c.m.o.Now()
		c.logger.Info("cleaned log", "topic", tp.Topic, "partition", tp.Partition, "first_dirty", s.FirstDirty,
			"end", s.EndOffset, "segments", s.Segments, "bytes_read", s.BytesRead, "bytes_written", s.BytesWritten,
			"records_removed", s.RecordsRemoved, "map_utilization", s.MapUtilization, "duration", s.Duration)
	}
}

// snapshot returns the stats.
func (c *logCleaner) snapshot() CleanerStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	now := c.m.o.Now()
	for _, at := range c.failedAt {
		if now.Before(at.Add(c.failedBackoff())) {
			s.UncleanablePartitions++
		}
	}
	s.ThrottledTime = c.io.total()
	return s
}

// throttler limits the bytes per second that the cleaner goroutines read and write
// together (Kafka Throttler for log.cleaner.io.max.bytes.per.second): every
// throttleCheckInterval it compares the observed rate with the limit and sleeps
// long enough to bring it back under.
type throttler struct {
	rate     float64                                          // bytes/s, immutable
	interval time.Duration                                    // immutable: throttleCheckInterval
	now      func() time.Time                                 // immutable
	sleep    func(d time.Duration, done <-chan struct{}) bool // immutable; false when done closed first

	throttled atomic.Int64 // total time slept, in ns

	// mu is held while sleeping, so the goroutines share the budget.
	mu sync.Mutex
	// guarded by mu:
	periodStart time.Time
	bytes       float64 // since periodStart
}

const throttleCheckInterval = 300 * time.Millisecond

// newThrottler returns nil (no limit) for a rate that is not positive and finite
// or is Kafka's default, Double.MAX_VALUE.
func newThrottler(rate float64, now func() time.Time) *throttler {
	if !(rate > 0) || rate >= math.MaxFloat64/2 {
		return nil
	}
	return &throttler{rate: rate, interval: throttleCheckInterval, now: now, sleep: sleepOrDone, periodStart: now()}
}

func sleepOrDone(d time.Duration, done <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-done:
		return false
	}
}

// throttle accounts n bytes and sleeps when the rate is above the limit. It
// returns errCleanAborted when done closes during the sleep.
func (t *throttler) throttle(n int64, done <-chan struct{}) error {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.bytes += float64(n)
	now := t.now()
	elapsed := now.Sub(t.periodStart)
	if elapsed < t.interval {
		return nil
	}
	if t.bytes/elapsed.Seconds() > t.rate {
		wait := time.Duration(t.bytes/t.rate*float64(time.Second)) - elapsed
		t.throttled.Add(int64(wait))
		if !t.sleep(wait, done) {
			return errCleanAborted
		}
		now = t.now()
	}
	t.periodStart, t.bytes = now, 0
	return nil
}

// total is the time slept so far. It does not wait for a sleep in progress.
func (t *throttler) total() time.Duration {
	if t == nil {
		return 0
	}
	return time.Duration(t.throttled.Load())
}
