package log

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/runnel-io/runnel/internal/recordbatch"
)

// Errors that end a cleaning pass without a failure to report.
var (
	// errCleanAborted: the log was closed, truncated or changed under the pass,
	// or the cleaner is stopping. Nothing was swapped that should not have been.
	errCleanAborted = errors.New("cleaning pass aborted")
	// errMapFull stops building the offset map at a batch that does not fit.
	errMapFull = errors.New("offset map full")
)

// cleanerResources is what one cleaner goroutine owns and lends to its passes.
type cleanerResources struct {
	offsets *offsetMap
	codecs  *codecs
	io      *throttler        // shared by every cleaner goroutine; nil = unthrottled
	done    <-chan struct{}   // closed when the cleaner stops; nil = never
	scratch []byte            // reused record buffer
	hook    func(step string) // tests: called at each step of a swap; nil in production
}

func newCleanerResources(memory int64, io *throttler, done <-chan struct{}) *cleanerResources {
	return &cleanerResources{offsets: newOffsetMap(memory), codecs: newCodecs(), io: io, done: done}
}

// PassStats describes one cleaning pass of one log.
type PassStats struct {
	FirstDirty, EndOffset int64 // the pass mapped the keys of [FirstDirty, EndOffset)
	BytesRead             int64 // segment bytes read, building the map and cleaning
	BytesWritten          int64 // bytes of cleaned segments written
	RecordsRead           int64 // records examined while cleaning
	RecordsRemoved        int64 // superseded records and expired tombstones dropped
	Segments              int   // cleaned segments swapped in
	MapUtilization        float64
	Duration              time.Duration
}

// cleanPass is one run of the cleaner over one log (Kafka Cleaner.doClean).
type cleanPass struct {
	l          *Log
	r          *cleanerResources
	cfg        *Config
	now        time.Time
	state      cleanerState // the cleaner state at the start of the pass
	firstDirty int64
	end        int64 // the map holds the keys of [firstDirty, end)
	truncs     int64 // l.truncations at the start
	// stateWritten is true once the pass advanced the cleaner state (commitState).
	stateWritten bool
	stats        PassStats
}

// clean runs one pass over l if it has anything to clean: it maps the latest offset
// of every key in the dirty section (as far as the map holds), then rewrites the
// segments below the map's end group by group and swaps each group in. ok is false
// when there was nothing to clean.
func (l *Log) clean(r *cleanerResources, now time.Time) (stats PassStats, ok bool, err error) {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	c, ok := l.cleanableAt(now)
	if !ok || c.dirtyBytes == 0 {
		return PassStats{}, false, nil
	}
	l.flushMu.Lock()
	p := &cleanPass{l: l, r: r, cfg: c.cfg, now: now, state: l.cleaned, firstDirty: c.firstDirty, truncs: l.truncations.Load()}
	l.flushMu.Unlock()
	p.stats.FirstDirty = c.firstDirty
	if err := p.buildMap(&c); err != nil {
		return p.stats, true, p.abortedIfClosed(err)
	}
	p.stats.EndOffset, p.stats.MapUtilization = p.end, r.offsets.utilization()
	for _, g := range groupSegments(&c, p.end) {
		if err := p.cleanGroup(&c, g); err != nil {
			return p.stats, true, p.abortedIfClosed(err)
		}
	}
	if err := p.commitState(); err != nil {
		return p.stats, true, err
	}
	p.stats.Duration = l.now().Sub(now)
	return p.stats, true, nil
}

// abortedIfClosed turns the errors of a pass whose log closed under it (its files
// closed) into errCleanAborted.
func (p *cleanPass) abortedIfClosed(err error) error {
	if p.l.closed.Load() {
		return fmt.Errorf("%w: the log closed: %v", errCleanAborted, err)
	}
	return err
}

// checkDone returns errCleanAborted once the cleaner stops or the log closes.
func (p *cleanPass) checkDone() error {
	select {
	case <-p.r.done:
		return errCleanAborted
	default:
	}
	if p.l.closed.Load() {
		return errCleanAborted
	}
	return nil
}

// read accounts n bytes read (throttled, counted).
func (p *cleanPass) read(n int) error {
	p.stats.BytesRead += int64(n)
	return p.r.io.throttle(int64(n), p.r.done)
}

// buildMap puts the keys of the dirty segments into the offset map, whole batches
// only, until a batch does not fit (Kafka buildOffsetMap). It sets p.end to the
// offset after the last batch mapped, or to the end of the last dirty segment when
// every one was mapped. Mapping nothing is an error: the map cannot hold one batch.
func (p *cleanPass) buildMap(c *cleanable) error {
	p.r.offsets.reset()
	p.end = p.firstDirty
	from, to := c.dirtySegments()
	for i := from; i < to; i++ {
		err := p.mapSegment(c.segs[i])
		if errors.Is(err, errMapFull) {
			break
		}
		if err != nil {
			return err
		}
		p.end = c.ends[i]
	}
	if p.end <= p.firstDirty {
		return fmt.Errorf("log cleaner: %s-%d: a batch at offset %d has more keys than the offset map holds (%d): raise log.cleaner.dedupe.buffer.size",
			p.l.tp.Topic, p.l.tp.Partition, p.firstDirty, p.r.offsets.maxEntries)
	}
	return nil
}

// mapSegment puts the keys of s's batches at or after firstDirty into the map.
func (p *cleanPass) mapSegment(s *Segment) error {
	return p.scanSegment(s, func(b recordbatch.Batch) error {
		if b.LastOffset() < p.firstDirty || b.IsControl() || b.IsTransactional() {
			return nil // see filter
		}
		if !p.r.offsets.fits(int(b.RecordCount())) {
			return errMapFull
		}
		if err := p.mapBatch(b); err != nil {
			return err
		}
		p.end = b.NextOffset()
		return nil
	})
}

// scanSegment calls fn on every batch of s, as both of the pass's reads of a segment
// do: it stops once the pass is aborted, accounts (and throttles) the bytes read, and
// classifies how the scan ended with scanError.
func (p *cleanPass) scanSegment(s *Segment, fn func(b recordbatch.Batch) error) error {
	size := s.size.Load()
	valid, err := scanBatches(s.file, 0, size, true, func(b recordbatch.Batch, _ int64) error {
		if err := p.checkDone(); err != nil {
			return err
		}
		if err := p.read(len(b)); err != nil {
			return err
		}
		return fn(b)
	})
	return scanError(s, valid, size, err)
}

// scanError classifies how a scan of segment s by the cleaner ended: errors of the
// cleaner's own kinds pass, a batch that does not parse (the segment is below the
// recovery point) is ErrCorruption, a failed read ErrKafkaStorage.
func scanError(s *Segment, valid, size int64, err error) error {
	switch {
	case err == nil && valid == size:
		return nil
	case errors.Is(err, errMapFull) || errors.Is(err, errCleanAborted) || errors.Is(err, ErrCorruption) || errors.Is(err, ErrKafkaStorage):
		return err
	case err == nil || errors.Is(err, recordbatch.ErrCorrupt) || errors.Is(err, recordbatch.ErrTruncated) ||
		errors.Is(err, recordbatch.ErrUnsupportedMagic):
		return fmt.Errorf("%w: log cleaner reading %s: bad batch at position %d of %d: %v", ErrCorruption, s.path, valid, size, err)
	}
	return fmt.Errorf("%w: log cleaner reading %s at position %d: %v", ErrKafkaStorage, s.path, valid, err)
}

func (p *cleanPass) mapBatch(b recordbatch.Batch) error {
	data, err := p.r.codecs.recordsOf(b)
	if err != nil {
		return err
	}
	base := b.BaseOffset()
	return parseRecords(data, b.RecordCount(), func(r rawRecord) {
		if r.key != nil {
			p.r.offsets.put(r.key, base+r.offsetDelta)
		}
	})
}

// keep is Kafka's shouldRetainRecord: a record stays unless a later record has its
// key, or it is a tombstone that an earlier pass already reached more than
// delete.retention.ms ago. Records without a key stay: a compacted topic's leader
// now refuses them at produce as Kafka does (record_keys.go), but a log may still
// hold some written before that (or before the topic became compacted), and
// dropping them would lose data.
func (p *cleanPass) keep(off int64, r *rawRecord) bool {
	if r.key == nil {
		return true
	}
	if latest, ok := p.r.offsets.get(r.key); ok && off < latest {
		return false
	}
	return !(r.nullValue && p.tombstoneExpired(off))
}

func (p *cleanPass) tombstoneExpired(off int64) bool {
	if off >= p.firstDirty {
		return false // not cleaned once yet
	}
	at, ok := p.state.firstCleanedAt(off)
	return ok && p.now.UnixMilli()-at >= p.cfg.DeleteRetentionMs
}

// segmentGroup is a run of consecutive segments cleaned into one (indexes [from, to)
// of cleanable.segs).
type segmentGroup struct{ from, to int }

// groupSegments splits the segments below end into runs whose total size fits in
// segment.bytes and whose offsets fit in 4-byte relative offsets, so that each run
// is cleaned into one segment (Kafka groupSegmentsBySize).
func groupSegments(c *cleanable, end int64) []segmentGroup {
	var out []segmentGroup
	for i := 0; i < len(c.segs) && c.segs[i].baseOffset < end; {
		g := segmentGroup{from: i, to: i + 1}
		size := c.segs[i].size.Load()
		for j := i + 1; j < len(c.segs)-1 && c.segs[j].baseOffset < end; j++ {
			size += c.segs[j].size.Load()
			if size > c.cfg.SegmentBytes || c.ends[j]-1-c.segs[i].baseOffset > math.MaxInt32 {
				break
			}
			g.to = j + 1
		}
		out = append(out, g)
		i = g.to
	}
	return out
}
