package log

import (
	"math"
	"strings"
	"time"
)

// Config is the per-log configuration, with Kafka's topic-level names and defaults.
type Config struct {
	SegmentBytes int64 // segment.bytes (default 1 GiB): roll when the active segment would exceed it
	SegmentMs    int64 // segment.ms (default 7 days): roll when the first batch of the active segment is older
	// SegmentIndexBytes is segment.index.bytes (default 10 MiB): the maximum size of an
	// offset index; the segment rolls when its index is full. Runnel keeps indexes in
	// memory and writes them at roll and close, so files are never preallocated and need
	// no trimming.
	SegmentIndexBytes    int32
	IndexIntervalBytes   int32  // index.interval.bytes (default 4096): bytes between index entries
	RetentionMs          int64  // retention.ms, -1 = infinite (default 7 days)
	RetentionBytes       int64  // retention.bytes, -1 = infinite (default)
	FlushMessages        int64  // flush.messages (default 1: every acknowledged batch is fsynced)
	FlushMs              int64  // flush.ms (default math.MaxInt64: no timed flush needed)
	MaxMessageBytes      int32  // max.message.bytes (default 1048588): the largest batch accepted
	MessageTimestampType string // "CreateTime" (default) or "LogAppendTime"
	// FileDeleteDelayMs is file.delete.delay.ms (default 60000): how long the files of a
	// deleted segment stay (renamed *.deleted) so that reads in flight can finish.
	FileDeleteDelayMs int64

	// CleanupPolicy is cleanup.policy: "delete" (default), "compact" or
	// "compact,delete". With compact the log cleaner keeps the last record of every
	// key; without delete, retention.ms and retention.bytes do not apply.
	CleanupPolicy string
	// DeleteRetentionMs is delete.retention.ms (default 1 day): how long a tombstone
	// stays readable after the cleaner first reached it.
	DeleteRetentionMs int64
	// MinCompactionLagMs is min.compaction.lag.ms (default 0): a segment whose newest
	// record is younger than this is not cleaned.
	MinCompactionLagMs int64
	// MaxCompactionLagMs is max.compaction.lag.ms (default math.MaxInt64): a log whose
	// oldest uncleaned record is older than this is cleaned whatever its dirty ratio,
	// and the active segment of a compacted log rolls after this long.
	MaxCompactionLagMs int64
	// MinCleanableDirtyRatio is min.cleanable.dirty.ratio (default 0.5): the share of
	// the log not yet cleaned at which it becomes worth cleaning. 0 is a valid value.
	MinCleanableDirtyRatio float64
}

// DefaultConfig returns Kafka's defaults.
func DefaultConfig() Config {
	return Config{
		SegmentBytes:         1 << 30,
		SegmentMs:            int64(7 * 24 * time.Hour / time.Millisecond),
		SegmentIndexBytes:    10 << 20,
		IndexIntervalBytes:   4096,
		RetentionMs:          int64(7 * 24 * time.Hour / time.Millisecond),
		RetentionBytes:       -1,
		FlushMessages:        1,
		FlushMs:              math.MaxInt64,
		MaxMessageBytes:      1048588,
		MessageTimestampType: "CreateTime",
		FileDeleteDelayMs:    60000,

		CleanupPolicy:          CleanupPolicyDelete,
		DeleteRetentionMs:      int64(24 * time.Hour / time.Millisecond),
		MaxCompactionLagMs:     math.MaxInt64,
		MinCleanableDirtyRatio: 0.5,
	}
}

// Values of CleanupPolicy (Kafka's names; the two combine as "compact,delete").
const (
	CleanupPolicyDelete  = "delete"
	CleanupPolicyCompact = "compact"
)

// Compact reports whether the cleanup policy includes compaction.
func (c *Config) Compact() bool { return strings.Contains(c.CleanupPolicy, CleanupPolicyCompact) }

// Delete reports whether the cleanup policy includes deletion by retention.ms and
// retention.bytes.
func (c *Config) Delete() bool { return strings.Contains(c.CleanupPolicy, CleanupPolicyDelete) }

// maxSegmentMs is how old the active segment may grow: segment.ms, capped for a
// compacted log by max.compaction.lag.ms since the cleaner never touches the active
// segment (Kafka LogConfig.maxSegmentMs).
func (c *Config) maxSegmentMs() int64 {
	if c.Compact() {
		return min(c.SegmentMs, c.MaxCompactionLagMs)
	}
	return c.SegmentMs
}

// LogAppendTime is the MessageTimestampType value that makes the leader stamp batches.
const LogAppendTime = "LogAppendTime"

// sanitized returns c with unusable values replaced by defaults, so that a zero field
// (a Config built by hand) does not make every append roll or flush.
func (c Config) sanitized() Config {
	d := DefaultConfig()
	if c.SegmentBytes <= 0 {
		c.SegmentBytes = d.SegmentBytes
	}
	// Index positions are 4 bytes, as in Kafka (segment.bytes is an int there).
	c.SegmentBytes = min(c.SegmentBytes, math.MaxInt32)
	if c.SegmentMs <= 0 {
		c.SegmentMs = d.SegmentMs
	}
	if c.SegmentIndexBytes < offsetEntrySize*2 {
		c.SegmentIndexBytes = d.SegmentIndexBytes
	}
	if c.IndexIntervalBytes < 0 {
		c.IndexIntervalBytes = d.IndexIntervalBytes
	}
	if c.FlushMessages <= 0 {
		c.FlushMessages = d.FlushMessages
	}
	if c.FlushMs <= 0 {
		c.FlushMs = d.FlushMs
	}
	if c.MaxMessageBytes <= 0 {
		c.MaxMessageBytes = d.MaxMessageBytes
	}
	if c.MessageTimestampType == "" {
		c.MessageTimestampType = d.MessageTimestampType
	}
	if c.FileDeleteDelayMs < 0 {
		c.FileDeleteDelayMs = 0
	}
	return c.sanitizedCleaner(d)
}

// sanitizedCleaner is sanitized for the compaction settings.
func (c Config) sanitizedCleaner(d Config) Config {
	if c.CleanupPolicy == "" {
		c.CleanupPolicy = d.CleanupPolicy
	}
	if c.DeleteRetentionMs < 0 {
		c.DeleteRetentionMs = 0
	}
	if c.MinCompactionLagMs < 0 {
		c.MinCompactionLagMs = 0
	}
	if c.MaxCompactionLagMs <= 0 {
		c.MaxCompactionLagMs = d.MaxCompactionLagMs
	}
	if !(c.MinCleanableDirtyRatio >= 0) || c.MinCleanableDirtyRatio > 1 { // catches NaN
		c.MinCleanableDirtyRatio = d.MinCleanableDirtyRatio
	}
	return c
}
