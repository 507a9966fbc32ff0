// Package log stores partition logs on disk: Kafka's LogSegment, UnifiedLog and
// LogManager, unaware of leaders, ISR and Raft. Every file operation goes through
// vfs.FS, and every file name is made and parsed in filenames.go.
//
// # Directory layout
//
//	<data dir>/recovery-point-offset-checkpoint   "topic partition offset" (checkpoint format)
//	<data dir>/log-start-offset-checkpoint
//	<data dir>/replication-offset-checkpoint      high watermarks, written for the replica layer
//	<data dir>/<topic>-<partition>/
//	    00000000000000000000.log        segment: raw v2 batches
//	    00000000000000000000.index      offset index
//	    00000000000000000000.timeindex  time index
//	    00000000000000170410.log        the active segment (base offset = its first offset)
//	    00000000000000170410.snapshot   producer state as of offset 170410
//	    leader-epoch-checkpoint         "epoch startOffset" (checkpoint format)
//	    cleaner-offset-checkpoint       "upTo firstCleanedMs" per cleaning pass (compacted logs)
//	    00000000000000000000.log.cleaned  a segment being cleaned (also .index.cleaned, ...)
//	    00000000000000000000.log.swap     a cleaned segment committed, being swapped in
//	    damaged-ranges-checkpoint       damaged ranges found (damage.go), scanned again at Open
//	<data dir>/<topic>-<partition>.<id>-delete/   a deleted log, removed at startup
//	<data dir>/quarantine/<topic>-<partition>/<segment>.log.<unix ms>   copies of damaged
//	    segments (and of checkpoint files that did not parse), never deleted by Runnel
//
// Offsets in names are zero-padded to 20 digits so that ls sorts them numerically.
//
// # Segment (.log)
//
// Batches are stored exactly as producers sent them, after the leader stamped the
// base offset and partition leader epoch in place (both outside the CRC). Each batch
// carries its own framing and checksum, so the file has no other structure:
//
//	+-------------------- batch --------------------+-------------------- batch ---
//	| baseOffset 8 | batchLength 4 | epoch 4 | magic 1 | crc 4 | attrs … records |  …
//	+--------------+---------------+---------+---------+-------+-----------------+---
//	               |<------------- batchLength ------------------------------>|
//	                                                    |<-- CRC-32C covers -->|
//
// # Offset index (.index) and time index (.timeindex)
//
//	.index      | relativeOffset uint32 | position uint32 |             8 bytes / entry
//	.timeindex  | timestamp int64       | relativeOffset uint32 |      12 bytes / entry
//
// Both are sparse: one entry every index.interval.bytes of appended batches. An offset
// entry names the last offset of a batch and the position where that batch starts; a
// time entry (T, O) says that every record up to offset O has a timestamp <= T, and T
// strictly increases. Entries are kept in memory and written whole when the segment
// rolls and at Close, never preallocated; no checksum covers them. At Open, segments
// below the recovery point load their indexes lazily and rebuild them when missing or
// failing the sanity check (sizes not a multiple of the entry size, entries not
// increasing, positions past the segment end); the segments from the recovery point on,
// and always the last one, are scanned and their indexes rebuilt.
//
// # Durability
//
// An append writes to the page cache. Flush(upTo) fsyncs the active segment (and the
// segments rolled since the previous flush, with their indexes) and then advances the
// recovery point: every offset below RecoveryPoint is durable. With the default
// flush.messages=1 the replica layer flushes before it acknowledges; concurrent
// flushes share one fsync, and no fsync ever runs under the append lock. The epoch
// checkpoint is written (atomically, fsynced) by the flush that follows a change.
// Producer snapshots are written at roll and close without fsync: a torn one fails its
// CRC and recovery falls back to an older snapshot or a full scan.
//
// # Recovery
//
// Recovery scans the segments from the recovery point on batch by batch (framing,
// CRC via Verify, offsets increasing). It cuts only a torn tail, the one thing a crash
// can leave: bad bytes from at or above the recovery point to the end of their
// segment, with no valid batch after them there (later segments are then deleted, as
// a crash can leave a rolled segment's tail unwritten and the next one written).
// Anything else is damage (damage.go): a bad batch or header with a valid batch after
// it (found by scanning forward for a header whose CRC-32C verifies), or anything
// from below the recovery point. Damage is never truncated: it is recorded
// (Log.Damaged, damaged-ranges-checkpoint), the segment is copied to quarantine, a
// WARN names file, position and offsets, the log end stays, and reads at or past it
// fail with a DamageError (ErrKafkaStorage) until TruncateDamaged (a replica fetches
// again) or DropDamaged (accept-loss). Segments below the recovery point are scanned
// when the checkpoint names them, when their indexes fail their checks, and by
// Verify (the scrubber). Index files, the epoch checkpoint, producer snapshots and
// the data-dir checkpoints are never trusted: one that fails its checks is rebuilt
// from the log (or, for the offset checkpoints, treated as missing) with a WARN naming
// the file.
//
// # Compaction
//
// Logs whose cleanup.policy has compact are cleaned by the Manager's log cleaner
// (Kafka LogCleaner; without delete, retention.ms and retention.bytes do not apply).
// A pass over a log: the dirty section runs from the first offset no pass reached to
// the first segment that may not be cleaned (the active one, or the first one
// reaching the high watermark or the recovery point, or younger than
// min.compaction.lag.ms); a log is picked when the dirty share of its bytes is at
// least min.cleanable.dirty.ratio or its oldest dirty record is older than
// max.compaction.lag.ms. The pass maps each key of the dirty section to its latest
// offset, in a map bounded by log.cleaner.dedupe.buffer.size (whole batches; when
// the map fills, the pass ends there and the next one goes on), then rewrites every
// segment below the map's end, in groups that fit segment.bytes, keeping a record
// unless a later one has its key or it is a tombstone that an earlier pass reached
// more than delete.retention.ms ago. Offsets never change: a rewritten batch keeps
// its base offset, last offset delta, producer fields, attributes and codec, and a
// batch left empty is dropped, so segments and logs have gaps that readers,
// followers and recovery accept. Control and transactional batches and records
// without a key are kept whole.
//
// A group is written as <base>.log.cleaned (+ indexes) and fsynced; the cleaner
// checkpoint is written; then .cleaned -> .swap (the commit point), the old
// segments -> .deleted (readers in flight keep them for file.delete.delay.ms, as
// with retention), .swap -> final names, and the new segment list is published.
// Open finishes a swap found in .swap state, removes *.cleaned, and accepts gaps
// between segments below the cleaner checkpoint; elsewhere a gap still means a lost
// tail.
//
// # Idempotent producers
//
// Batches with a producer id go through the producer state: a retry of one of the
// last five batches of that producer (same epoch, same first and last sequence) is
// answered with the original offsets and nothing is written (AppendInfo.Duplicate); a
// gap in the sequence is ErrOutOfOrderSequence; an older epoch ErrInvalidProducerEpoch;
// a new epoch must start at sequence 0; an unknown producer may start anywhere (Kafka
// >= 2.5).
//
// # Transactions
//
// The producer state also tracks each producer's open transaction (its first offset).
// Commit and abort markers are control batches appended with AppendControl. The last
// stable offset is the first offset of the oldest open transaction, capped by the high
// watermark; read_committed consumers read below it. Aborted transactions are kept in
// memory (no .txnindex file) and written into every producer snapshot; recovery loads
// the latest snapshot and replays the batches after it, markers included.
//
// # Concurrency
//
// Lock order: Log.cleanMu -> Log.flushMu -> Log.mu -> index locks. Log.mu is the
// append lock; Log.flushMu serialises fsyncs, truncation, retention, the cleaner's
// swaps and Close; Log.cleanMu serialises cleaning passes. Readers take
// neither: the segment list, the log end offset and each segment's size are published
// atomically after the bytes are written, and readers use ReadAt on those immutable
// ranges. Deleted segments stay readable for file.delete.delay.ms.
package log
