package group

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/runnel-io/runnel/internal/recordbatch"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// loadedGroup is what the replay of a partition knows about one group: the last live
// metadata record (nil if none or tombstoned) and the live offsets.
type loadedGroup struct {
	meta    *kmsg.GroupMetadataValue
	offsets map[TopicPartition]offsetAndMetadata
	// txnOffsets are the offsets of transactions with no marker yet, by producer id.
	txnOffsets map[int64]map[TopicPartition]offsetAndMetadata
	// consumer holds the group's consumer group records (nil: none seen).
	consumer *loadedConsumer
}

// loadedGroupOf returns groups[id], creating it.
func loadedGroupOf(groups map[string]*loadedGroup, id string) *loadedGroup {
	lg := groups[id]
	if lg == nil {
		lg = &loadedGroup{offsets: map[TopicPartition]offsetAndMetadata{}}
		groups[id] = lg
	}
	return lg
}

// replayConsumerRecord applies a consumer group record (key types 3 to 8); it reports
// false for any other key. Types Runnel does not write (4, Kafka's deprecated
// partition metadata) are skipped.
func replayConsumerRecord(groups map[string]*loadedGroup, key, value []byte) (bool, error) {
	if len(key) < 2 {
		return false, nil
	}
	typ := int16(binary.BigEndian.Uint16(key))
	switch typ {
	case recConsumerGroupMetadata, recConsumerMemberMetadata, recTargetAssignmentMeta, recTargetAssignmentMember, recCurrentMemberAssignment:
		return true, decodeConsumerRecord(typ, key, value, func(id string) *loadedConsumer {
			lg := loadedGroupOf(groups, id)
			if lg.consumer == nil {
				lg.consumer = newLoadedConsumer()
			}
			return lg.consumer
		})
	case 4:
		return true, nil
	}
	return false, nil
}

// replay applies the records of raw batches to groups, in log order: a later record
// replaces an earlier one with the same key and a tombstone removes it, as compaction
// would. The offsets of a transactional batch wait for the producer's marker
// (txn_offsets.go); compressed batches are an error (Runnel writes
// them uncompressed and clients may not produce to __consumer_offsets).
func replay(groups map[string]*loadedGroup, batches []byte) (next int64, err error) {
	next = -1
	for len(batches) > 0 {
		var b recordbatch.Batch
		b, batches, err = recordbatch.Next(batches, 0)
		if err != nil {
			return next, err
		}
		next = b.NextOffset()
		if b.IsControl() {
			replayControl(groups, b)
			continue
		}
		if b.Compression() != 0 {
			return next, fmt.Errorf("batch at offset %d is compressed (codec %d)", b.BaseOffset(), b.Compression())
		}
		err := forEachRecord(b[recordbatch.HeaderSize:], b.RecordCount(), func(key, value []byte) error {
			if ok, err := replayConsumerRecord(groups, key, value); ok {
				if err != nil {
					return fmt.Errorf("batch at offset %d: %w", b.BaseOffset(), err)
				}
				return nil
			}
			r, err := decodeRecord(key, value)
			if err != nil {
				return fmt.Errorf("batch at offset %d: %w", b.BaseOffset(), err)
			}
			if b.IsTransactional() {
				replayTxnBatch(groups, b.ProducerID(), r)
			} else {
				applyRecord(groups, r)
			}
			return nil
		})
		if err != nil {
			return next, err
		}
	}
	return next, nil
}

func applyRecord(groups map[string]*loadedGroup, r decodedRecord) {
	lg := loadedGroupOf(groups, r.group)
	switch {
	case r.isOffset && r.offset != nil:
		lg.offsets[r.tp] = *r.offset
	case r.isOffset:
		delete(lg.offsets, r.tp)
	default:
		lg.meta = r.meta
	}
}

// restoreGroup rebuilds a group from its replayed records. Members start a fresh
// session at now, as Kafka does on load; a group with members resumes Stable in its
// stored generation, so that members carry on without a rebalance.
func restoreGroup(id string, lg *loadedGroup, lim limits, newMemberID func(string) string, now time.Time) *groupMetadata {
	g := newGroupMetadata(id, lim, newMemberID, now)
	g.offsets = lg.offsets
	if len(lg.txnOffsets) > 0 {
		g.txnOffsets = lg.txnOffsets
	}
	if lc := lg.consumer; lc != nil && lc.epoch != nil {
		g.consumer = restoreConsumerGroup(lc, lim, now)
		g.protocolType = "consumer"
		return g
	}
	m := lg.meta
	if m == nil {
		return g
	}
	g.persisted = true
	g.generation, g.protocolType = m.Generation, m.ProtocolType
	if m.Protocol != nil {
		g.protocol = *m.Protocol
	}
	for _, vm := range m.Members {
		mm := &memberMetadata{
			id: vm.MemberID, instanceID: vm.InstanceID, clientID: vm.ClientID, clientHost: vm.ClientHost,
			protocols:        []Protocol{{Name: g.protocol, Metadata: vm.Subscription}},
			sessionTimeout:   time.Duration(vm.SessionTimeoutMillis) * time.Millisecond,
			rebalanceTimeout: time.Duration(vm.RebalanceTimeoutMillis) * time.Millisecond,
			assignment:       vm.Assignment, lastHeartbeat: now,
		}
		g.add(mm, m.ProtocolType)
	}
	if m.Leader != nil && g.members[*m.Leader] != nil {
		g.leader = *m.Leader
	}
	if len(g.members) > 0 {
		g.transition(Stable, now)
	} else if m.CurrentStateTimestamp > 0 {
		g.stateSince = time.UnixMilli(m.CurrentStateTimestamp) // emptied then, for offset expiry
	}
	return g
}

// loadShard replays sh's partition and starts the owner of every group found. Records
// the previous leader wrote but did not commit count too: the load first waits for the
// high watermark to reach the log end as it was when this node became leader (Kafka
// loads up to the log end).
func (c *Coordinator) loadShard(sh *shard) {
	start := time.Now()
	groups := map[string]*loadedGroup{}
	_, _, target := sh.log.Offsets()
	off, err := c.replayShard(sh, groups, target)
	if err != nil {
		if sh.ctx.Err() == nil {
			c.logger.Error("cannot load groups; the partition stays unavailable", "partition", sh.partition, "err", err)
		}
		return
	}
	sh.mu.Lock()
	for _, tc := range sh.loadCompletions {
		replayTxnMarker(groups, tc.pid, tc.commit)
	}
	sh.loadCompletions = nil
	n := 0
	for id, lg := range groups {
		if lg.meta == nil && len(lg.offsets) == 0 && len(lg.txnOffsets) == 0 && (lg.consumer == nil || lg.consumer.epoch == nil) {
			continue
		}
		if c.startGroup(sh, restoreGroup(id, lg, c.lim, newMemberID, time.Now())) != nil {
			n++
			for pid := range lg.txnOffsets {
				sh.trackTxnGroup(pid, id)
			}
		}
	}
	close(sh.loaded) // under sh.mu: CompleteTxn queues to loadCompletions until then
	sh.mu.Unlock()
	level := slog.LevelDebug
	if n > 0 {
		level = slog.LevelInfo
	}
	c.logger.Log(context.Background(), level, "loaded groups", "partition", sh.partition, "groups", n, "end_offset", off, "took", time.Since(start))
}

// replayShard reads sh's log from its start until target, waiting for the high
// watermark as needed; it returns the offset reached, or an error once sh is unloaded.
func (c *Coordinator) replayShard(sh *shard, groups map[string]*loadedGroup, target int64) (int64, error) {
	var off int64
	maxBytes := int32(1 << 20)
	var buf []byte
	for {
		logStart, hw, _ := sh.log.Offsets()
		off = max(off, logStart)
		if off >= target {
			return off, nil
		}
		if off < hw {
			var err error
			buf, err = sh.log.Read(buf[:0], off, maxBytes)
			if err == nil && len(buf) > 0 {
				next, rerr := replay(groups, buf)
				switch {
				case next > off:
					if rerr != nil && !errors.Is(rerr, recordbatch.ErrTruncated) {
						c.logger.Error("skipping undecodable __consumer_offsets records", "partition", sh.partition, "offset", off, "err", rerr)
					}
					off = next
				case errors.Is(rerr, recordbatch.ErrTruncated) && maxBytes < 1<<30:
					maxBytes *= 2 // the first batch did not fit
				default:
					return off, fmt.Errorf("cannot decode __consumer_offsets at offset %d: %w", off, rerr)
				}
				continue
			}
			if err != nil {
				c.logger.Warn("reading __consumer_offsets", "partition", sh.partition, "offset", off, "err", err)
			}
		}
		select {
		case <-sh.ctx.Done():
			return off, sh.ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}
