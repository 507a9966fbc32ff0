package log

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/runnel-io/runnel/internal/config"
	"github.com/runnel-io/runnel/internal/vfs"
)

// ManagerOptions configure a Manager. Zero intervals take the Kafka defaults:
// log.retention.check.interval.ms 5 min, log.flush.scheduler.interval.ms 1 s (Kafka's
// default is "never"; Runnel checks flush.ms every second), and
// log.flush.offset.checkpoint.interval.ms 1 min.
type ManagerOptions struct {
	FS                                                             vfs.FS
	DataDir                                                        string
	Defaults                                                       Config // for logs found at startup; GetOrCreate passes its own
	Logger                                                         *slog.Logger
	RetentionCheckInterval, FlushCheckInterval, CheckpointInterval time.Duration
	Now                                                            func() time.Time
	// RecoveryThreads bounds how many logs are opened (recovered) at once
	// (num.recovery.threads.per.data.dir: a Manager has one data directory); zero takes
	// its default.
	RecoveryThreads int

	// Cleaner configures the log cleaner.
	Cleaner CleanerOptions

	// OnStorageError, if set, is called (on a goroutine of its own) when a disk error
	// takes a partition's log offline for writes, once per log.
	OnStorageError func(tp TopicPartition, err error)

	// PageCacheTail is every log's Options.PageCacheTail.
	PageCacheTail int64
}

// CleanerOptions configure the log cleaner, which compacts the logs whose
// cleanup.policy has compact (Kafka's log.cleaner.* broker configs).
type CleanerOptions struct {
	// Enable is log.cleaner.enable; false (the zero value) runs no cleaner.
	Enable bool
	// Threads is log.cleaner.threads, the cleaner goroutines (default 1).
	Threads int
	// DedupeBufferSize is log.cleaner.dedupe.buffer.size: the bytes of key-to-offset
	// maps, split between the goroutines (default 128 MiB). A pass maps as many keys
	// as fit and cleans that far; the next pass goes on from there.
	DedupeBufferSize int64
	// IOMaxBytesPerSecond is log.cleaner.io.max.bytes.per.second, read plus written
	// by all goroutines together (<= 0 or Kafka's Double.MAX_VALUE: unlimited).
	IOMaxBytesPerSecond float64
	// Backoff is log.cleaner.backoff.ms, the pause when no log needs cleaning
	// (default 15 s).
	Backoff time.Duration
}

// CleanerOptionsFor returns the cleaner options of a broker configuration.
// log.cleaner.threads=0 disables the cleaner, as in Kafka.
func CleanerOptionsFor(b *config.Broker) CleanerOptions {
	return CleanerOptions{
		Enable: b.LogCleanerEnable && b.LogCleanerThreads > 0, Threads: b.LogCleanerThreads,
		DedupeBufferSize: b.LogCleanerDedupeBufferSize, IOMaxBytesPerSecond: b.LogCleanerIoMaxBytesPerSecond,
		Backoff: time.Duration(b.LogCleanerBackoffMs) * time.Millisecond,
	}
}

// Manager is Kafka's LogManager for one data directory: it opens every partition log
// at startup, creates and deletes logs, runs retention, timed flushes and checkpoints
// in background goroutines, and owns the data-dir checkpoint files.
type Manager struct {
	o       ManagerOptions // immutable
	logger  *slog.Logger   // immutable
	cleaner *logCleaner    // immutable; nil when the cleaner is disabled
	// integrity counts the damage found and repaired in every log (shared by them).
	integrity IntegrityCounters
	// cleanShutdown: the previous run closed cleanly (set by NewManager, then immutable).
	cleanShutdown bool

	done chan struct{} // closed by Close to stop the loops
	wg   sync.WaitGroup

	mu sync.Mutex
	// guarded by mu:
	logs    map[TopicPartition]*Log
	started bool
	closed  bool
	// ckptMu serialises writers of the checkpoint files.
	ckptMu sync.Mutex
}

// NewManager reads the recovery point and log start checkpoints, removes
// directories left by an interrupted Delete (*-delete) and opens every
// <topic>-<partition> directory in parallel, recovering each.
func NewManager(o ManagerOptions) (*Manager, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	o.RetentionCheckInterval = orDefault(o.RetentionCheckInterval, 5*time.Minute)
	o.FlushCheckInterval = orDefault(o.FlushCheckInterval, time.Second)
	o.CheckpointInterval = orDefault(o.CheckpointInterval, time.Minute)
	if o.RecoveryThreads <= 0 {
		o.RecoveryThreads = config.Default().NumRecoveryThreadsPerDataDir
	}
	o.Cleaner = o.Cleaner.withDefaults()
	m := &Manager{o: o, logger: o.Logger.With("data_dir", o.DataDir), done: make(chan struct{}), logs: map[TopicPartition]*Log{}}
	if o.Cleaner.Enable {
		m.cleaner = newLogCleaner(m)
	}
	if err := o.FS.MkdirAll(o.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("%w: creating %s: %v", ErrKafkaStorage, o.DataDir, err)
	}
	if err := m.takeCleanShutdownMarker(); err != nil {
		return nil, err
	}
	if err := m.loadLogs(); err != nil {
		for _, l := range m.logs {
			l.Close()
		}
		return nil, err
	}
	return m, nil
}

func (o CleanerOptions) withDefaults() CleanerOptions {
	if o.Threads <= 0 {
		o.Threads = 1
	}
	if o.DedupeBufferSize <= 0 {
		o.DedupeBufferSize = 128 << 20
	}
	o.Backoff = orDefault(o.Backoff, 15*time.Second)
	return o
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// loadLogs opens the existing logs with at most RecoveryThreads at a time.
func (m *Manager) loadLogs() error {
	rps, err := ReadOffsetCheckpoint(m.o.FS, filepath.Join(m.o.DataDir, RecoveryPointCheckpointFile))
	if err != nil {
		m.logger.Warn("recovery point checkpoint unreadable: recovering every segment", "file", RecoveryPointCheckpointFile, "err", err)
		m.quarantineCheckpoint(RecoveryPointCheckpointFile)
		rps = nil
	}
	starts, err := ReadOffsetCheckpoint(m.o.FS, filepath.Join(m.o.DataDir, LogStartOffsetCheckpointFile))
	if err != nil {
		m.logger.Warn("log start offset checkpoint unreadable: every log starts at its first segment", "file", LogStartOffsetCheckpointFile, "err", err)
		m.quarantineCheckpoint(LogStartOffsetCheckpointFile)
		starts = nil
	}
	names, err := m.o.FS.ReadDir(m.o.DataDir)
	if err != nil {
		return fmt.Errorf("%w: listing %s: %v", ErrKafkaStorage, m.o.DataDir, err)
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex // guards errs
		errs []error
		sem  = make(chan struct{}, m.o.RecoveryThreads)
	)
	for _, name := range names {
		if IsDeleteDirName(name) {
			if err := m.o.FS.RemoveAll(filepath.Join(m.o.DataDir, name)); err != nil {
				m.logger.Warn("cannot remove deleted log directory", "dir", name, "err", err)
			}
			continue
		}
		tp, ok := ParsePartitionDirName(name)
		if !ok {
			continue
		}
		if fi, err := m.o.FS.Stat(filepath.Join(m.o.DataDir, name)); err != nil || !fi.IsDir() {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			err := m.openExisting(tp, rps[tp], starts[tp])
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("opening %s: %w", name, err))
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// openExisting opens (recovers) the log of tp found at startup.
func (m *Manager) openExisting(tp TopicPartition, rp, start int64) error {
	l, err := Open(m.logOptions(tp, m.o.Defaults, rp, start))
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.logs[tp] = l
	return nil
}

func (m *Manager) logOptions(tp TopicPartition, cfg Config, rp, start int64) Options {
	return Options{FS: m.o.FS, Dir: filepath.Join(m.o.DataDir, PartitionDirName(tp)), TP: tp, Config: cfg,
		RecoveryPoint: rp, LogStartOffset: start, Logger: m.o.Logger, Now: m.o.Now, OnTruncate: m.checkpointAfterTruncate,
		OnStorageError: m.storageErrorHook(tp), PageCacheTail: m.o.PageCacheTail, Integrity: &m.integrity}
}

// storageErrorHook is the OnStorageError of tp's log (nil without a manager hook).
func (m *Manager) storageErrorHook(tp TopicPartition) func(error) {
	if m.o.OnStorageError == nil {
		return nil
	}
	return func(err error) { m.o.OnStorageError(tp, err) }
}

// checkpointAfterTruncate rewrites the checkpoints after a truncation lowered a
// recovery point (see Options.OnTruncate).
func (m *Manager) checkpointAfterTruncate() {
	if err := m.Checkpoint(); err != nil {
		m.logger.Error("writing checkpoints after truncation", "err", err)
	}
}

// Start starts the background loops: retention every RetentionCheckInterval, timed
// flushes (flush.ms) every FlushCheckInterval, checkpoints every CheckpointInterval,
// and the log cleaner when enabled. Close stops them and waits.
func (m *Manager) Start() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started || m.closed {
		return
	}
	m.started = true
	m.goLoop(m.o.RetentionCheckInterval, m.retentionOnce)
	m.goLoop(m.o.FlushCheckInterval, m.flushOnce)
	m.goLoop(m.o.CheckpointInterval, func() {
		if err := m.Checkpoint(); err != nil {
			m.logger.Error("writing checkpoints", "err", err)
		}
	})
	if m.cleaner != nil {
		m.cleaner.start(m.o.Cleaner.Threads)
	}
}

// CleanerStats returns the log cleaner's counters (zero when it is disabled).
func (m *Manager) CleanerStats() CleanerStats {
	if m.cleaner == nil {
		return CleanerStats{}
	}
	return m.cleaner.snapshot()
}

// goLoop runs fn every interval until done is closed (tracked by wg).
func (m *Manager) goLoop(interval time.Duration, fn func()) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-m.done:
				return
			case <-t.C:
				fn()
			}
		}
	}()
}

func (m *Manager) retentionOnce() {
	now := m.o.Now()
	for tp, l := range m.All() {
		if n, err := l.DeleteOldSegments(now); err != nil && !errors.Is(err, ErrClosed) {
			m.logger.Warn("retention failed", "topic", tp.Topic, "partition", tp.Partition, "err", err)
		} else if n > 0 {
			m.logger.Info("retention deleted segments", "topic", tp.Topic, "partition", tp.Partition, "segments", n)
		}
	}
}

// flushOnce flushes the logs whose flush.ms has passed with unflushed data.
func (m *Manager) flushOnce() {
	now := m.o.Now()
	for tp, l := range m.All() {
		cfg := l.config.Load()
		if l.LogEndOffset() <= l.RecoveryPoint() || now.UnixMilli()-l.lastFlushMs.Load() < cfg.FlushMs {
			continue
		}
		if err := l.Flush(l.LogEndOffset()); err != nil && !errors.Is(err, ErrClosed) {
			m.logger.Warn("timed flush failed", "topic", tp.Topic, "partition", tp.Partition, "err", err)
		}
	}
}

// Get returns the log of tp, or nil.
func (m *Manager) Get(tp TopicPartition) *Log {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.logs[tp]
}

// GetOrCreate returns the log of tp, creating it with cfg when missing. An existing
// log gets cfg through UpdateConfig.
func (m *Manager) GetOrCreate(tp TopicPartition, cfg Config) (*Log, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	if l := m.logs[tp]; l != nil {
		l.UpdateConfig(cfg)
		return l, nil
	}
	l, err := Open(m.logOptions(tp, cfg, 0, 0))
	if err != nil {
		return nil, err
	}
	m.logs[tp] = l
	return l, nil
}

// All returns a copy of the map of logs.
func (m *Manager) All() map[TopicPartition]*Log {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[TopicPartition]*Log, len(m.logs))
	for tp, l := range m.logs {
		out[tp] = l
	}
	return out
}

// Delete closes the log of tp, renames its directory to
// <topic>-<partition>.<id>-delete (so that a crash cannot resurrect it: startup
// removes such directories) and removes it. Deleting an unknown log is not an error.
func (m *Manager) Delete(tp TopicPartition) error {
	m.mu.Lock()
	l := m.logs[tp]
	delete(m.logs, tp)
	m.mu.Unlock()
	if l == nil {
		return nil
	}
	if err := l.Close(); err != nil && !errors.Is(err, ErrClosed) {
		m.logger.Warn("closing deleted log", "topic", tp.Topic, "partition", tp.Partition, "err", err)
	}
	var id [16]byte
	rand.Read(id[:])
	gone := filepath.Join(m.o.DataDir, DeleteDirName(tp, hex.EncodeToString(id[:])))
	if err := m.o.FS.Rename(l.dir, gone); err != nil {
		return fmt.Errorf("%w: renaming %s: %v", ErrKafkaStorage, l.dir, err)
	}
	if err := m.o.FS.SyncDir(m.o.DataDir); err != nil {
		return fmt.Errorf("%w: syncing %s: %v", ErrKafkaStorage, m.o.DataDir, err)
	}
	if err := m.o.FS.RemoveAll(gone); err != nil {
		return fmt.Errorf("%w: removing %s: %v", ErrKafkaStorage, gone, err)
	}
	return nil
}

// WriteHighWatermarks writes replication-offset-checkpoint.
func (m *Manager) WriteHighWatermarks(hw map[TopicPartition]int64) error {
	m.ckptMu.Lock()
	defer m.ckptMu.Unlock()
	if err := WriteOffsetCheckpoint(m.o.FS, filepath.Join(m.o.DataDir, ReplicationCheckpointFile), hw); err != nil {
		return fmt.Errorf("%w: writing %s: %v", ErrKafkaStorage, ReplicationCheckpointFile, err)
	}
	return nil
}

// ReadHighWatermarks reads replication-offset-checkpoint (empty when missing). A file
// that does not parse is treated as missing, with a WARN naming it and a copy in
// quarantine: every partition then starts from the high watermark it can prove
// (the replica layer's rule for a partition absent from the file), rather than the
// node refusing to start. The error is only a failed read.
func (m *Manager) ReadHighWatermarks() (map[TopicPartition]int64, error) {
	hw, err := ReadOffsetCheckpoint(m.o.FS, filepath.Join(m.o.DataDir, ReplicationCheckpointFile))
	if errors.Is(err, ErrCorruption) {
		m.logger.Warn("high watermark checkpoint unreadable: treated as missing", "file", ReplicationCheckpointFile, "err", err)
		m.quarantineCheckpoint(ReplicationCheckpointFile)
		return map[TopicPartition]int64{}, nil
	}
	return hw, err
}

// quarantineCheckpoint copies a data-dir checkpoint file that does not parse to
// DATA_DIR/quarantine/ before it is overwritten. Best effort.
func (m *Manager) quarantineCheckpoint(name string) {
	path := filepath.Join(m.o.DataDir, name)
	if data, err := vfs.ReadFile(m.o.FS, path); err == nil {
		copyToQuarantine(m.o.FS, filepath.Join(m.o.DataDir, "quarantine"), path, data, m.o.Now().UnixMilli())
	}
}

// IntegrityStats returns the damage found and repaired in this data dir's logs since
// start (runnel_corrupt_batches_total, runnel_repaired_batches_total).
func (m *Manager) IntegrityStats() IntegrityStats { return m.integrity.Stats() }

// Checkpoint writes recovery-point-offset-checkpoint and log-start-offset-checkpoint
// for every log.
func (m *Manager) Checkpoint() error {
	logs := m.All()
	rps := make(map[TopicPartition]int64, len(logs))
	starts := make(map[TopicPartition]int64, len(logs))
	for tp, l := range logs {
		rps[tp] = l.RecoveryPoint()
		starts[tp] = l.LogStartOffset()
	}
	m.ckptMu.Lock()
	defer m.ckptMu.Unlock()
	if err := WriteOffsetCheckpoint(m.o.FS, filepath.Join(m.o.DataDir, RecoveryPointCheckpointFile), rps); err != nil {
		return fmt.Errorf("%w: writing %s: %v", ErrKafkaStorage, RecoveryPointCheckpointFile, err)
	}
	if err := WriteOffsetCheckpoint(m.o.FS, filepath.Join(m.o.DataDir, LogStartOffsetCheckpointFile), starts); err != nil {
		return fmt.Errorf("%w: writing %s: %v", ErrKafkaStorage, LogStartOffsetCheckpointFile, err)
	}
	return nil
}

// Close stops the loops, closes every log (flushing it) and writes the checkpoints.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return ErrClosed
	}
	m.closed = true
	close(m.done)
	m.mu.Unlock()
	m.wg.Wait()
	var errs []error
	for tp, l := range m.All() {
		if err := l.Close(); err != nil && !errors.Is(err, ErrClosed) {
			errs = append(errs, fmt.Errorf("closing %s-%d: %w", tp.Topic, tp.Partition, err))
		}
	}
	if err := m.Checkpoint(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		// Only a close that flushed everything may claim a clean shutdown.
		errs = append(errs, vfs.WriteFileAtomic(m.o.FS, filepath.Join(m.o.DataDir, CleanShutdownFile), nil))
	}
	return errors.Join(errs...)
}

// CleanShutdownFile marks a data dir whose logs were all flushed and closed (Kafka's
// .kafka_cleanshutdown). NewManager removes it, so a crash leaves none behind.
const CleanShutdownFile = ".runnel_cleanshutdown"

// takeCleanShutdownMarker records whether the previous run shut down cleanly and
// removes the marker, durably, before anything is written.
func (m *Manager) takeCleanShutdownMarker() error {
	path := filepath.Join(m.o.DataDir, CleanShutdownFile)
	if _, err := m.o.FS.Stat(path); err != nil {
		return nil // first start, or the previous run did not close cleanly
	}
	m.cleanShutdown = true
	if err := m.o.FS.Remove(path); err != nil {
		return fmt.Errorf("%w: removing %s: %v", ErrKafkaStorage, path, err)
	}
	return m.o.FS.SyncDir(m.o.DataDir)
}

// HadCleanShutdown reports whether the previous run of this data dir closed its logs
// cleanly. After an unclean shutdown, partitions with relaxed durability (flush.messages
// above 1) may have lost acknowledged records that were only in the page cache.
func (m *Manager) HadCleanShutdown() bool { return m.cleanShutdown }
