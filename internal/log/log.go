package log

import (
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/vfs"
)

// TopicPartition names a partition.
type TopicPartition = metadata.TopicPartition

// Options open a Log.
type Options struct {
	FS     vfs.FS
	Dir    string // the partition directory, <data dir>/<topic>-<partition>
	TP     TopicPartition
	Config Config
	// RecoveryPoint is the checkpointed durable end: segments wholly below it are
	// trusted, the others are scanned at Open.
	RecoveryPoint int64
	// LogStartOffset is the checkpointed log start offset (DeleteRecords, retention).
	LogStartOffset int64
	Logger         *slog.Logger     // nil = slog.Default()
	Now            func() time.Time // nil = time.Now
	// OnTruncate, if set, is called after Truncate or TruncateFullyAndStartAt moved
	// the recovery point down, outside the log's locks. The Manager rewrites the
	// recovery point checkpoint there (Kafka LogManager.truncateTo): a stale, higher
	// checkpoint would make the next recovery trust segments written after the
	// truncation that were never flushed.
	OnTruncate func()
	// OnStorageError, if set, is called on a goroutine of its own when a disk error
	// takes the log offline for writes (once), and when an append finds the disk full
	// (an error wrapping ErrDiskFull; once per episode: again only after an append has
	// succeeded in between).
	OnStorageError func(err error)
	// PageCacheTail is log.page.cache.tail.bytes: how many of the last durable bytes
	// of the log stay in the page cache; older ones are dropped from it after each
	// fsync (pagecache.go). Negative: the OS alone decides (Kafka's behaviour).
	PageCacheTail int64
	// Integrity receives the counts of damage found and repaired (damage.go); nil
	// gives the log counters of its own.
	Integrity *IntegrityCounters
}

// Log is one partition's log (Kafka UnifiedLog + LocalLog): a list of segments, the
// last of which (the active segment) receives appends.
//
// Lock order: cleanMu -> flushMu -> mu -> index locks. Readers take no Log lock: they
// load the segment list and offsets atomically and read immutable byte ranges.
type Log struct {
	fs         vfs.FS           // immutable
	dir        string           // immutable
	tp         TopicPartition   // immutable
	logger     *slog.Logger     // immutable
	now        func() time.Time // immutable
	onTruncate func()           // immutable, may be nil
	// onStorageError is Options.OnStorageError (immutable, may be nil).
	onStorageError func(error)
	// pageCacheTail is Options.PageCacheTail (immutable).
	pageCacheTail int64
	// integrity is Options.Integrity (immutable, never nil).
	integrity *IntegrityCounters
	// damaged is every segment's damaged ranges joined, in offset order (nil when
	// none): republished by refreshDamage, under flushMu, whenever a segment's list
	// changes or a segment holding damage leaves the log. Readers load it without a
	// lock (Read refuses offsets at or past the first range).
	damaged atomic.Pointer[[]DamagedRange]
	// pendingDrop is the page cache drop the last flush left for Flush to run.
	pendingDrop atomic.Pointer[cacheDrop]

	config atomic.Pointer[Config]
	// segments is the sorted, never empty list of segments, replaced (copy on write)
	// under mu; the last one is active.
	segments atomic.Pointer[[]*Segment]
	// leo is the log end offset, stored after the active segment's size, so a reader
	// that loads leo then the size sees every batch below leo.
	leo atomic.Int64
	// Invariant: segments[0].baseOffset <= logStart <= leo. Only grows, except for
	// TruncateFullyAndStartAt.
	logStart atomic.Int64
	// Invariant: recoveryPoint <= leo; every offset below it has been fsynced.
	recoveryPoint atomic.Int64
	// highWatermark bounds retention (set by the replica layer); -1 = no bound.
	highWatermark atomic.Int64
	lastFlushMs   atomic.Int64
	closed        atomic.Bool

	// truncations counts the truncations (Truncate, TruncateFullyAndStartAt) that
	// removed offsets: a cleaning pass that saw it change gives up before its swap.
	truncations atomic.Int64
	// cleanerEnd is cleaned.firstDirty(), readable without flushMu.
	cleanerEnd atomic.Int64
	// readHook, set by tests before any read, is called by every read between its
	// checks of the offset against the log start and end and its load of the segment
	// list: the window in which retention can delete the segment the read wants. Nil
	// in production.
	readHook func()

	// cleanMu serialises the log cleaner's passes over this log. Lock order:
	// cleanMu -> flushMu -> mu.
	cleanMu sync.Mutex

	// flushMu serialises the operations that fsync or delete files: Flush (group
	// commit: one fsync for every append so far), Truncate, retention, the cleaner's
	// swaps, Close. It is never taken while holding mu.
	flushMu sync.Mutex
	// guarded by flushMu:
	pendingDeletes []pendingDelete
	// cleaned is how far the log cleaner got (cleaner-offset-checkpoint), loaded at
	// Open, advanced by the cleaner's first swap of a pass and cut by truncation.
	cleaned cleanerState

	// residentMu guards resident: the inactive segments whose indexes are in memory,
	// used last at the end (resident.go). Taken inside mu, never the other way round;
	// it takes segments' loadMu inside.
	residentMu sync.Mutex
	resident   []*Segment

	// mu is the append lock. It is never held across an fsync.
	mu sync.Mutex
	// guarded by mu:
	unflushed []*Segment // rolled segments not fsynced yet, oldest first
	epochs    *LeaderEpochCache
	producers *producerState
	// undropped counts the bytes appended since the last page cache drop was started.
	undropped  int64
	storageErr error // non-nil once a disk operation failed: the log is offline for writes
	// noSpace is set while appends find the disk full (ENOSPC), which unlike other disk
	// errors leaves the log writable; the first append that fits clears it.
	noSpace bool

	// offline mirrors storageErr != nil for readers that do not take mu (Offline).
	offline atomic.Bool
}

// pendingDelete is a segment renamed *.deleted, removed after file.delete.delay.ms.
type pendingDelete struct {
	seg *Segment
	at  time.Time
}

// Open opens (creating it when missing) the log in o.Dir and recovers it: see doc.go.
func Open(o Options) (*Log, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	cfg := o.Config.sanitized()
	l := &Log{
		fs: o.FS, dir: o.Dir, tp: o.TP, now: o.Now, onTruncate: o.OnTruncate, onStorageError: o.OnStorageError,
		pageCacheTail: o.PageCacheTail, integrity: o.Integrity,
		logger:    o.Logger.With("topic", o.TP.Topic, "partition", o.TP.Partition),
		epochs:    newLeaderEpochCache(o.Dir),
		producers: newProducerState(),
	}
	if l.integrity == nil {
		l.integrity = &IntegrityCounters{}
	}
	l.config.Store(&cfg)
	l.highWatermark.Store(-1)
	l.lastFlushMs.Store(o.Now().UnixMilli())
	if err := l.mkdir(); err != nil {
		return nil, err
	}
	if err := l.load(o); err != nil {
		l.closeSegments()
		return nil, err
	}
	return l, nil
}

// mkdir creates the partition directory.
func (l *Log) mkdir() error {
	if err := l.fs.MkdirAll(l.dir, 0o755); err != nil {
		return fmt.Errorf("%w: creating %s: %v", ErrKafkaStorage, l.dir, err)
	}
	return nil
}

// TopicPartition returns the partition this log stores.
func (l *Log) TopicPartition() TopicPartition { return l.tp }

// Dir returns the partition directory.
func (l *Log) Dir() string { return l.dir }

// Config returns the current configuration.
func (l *Log) Config() Config { return *l.config.Load() }

// UpdateConfig replaces the configuration; it applies from the next append (a smaller
// segment.bytes rolls then) and the next retention run.
func (l *Log) UpdateConfig(c Config) {
	c = c.sanitized()
	l.config.Store(&c)
}

// LogStartOffset is the first offset readable.
func (l *Log) LogStartOffset() int64 { return l.logStart.Load() }

// LogEndOffset is the offset the next appended record gets.
func (l *Log) LogEndOffset() int64 { return l.leo.Load() }

// RecoveryPoint is the durable end: every offset below it has been fsynced.
func (l *Log) RecoveryPoint() int64 { return l.recoveryPoint.Load() }

// SetHighWatermark tells the log the replica layer's high watermark: retention never
// deletes a segment holding offsets at or above it. Negative = no bound (the default).
func (l *Log) SetHighWatermark(hw int64) { l.highWatermark.Store(hw) }

func (l *Log) segs() []*Segment { return *l.segments.Load() }

// Size is the total size of the segment files in bytes.
func (l *Log) Size() int64 {
	var n int64
	for _, s := range l.segs() {
		n += s.size.Load()
	}
	return n
}

// NumSegments is the number of segments (at least 1).
func (l *Log) NumSegments() int { return len(l.segs()) }

// SegmentBaseOffsets returns the base offset of every segment, in order.
func (l *Log) SegmentBaseOffsets() []int64 {
	ss := l.segs()
	out := make([]int64, len(ss))
	for i, s := range ss {
		out[i] = s.baseOffset
	}
	return out
}

// floorSegment returns the index of the last segment whose base is <= offset, or -1.
func floorSegment(ss []*Segment, offset int64) int {
	return sort.Search(len(ss), func(i int) bool { return ss[i].baseOffset > offset }) - 1
}

func (l *Log) activeLocked() *Segment {
	ss := l.segs()
	return ss[len(ss)-1]
}

// publishLocked replaces the segment list. Segments published for the first time get
// their owner (set before they become visible to readers).
func (l *Log) publishLocked(ss []*Segment) {
	for _, s := range ss {
		if s.owner == nil {
			s.owner = l
		}
	}
	l.segments.Store(&ss)
}

// LatestEpoch returns the latest leader epoch in the log.
func (l *Log) LatestEpoch() (int32, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.epochs.latest()
	return e.Epoch, ok
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch with KIP-101/279 semantics: the
// largest epoch <= epoch in the log and the start offset of the next larger epoch, or
// the log end offset for the latest epoch. Unknown: (UndefinedEpoch, UndefinedEpochOffset).
func (l *Log) EndOffsetForEpoch(epoch int32) (int32, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.epochs.endOffsetFor(epoch, l.leo.Load())
}

// EpochEntries returns a copy of the leader epoch cache.
func (l *Log) EpochEntries() []EpochEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]EpochEntry(nil), l.epochs.entries...)
}

// ProducerState returns the epoch and last sequence of an idempotent producer.
func (l *Log) ProducerState(pid int64) (epoch int16, lastSeq int32, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.producers.producers[pid]
	if e == nil {
		return 0, 0, false
	}
	return e.epoch, e.last().lastSeq, true
}

// checkWritableLocked returns the error appends must fail with, if any.
func (l *Log) checkWritableLocked() error {
	if l.closed.Load() {
		return ErrClosed
	}
	if l.storageErr != nil {
		return fmt.Errorf("%w: %s is offline after an earlier disk error: %v", ErrKafkaStorage, l.dir, l.storageErr)
	}
	return nil
}

// failLocked takes the log offline for writes after a disk error and returns the
// error to give the caller.
func (l *Log) failLocked(op string, err error) error {
	if l.storageErr == nil {
		l.storageErr = err
		l.offline.Store(true)
		l.logger.Error("log offline for writes after a disk error", "dir", l.dir, "op", op, "err", err)
		if l.onStorageError != nil {
			go l.onStorageError(fmt.Errorf("%s %s: %w", op, l.dir, err))
		}
	}
	return fmt.Errorf("%w: %s %s: %v", ErrKafkaStorage, op, l.dir, err)
}

// Offline reports whether a disk error took the log offline for writes: its log end
// may then include records that were never made durable.
func (l *Log) Offline() bool { return l.offline.Load() }

// noSpaceLocked answers an append that found the disk full. The write was cut back to
// where it started, so the log is exactly as it was before: unlike after other disk
// errors it stays writable, and a producer's retry succeeds once space is freed. The
// node hears of it once per episode (in a cluster it stops, so that replicas on other
// disks take over, as for any disk error).
func (l *Log) noSpaceLocked(err error) error {
	if !l.noSpace {
		l.noSpace = true
		l.logger.Error("disk full: appends to this partition fail until space is freed", "dir", l.dir, "err", err)
		if l.onStorageError != nil {
			go l.onStorageError(fmt.Errorf("%w: write %s: %w", ErrDiskFull, l.dir, err))
		}
	}
	return fmt.Errorf("%w: %w: write %s: %v", ErrKafkaStorage, ErrDiskFull, l.dir, err)
}

func (l *Log) fail(op string, err error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failLocked(op, err)
}

func (l *Log) closeSegments() {
	if p := l.segments.Load(); p != nil {
		for _, s := range *p {
			s.close()
		}
	}
}
