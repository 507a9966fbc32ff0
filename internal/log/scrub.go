package log

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/runnel-io/runnel/internal/vfs"
)

// The scrubber (docs/durability.md): recovery verifies only what a crash may have torn (the
// segments above the recovery point) and reads verify only what they read, so a
// flipped bit in a cold segment would be found only when a lagging consumer or a new
// replica reads it, possibly after every intact copy is gone. A scrub pass reads
// every inactive segment of every log of the data directory with Log.Verify: each
// batch's CRC-32C, framing and offsets, and the offset and time index entries. Damage
// it finds is recorded as recovery records it (quarantine, WARN, Log.Damaged), and
// from there the replica layer reports it in the heartbeats and repairs it from an
// in-sync replica (replica/repair.go); a wrong index is rebuilt. The active segment
// is left alone: recovery checked it at start-up, or this process wrote it.
//
// Passes are paced by a byte-rate limiter (log.scrub.bytes.per.second) and start
// log.scrub.interval.ms apart, counted from the start of the last finished pass, kept
// in DATA_DIR/scrub-checkpoint so that restarts do not postpone a pass forever (nor
// start one at every start-up). Interval -1 runs one pass after every start-up and
// none after. An on-demand pass (runnel cluster scrub, Manager.Scrub) is separate,
// unpaced and may overlap a background pass: Verify records a range once however many
// passes find it.

// ScrubCheckpointFile is the data-dir file holding the start time (Unix ms) of the
// last scrub pass that finished.
const ScrubCheckpointFile = "scrub-checkpoint"

// ScrubResult counts what one scrub pass did.
type ScrubResult struct {
	Logs int // logs scrubbed
	VerifyResult
	// Errors are the logs whose pass failed (a read error), by partition.
	Errors []string
}

func (r *ScrubResult) add(v VerifyResult) {
	r.Segments += v.Segments
	r.Batches += v.Batches
	r.Bytes += v.Bytes
	r.Corrupt += v.Corrupt
	r.IndexesRebuilt += v.IndexesRebuilt
}

// Scrub runs one scrub pass now over the logs keep accepts (nil: every log), in
// topic-partition order, reading through lim (nil: unpaced). A log closed or deleted
// meanwhile is skipped; a log whose read fails is named in Errors and the pass goes
// on. It stops at ctx's end, returning what it did and ctx's error.
func (m *Manager) Scrub(ctx context.Context, keep func(TopicPartition) bool, lim Limiter) (ScrubResult, error) {
	all := m.All()
	tps := make([]TopicPartition, 0, len(all))
	for tp := range all {
		if keep == nil || keep(tp) {
			tps = append(tps, tp)
		}
	}
	slices.SortFunc(tps, func(a, b TopicPartition) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	var r ScrubResult
	for _, tp := range tps {
		v, err := all[tp].Verify(ctx, lim)
		r.add(v)
		switch {
		case err == nil:
			r.Logs++
		case ctx.Err() != nil:
			return r, ctx.Err()
		case errors.Is(err, ErrClosed):
		default:
			r.Logs++
			r.Errors = append(r.Errors, fmt.Sprintf("%s-%d: %v", tp.Topic, tp.Partition, err))
			m.logger.Error("scrub: cannot verify a log", "topic", tp.Topic, "partition", tp.Partition, "err", err)
		}
	}
	return r, nil
}

// ScrubOptions configure a Scrubber (log.scrub.*).
type ScrubOptions struct {
	// Interval is log.scrub.interval.ms: from the start of one pass to the start of
	// the next. Zero or less: one pass after Start, none after.
	Interval time.Duration
	// BytesPerSecond is log.scrub.bytes.per.second; zero or less: unpaced.
	BytesPerSecond int64
	// StartDelay is how long after Start the first pass may begin at the earliest, so
	// that it does not compete with a node's start-up (default 1 minute).
	StartDelay time.Duration
}

// Scrubber runs scrub passes over a Manager's logs in the background.
type Scrubber struct {
	m      *Manager
	o      ScrubOptions
	lim    Limiter
	logger *slog.Logger

	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu   sync.Mutex
	last ScrubResult // the last finished pass
}

// NewScrubber returns a stopped Scrubber of m's logs.
func NewScrubber(m *Manager, o ScrubOptions) *Scrubber {
	if o.StartDelay <= 0 {
		o.StartDelay = time.Minute
	}
	s := &Scrubber{m: m, o: o, logger: m.logger.With("component", "scrubber")}
	if o.BytesPerSecond > 0 {
		// The burst is one Verify read; the average rate holds over any longer span.
		s.lim = rate.NewLimiter(rate.Limit(o.BytesPerSecond), max(VerifyChunk, int(min(o.BytesPerSecond, 1<<30))))
	}
	return s
}

// Start runs the passes on a goroutine of their own until Close.
func (s *Scrubber) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.loop(ctx)
	}()
}

// Close stops the scrubber, abandoning a pass in progress, and waits for it.
func (s *Scrubber) Close() {
	if s.cancel != nil {
		s.cancel()
	}
	s.wg.Wait()
}

// Last returns the counts of the last finished background pass.
func (s *Scrubber) Last() ScrubResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

func (s *Scrubber) loop(ctx context.Context) {
	wait := s.o.StartDelay
	if s.o.Interval > 0 {
		if last, ok := s.readCheckpoint(); ok {
			wait = max(wait, time.Until(last.Add(s.o.Interval)))
		}
	}
	for {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		start := time.Now()
		s.logger.Info("scrub pass starting", "bytes_per_second", s.o.BytesPerSecond)
		r, err := s.m.Scrub(ctx, nil, s.lim)
		if err != nil {
			return // closed
		}
		s.mu.Lock()
		s.last = r
		s.mu.Unlock()
		level := slog.LevelInfo
		if r.Corrupt > 0 || len(r.Errors) > 0 {
			level = slog.LevelWarn
		}
		s.logger.Log(ctx, level, "scrub pass finished", "logs", r.Logs, "segments", r.Segments, "batches", r.Batches,
			"bytes", r.Bytes, "corrupt", r.Corrupt, "indexes_rebuilt", r.IndexesRebuilt, "errors", len(r.Errors),
			"seconds", time.Now().Sub(start).Seconds())
		if s.o.Interval <= 0 {
			return // start-up only
		}
		s.writeCheckpoint(start)
		wait = max(time.Until(start.Add(s.o.Interval)), 0)
	}
}

// readCheckpoint returns the start of the last finished pass, if the file says.
func (s *Scrubber) readCheckpoint() (time.Time, bool) {
	path := filepath.Join(s.m.o.DataDir, ScrubCheckpointFile)
	b, err := vfs.ReadFile(s.m.o.FS, path)
	if err != nil {
		return time.Time{}, false
	}
	ms, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || ms <= 0 {
		// A garbled checkpoint only moves the next pass earlier.
		s.logger.Warn("scrub checkpoint unreadable: the next pass starts soon", "file", path, "err", err)
		return time.Time{}, false
	}
	return time.UnixMilli(ms), true
}

func (s *Scrubber) writeCheckpoint(start time.Time) {
	path := filepath.Join(s.m.o.DataDir, ScrubCheckpointFile)
	if err := vfs.WriteFileAtomic(s.m.o.FS, path, []byte(strconv.FormatInt(start.UnixMilli(), 10)+"\n")); err != nil {
		s.logger.Warn("cannot write the scrub checkpoint: the next start-up scrubs again", "file", path, "err", err)
	}
}
