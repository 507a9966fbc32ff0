package log

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/runnel-io/runnel/internal/recordbatch"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Keys on compacted topics.
//
// A compacted log keeps the last record of every key, so a record without a key has
// no place in it: Kafka's leader refuses such a record at produce (LogValidator
// validateKey) with INVALID_RECORD, naming the record by its index in its batch
// (ProduceResponse v8+ RecordErrors), and so does Runnel's. Only what a producer
// sends through AppendAsLeader is checked: a follower copies the leader's batches as
// they are (AppendAsFollower) and transaction markers (AppendControl) carry a key.
// Records stored before this check existed stay; the cleaner keeps them.

// RecordError is one record of a produced batch that the leader refused, as Kafka's
// ProduceResponse RecordErrors carry it.
type RecordError struct {
	// BatchIndex is the record's index within its batch (0 for the first record).
	BatchIndex int32
	Message    string
}

// String is Kafka's ProduceResponse.RecordError.toString, which Kafka's error message
// embeds.
func (e RecordError) String() string {
	return fmt.Sprintf("RecordError(batchIndex=%d, message='%s')", e.BatchIndex, e.Message)
}

// RecordErrors is an append refused because of some of the records of one batch
// (Kafka's RecordValidationException): nothing was written. It wraps
// ErrInvalidRecord.
type RecordErrors struct {
	Errors []RecordError // in record order; never empty
}

// Error is Kafka's message for the refusal (LogValidator processRecordErrors).
func (e *RecordErrors) Error() string {
	shown := e.Errors[:min(len(e.Errors), 3)]
	parts := make([]string, len(shown))
	for i, r := range shown {
		parts[i] = r.String()
	}
	return fmt.Sprintf("One or more records have been rejected due to %d record errors in total, "+
		"and only showing the first three errors at most: [%s]", len(e.Errors), strings.Join(parts, ", "))
}

func (e *RecordErrors) Unwrap() error { return ErrInvalidRecord }

// batchDecompressor decompresses a batch whose records must be looked into (keys to
// check, a timestamp to find). It is franz-go's, safe for concurrent use (it pools
// its readers).
var batchDecompressor = kgo.DefaultDecompressor()

// checkKeys refuses the first batch of records (validated framing) that holds a
// record without a key: the records of a compacted topic's produce. A compressed
// batch is decompressed to look (as Kafka does); an uncompressed one is read in place
// without allocating.
func checkKeys(records []byte, tp TopicPartition) error {
	for rest := records; len(rest) > 0; {
		b, next, _ := recordbatch.Next(rest, 0)
		rest = next
		body := []byte(b[recordbatch.HeaderSize:])
		if b.Compression() != 0 {
			var err error
			body, err = batchDecompressor.Decompress(body, kgo.CompressionCodecType(b.Compression()))
			if err != nil {
				return fmt.Errorf("%w: decompressing the batch (codec %d) in topic partition %s-%d: %v",
					ErrCorruption, b.Compression(), tp.Topic, tp.Partition, err)
			}
		}
		keyless, err := keylessRecords(body, b.RecordCount())
		if err != nil {
			return fmt.Errorf("%w: in topic partition %s-%d", err, tp.Topic, tp.Partition)
		}
		if len(keyless) > 0 {
			msg := fmt.Sprintf("Compacted topic cannot accept message without key in topic partition %s-%d.", tp.Topic, tp.Partition)
			errs := make([]RecordError, len(keyless))
			for i, idx := range keyless {
				errs[i] = RecordError{BatchIndex: idx, Message: msg}
			}
			return &RecordErrors{Errors: errs}
		}
	}
	return nil
}

// keylessRecords returns the indexes of the records of data (the n records of one
// batch, uncompressed) whose key is null; nil, without allocating, when every record
// has one. A record that does not parse is ErrCorruption.
func keylessRecords(data []byte, n int32) ([]int32, error) {
	var keyless []int32
	for i := int32(0); i < n; i++ {
		length, w := binary.Varint(data)
		if w <= 0 || length < 1 || length > int64(len(data)-w) {
			return nil, fmt.Errorf("%w: record %d of %d: bad record length", ErrCorruption, i, n)
		}
		rec := data[w+1 : w+int(length)] // after the attributes byte
		data = data[w+int(length):]
		// timestampDelta, offsetDelta, then the key length (-1: null).
		keyLen, ok := thirdVarint(rec)
		if !ok {
			return nil, fmt.Errorf("%w: record %d of %d: bad varint", ErrCorruption, i, n)
		}
		if keyLen < 0 {
			keyless = append(keyless, i)
		}
	}
	return keyless, nil
}

// thirdVarint skips two varints of p and returns the third.
func thirdVarint(p []byte) (int64, bool) {
	for range 2 {
		_, w := binary.Varint(p)
		if w <= 0 {
			return 0, false
		}
		p = p[w:]
	}
	v, w := binary.Varint(p)
	return v, w > 0
}
