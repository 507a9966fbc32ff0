package replica

// Mirror partitions (cluster links, issue 32; internal/link fetches from the source).
// The leader of a mirror partition appends the source's batches through the path a
// follower uses (log.AppendAsFollower: the batches' own offsets, gaps allowed, no
// re-validation of sequences, producer state and transaction index rebuilt from them),
// stamping only the partition leader epoch field, which is outside the CRC, with this
// cluster's epoch: the epoch cache and the divergence checks of this cluster's own
// followers (OffsetForLeaderEpoch) must speak this cluster's epochs, not the source's,
// which may go backwards relative to them. Everything else is byte for byte the
// source's. The destination's followers then replicate the partition as any other:
// the high watermark and the ISR work unchanged.

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/runnel-io/runnel/internal/log"
	"github.com/runnel-io/runnel/internal/recordbatch"
)

// hwMirrorCut: a mirror partition's leader moved its log (a promote cut to the last
// stable offset, or a restart at the source's log start), and its high watermark with
// it. Not checked by checkHighWatermarkLocked: these are the only leader moves that
// may go down, and only at a role change (sealPromotedLocked) or before the partition
// ever took a write (RestartMirrorAt).
const hwMirrorCut hwChange = 100

// AppendMirrored appends batches fetched from the source of a mirror partition as
// this partition's leader of leaderEpoch: each batch keeps its offsets and bytes, and
// gets leaderEpoch stamped in its partition leader epoch field (in place: records is
// the caller's and is changed). It returns once appended and flushed per the topic's
// flush policy; the followers replicate it as usual. ErrNotLeader when this replica no
// longer leads leaderEpoch (the link fetcher then drops what it fetched).
func (p *Partition) AppendMirrored(records []byte, leaderEpoch int32) (log.AppendInfo, error) {
	var seen []SourceEpoch // the source's epochs, read before they are overwritten
	for rest := records; len(rest) > 0; {
		b, r, err := recordbatch.Next(rest, 0)
		if err != nil {
			return log.AppendInfo{}, fmt.Errorf("%w: mirrored batch of %s-%d: %w", ErrInvalidRecord, p.tp.Topic, p.tp.Partition, err)
		}
		if e := b.PartitionLeaderEpoch(); len(seen) == 0 || seen[len(seen)-1].Epoch != e {
			seen = append(seen, SourceEpoch{Epoch: e, StartOffset: b.BaseOffset()})
		}
		b.SetPartitionLeaderEpoch(leaderEpoch)
		rest = r
	}
	info, err := p.appendMirroredLocked(records, leaderEpoch, seen)
	if err != nil {
		return info, err
	}
	return info, p.completeAppend(context.Background(), info, 1, nil)
}

// SourceEpoch is one entry of a mirror partition's source epoch lineage: from
// StartOffset on, the batches this replica appended carried the source's leader
// epoch Epoch (as the source stamped it, before this cluster's epoch replaced it).
type SourceEpoch struct {
	Epoch       int32
	StartOffset int64
}

// sourceLineageMax bounds the lineage kept: only its last entries matter (the epoch
// of the last mirrored batch at a promote), and a source's leader changes are rare.
const sourceLineageMax = 256

// mirrorState is the cluster-link state of a partition beyond its log: the source
// epoch lineage of what this replica mirrored as leader (in memory: a replica that
// restarted, or took the leadership over mid-mirror, knows only the epochs of what
// it copied itself), the promote cut it made, and the failback cut it must make.
type mirrorState struct {
	mu      sync.Mutex // guards lineage and seal; taken last (after leaderIsrLock, stateMu)
	lineage []SourceEpoch
	seal    PromoteSeal
	// cut is the failback cut of the current image (nil: none); set on every image.
	cut atomic.Pointer[failbackCut]
}

type failbackCut struct {
	to    int64
	epoch int32
}

// PromoteSeal is what a promoted mirror partition's leader did when it took the
// promote: at LeaderEpoch it cut its log to MirroredEnd (the end of what was
// mirrored, where this cluster's writes start); SourceEpoch is the source's leader
// epoch of the mirrored batch just below it, -1 when this replica did not copy it.
type PromoteSeal struct {
	LeaderEpoch int32
	MirroredEnd int64
	SourceEpoch int32
}

func (m *mirrorState) noteSourceEpochs(seen []SourceEpoch) {
	if len(seen) == 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range seen {
		// A batch appended again at or below an entry's start (a restart of the
		// mirror) replaces what the lineage said from there on.
		for len(m.lineage) > 0 && m.lineage[len(m.lineage)-1].StartOffset >= e.StartOffset {
			m.lineage = m.lineage[:len(m.lineage)-1]
		}
		if n := len(m.lineage); n == 0 || m.lineage[n-1].Epoch != e.Epoch {
			m.lineage = append(m.lineage, e)
		}
	}
	if over := len(m.lineage) - sourceLineageMax; over > 0 {
		m.lineage = append(m.lineage[:0], m.lineage[over:]...)
	}
}

// sourceEpochAt returns the source's epoch of the batch holding offset off, -1 when
// the lineage does not cover it.
func (m *mirrorState) sourceEpochAt(off int64) int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := len(m.lineage) - 1; i >= 0; i-- {
		if m.lineage[i].StartOffset <= off {
			return m.lineage[i].Epoch
		}
	}
	return -1
}

// SourceLineage returns a copy of the source epoch lineage this replica knows.
func (p *Partition) SourceLineage() []SourceEpoch {
	p.mirror.mu.Lock()
	defer p.mirror.mu.Unlock()
	return append([]SourceEpoch(nil), p.mirror.lineage...)
}

// PromoteSealed returns the promote cut this replica made as leader, ok false when
// it made none (it was not the first leader of the promote epoch, or restarted since).
func (p *Partition) PromoteSealed() (PromoteSeal, bool) {
	p.mirror.mu.Lock()
	defer p.mirror.mu.Unlock()
	return p.mirror.seal, p.mirror.seal.LeaderEpoch > 0
}

// appendMirroredLocked appends and notes the source epochs seen under the same read
// lock, so that a promote's role change (which takes it for writing) finds the
// lineage of everything in the log.
func (p *Partition) appendMirroredLocked(records []byte, leaderEpoch int32, seen []SourceEpoch) (log.AppendInfo, error) {
	p.leaderIsrLock.RLock()
	defer p.leaderIsrLock.RUnlock()
	if !p.rs.isLeader() || p.rs.leaderEpoch != leaderEpoch {
		return log.AppendInfo{}, fmt.Errorf("%w: %s-%d is no longer led here at epoch %d", ErrNotLeader, p.tp.Topic, p.tp.Partition, leaderEpoch)
	}
	info, err := p.log.AppendAsFollower(records)
	if err == nil {
		p.mirror.noteSourceEpochs(seen)
	}
	return info, err
}

// RestartMirrorAt empties the log and restarts it at off, the source's log start,
// as the leader of leaderEpoch: the destination held nothing the source still has
// (a new mirror of a source whose start was deleted, or a destination that fell
// behind the source's retention). The followers restart there too (their fetch below
// the leader's log start answers OFFSET_OUT_OF_RANGE, and they restart at the
// leader's start).
func (p *Partition) RestartMirrorAt(off int64, leaderEpoch int32) error {
	p.leaderIsrLock.RLock()
	defer p.leaderIsrLock.RUnlock()
	if !p.rs.isLeader() || p.rs.leaderEpoch != leaderEpoch {
		return fmt.Errorf("%w: %s-%d is no longer led here at epoch %d", ErrNotLeader, p.tp.Topic, p.tp.Partition, leaderEpoch)
	}
	if err := p.log.TruncateFullyAndStartAt(off); err != nil {
		return err
	}
	p.mirror.mu.Lock()
	p.mirror.lineage = nil
	p.mirror.mu.Unlock()
	p.stateMu.Lock()
	p.setHighWatermarkLocked(off, hwMirrorCut)
	p.rs.epochStartOffset = off
	p.stateMu.Unlock()
	return nil
}

// MirrorEnds are what the link fetcher needs of this replica: whether it leads
// leaderEpoch, its log end (the next offset to fetch from the source), its log start
// and its high watermark.
func (p *Partition) MirrorEnds() (leaderEpoch int32, leading bool, logStart, logEnd, hw int64) {
	p.leaderIsrLock.RLock()
	defer p.leaderIsrLock.RUnlock()
	return p.rs.leaderEpoch, p.rs.isLeader(), p.log.LogStartOffset(), p.log.LogEndOffset(), p.hw.Load()
}

// setPromoteEpoch tells the partition, before its state is applied, from which
// leader epoch it is a promoted mirror partition (metadata.Image.PromoteEpoch); -1:
// it is not one. Called by the Manager on every image.
func (p *Partition) setPromoteEpoch(epoch int32, ok bool) {
	if !ok {
		epoch = -1
	}
	p.promoteEpoch.Store(epoch + 1) // 0, the zero value, is "not promoted"
}

// sealPromotedLocked runs when this replica becomes leader of a new epoch: if the
// partition is a promoted mirror partition, the epoch is at least its promote epoch
// and its log holds no batch of such an epoch yet (nothing was written since the
// promote), it cuts the log to its last stable offset, repeatedly (a cut can reopen
// a transaction whose marker it removed), so that no half transaction of the source
// survives and producers write after whole transactions only. Followers find the cut
// through OffsetForLeaderEpoch, as after any leader change. Caller holds leaderIsrLock
// for writing and stateMu.
func (p *Partition) sealPromotedLocked() {
	p.cutFailbackLocked()
	promote := p.promoteEpoch.Load() - 1
	if promote < 0 || p.rs.leaderEpoch < promote {
		return
	}
	if e, ok := p.log.LatestEpoch(); ok && e >= promote {
		return // written since the promote: those records are this cluster's own
	}
	start := p.log.LogEndOffset()
	for {
		leo := p.log.LogEndOffset()
		lso := p.log.LastStableOffset(leo)
		if lso >= leo {
			break
		}
		if err := p.log.Truncate(lso); err != nil {
			p.logger.Error("promoted mirror partition: cannot cut to the last stable offset", "offset", lso, "err", err)
			return
		}
	}
	end := p.log.LogEndOffset()
	if p.hw.Load() > end {
		p.setHighWatermarkLocked(end, hwMirrorCut)
	}
	p.rs.epochStartOffset = end
	seal := PromoteSeal{LeaderEpoch: p.rs.leaderEpoch, MirroredEnd: end, SourceEpoch: p.mirror.sourceEpochAt(end - 1)}
	p.mirror.mu.Lock()
	p.mirror.seal = seal
	p.mirror.mu.Unlock()
	p.logger.Info("promoted mirror partition: writable", "leader_epoch", p.rs.leaderEpoch,
		"truncated_from", start, "writable_from", end, "source_epoch", seal.SourceEpoch)
}

// setFailbackCut tells the partition, before its state is applied, the failback cut
// of the image (metadata.Image.FailbackCut): from leader epoch epoch on, its log is
// cut to to. Called by the Manager on every image.
func (p *Partition) setFailbackCut(to int64, epoch int32, ok bool) {
	if !ok {
		p.mirror.cut.Store(nil)
		return
	}
	if c := p.mirror.cut.Load(); c == nil || c.to != to || c.epoch != epoch {
		p.mirror.cut.Store(&failbackCut{to: to, epoch: epoch})
	}
}

// cutFailbackLocked runs when this replica becomes leader of a new epoch: if a
// failback cut the partition at an epoch at or below this one and its log holds no
// batch of such an epoch (nothing was mirrored since the cut), it cuts its log to
// the divergence point, so the old primary's tail (set aside in quarantine by the
// failback before the cut was recorded) goes, and mirroring continues from there.
// Followers find the cut through OffsetForLeaderEpoch, as after any leader change.
// Caller holds leaderIsrLock for writing and stateMu.
func (p *Partition) cutFailbackLocked() {
	c := p.mirror.cut.Load()
	if c == nil || p.rs.leaderEpoch < c.epoch {
		return
	}
	if e, ok := p.log.LatestEpoch(); ok && e >= c.epoch {
		return // mirrored since the cut: those records are the new primary's
	}
	start := p.log.LogEndOffset()
	if start <= c.to {
		return
	}
	if err := p.log.Truncate(c.to); err != nil {
		p.logger.Error("failback: cannot cut the log to the divergence point", "offset", c.to, "err", err)
		return
	}
	end := p.log.LogEndOffset()
	if p.hw.Load() > end {
		p.setHighWatermarkLocked(end, hwMirrorCut)
	}
	p.rs.epochStartOffset = end
	p.mirror.mu.Lock()
	p.mirror.lineage = nil
	p.mirror.mu.Unlock()
	p.logger.Info("failback: log cut to the divergence point", "leader_epoch", p.rs.leaderEpoch,
		"truncated_from", start, "truncated_to", end)
}
