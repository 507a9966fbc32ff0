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
	for rest := records; len(rest) > 0; {
		b, r, err := recordbatch.Next(rest, 0)
		if err != nil {
			return log.AppendInfo{}, fmt.Errorf("%w: mirrored batch of %s-%d: %w", ErrInvalidRecord, p.tp.Topic, p.tp.Partition, err)
		}
		b.SetPartitionLeaderEpoch(leaderEpoch)
		rest = r
	}
	info, err := p.appendMirroredLocked(records, leaderEpoch)
	if err != nil {
		return info, err
	}
	return info, p.completeAppend(context.Background(), info, 1, nil)
}

func (p *Partition) appendMirroredLocked(records []byte, leaderEpoch int32) (log.AppendInfo, error) {
	p.leaderIsrLock.RLock()
	defer p.leaderIsrLock.RUnlock()
	if !p.rs.isLeader() || p.rs.leaderEpoch != leaderEpoch {
		return log.AppendInfo{}, fmt.Errorf("%w: %s-%d is no longer led here at epoch %d", ErrNotLeader, p.tp.Topic, p.tp.Partition, leaderEpoch)
	}
	return p.log.AppendAsFollower(records)
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
	p.logger.Info("promoted mirror partition: writable", "leader_epoch", p.rs.leaderEpoch,
		"truncated_from", start, "writable_from", end)
}
