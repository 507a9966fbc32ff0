package group

import "unicode/utf8"

// OffsetsTopic is the compacted topic holding committed offsets and group metadata.
const OffsetsTopic = "__consumer_offsets"

// PartitionFor is the __consumer_offsets partition of a group, as Kafka computes it
// (Utils.abs(groupId.hashCode()) % numPartitions), so that a group keeps its partition
// when a cluster's data moves between Kafka and Runnel.
func PartitionFor(groupID string, numPartitions int32) int32 {
	if numPartitions <= 0 {
		return 0
	}
	h := javaStringHashCode(groupID)
	if h == -1<<31 { // Kafka's Utils.abs maps Integer.MIN_VALUE to 0
		h = 0
	} else if h < 0 {
		h = -h
	}
	return h % numPartitions
}

// javaStringHashCode is java.lang.String.hashCode: s[0]*31^(n-1) + ... + s[n-1] over the
// UTF-16 code units of s, in wrapping 32-bit arithmetic. Invalid UTF-8 counts as U+FFFD,
// as a Java client decoding the same bytes would see it.
func javaStringHashCode(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 && r <= utf8.MaxRune {
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}
