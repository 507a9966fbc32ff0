package log

import "errors"

// Sentinel errors. Test with errors.Is; returned errors wrap them with detail.
var (
	// ErrOffsetOutOfRange is returned by Read when the offset is below LogStartOffset or
	// above LogEndOffset, by DeleteRecordsBefore past the log end, and by
	// AppendAsFollower when the first batch does not start at the log end offset.
	ErrOffsetOutOfRange = errors.New("offset out of range")
	// ErrCorruption is the class of every error caused by bytes that cannot be trusted:
	// a stored batch that fails its CRC or framing where recovery must not truncate
	// (below the recovery point), and an appended batch whose CRC or length is wrong
	// (Kafka CORRUPT_MESSAGE).
	ErrCorruption = errors.New("corrupt log data")
	// ErrRecordTooLarge is returned by AppendAsLeader for a batch larger than
	// max.message.bytes. Nothing is written.
	ErrRecordTooLarge = errors.New("record batch larger than max.message.bytes")
	// ErrInvalidRecord is returned by AppendAsLeader for a batch that is well framed but
	// not acceptable: magic other than 2, no records, or a record count that does not
	// match lastOffsetDelta. Nothing is written.
	ErrInvalidRecord = errors.New("invalid record batch")
	// ErrOutOfOrderSequence is returned by AppendAsLeader when an idempotent producer's
	// batch does not continue its sequence (a gap, or a new epoch not starting at 0).
	ErrOutOfOrderSequence = errors.New("out of order sequence number")
	// ErrInvalidProducerEpoch is returned by AppendAsLeader when an idempotent
	// producer's epoch is older than the one the log has seen.
	ErrInvalidProducerEpoch = errors.New("invalid (fenced) producer epoch")
	// ErrClosed is returned by every method of a closed or deleted Log or Manager.
	ErrClosed = errors.New("log closed")
	// ErrKafkaStorage wraps disk errors (ENOSPC, EIO...). After a failed write,
	// truncate or fsync the log goes offline for writes: appends, flushes and
	// truncations return ErrKafkaStorage until the log is reopened. Reads keep serving
	// what was stored before the failure. The exception is ErrDiskFull.
	ErrKafkaStorage = errors.New("kafka storage error")
	// ErrDiskFull (with ErrKafkaStorage) is an append whose data write found the disk
	// full (ENOSPC, or EDQUOT for a quota) and was cut back off the segment: the log
	// stays writable, and appends succeed again once there is room. So is a
	// leader-epoch checkpoint that finds the disk full (written again by the next
	// flush). A full disk met anywhere else (rolling a segment, an fsync, another
	// checkpoint) takes the log offline like any disk error.
	ErrDiskFull = errors.New("disk full")
)
