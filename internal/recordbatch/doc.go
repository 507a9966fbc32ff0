// Package recordbatch is a zero-copy view over one Kafka v2 record batch (magic 2).
//
// Layout of the batch header (61 bytes, big endian), as on the wire and on disk:
//
//	offset  size  field
//	     0     8  baseOffset            assigned by the leader, outside the CRC
//	     8     4  batchLength           bytes after this field
//	    12     4  partitionLeaderEpoch  stamped by the leader, outside the CRC
//	    16     1  magic                 must be 2
//	    17     4  crc                   CRC-32C (Castagnoli) of bytes [21, end)
//	    21     2  attributes            compression (bits 0-2), timestamp type (3), transactional (4), control (5)
//	    23     4  lastOffsetDelta
//	    27     8  baseTimestamp
//	    35     8  maxTimestamp
//	    43     8  producerId
//	    51     2  producerEpoch
//	    53     4  baseSequence
//	    57     4  recordCount
//	    61     …  records (possibly compressed)
//
// Because baseOffset and partitionLeaderEpoch lie outside the CRC, the leader stamps
// them in place and the batch stays valid: nothing is decoded or re-encoded.
//
// This package is a leaf: it does no I/O and must not allocate on the produce path.
package recordbatch
