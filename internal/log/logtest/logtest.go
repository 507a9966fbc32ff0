// Package logtest builds valid Kafka v2 record batches for tests and benchmarks
// (uncompressed, CRC-32C computed here), and decodes them back.
package logtest

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// BatchOptions describe a batch. The zero value of a field gives its default.
type BatchOptions struct {
	Records   int // default 1
	ValueSize int // bytes per value; the value starts with the record index (default 8)
	KeySize   int // 0 = null key
	// Timestamp is the first record's timestamp in ms (default: now); record i has
	// Timestamp + i*TimestampStep.
	Timestamp     int64
	TimestampStep int64
	// ProducerID, ProducerEpoch and BaseSequence are used when Idempotent; otherwise
	// the batch has no producer id (-1).
	ProducerID    int64
	ProducerEpoch int16
	BaseSequence  int32
	Idempotent    bool // use ProducerID/ProducerEpoch/BaseSequence
	BaseOffset    int64
	LeaderEpoch   int32
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Batch returns one uncompressed batch of n records with values of valueSize bytes,
// timestamps now, no producer id.
func Batch(records int, valueSize int) []byte {
	return BatchWith(BatchOptions{Records: records, ValueSize: valueSize})
}

// Batches returns n batches from Batch, concatenated.
func Batches(n, records, valueSize int) []byte {
	var out []byte
	for i := 0; i < n; i++ {
		out = append(out, Batch(records, valueSize)...)
	}
	return out
}

// BatchWith builds a batch from o.
func BatchWith(o BatchOptions) []byte {
	if o.Records <= 0 {
		o.Records = 1
	}
	if o.ValueSize <= 0 {
		o.ValueSize = 8
	}
	if o.Timestamp == 0 {
		o.Timestamp = time.Now().UnixMilli()
	}
	var recs []byte
	for i := 0; i < o.Records; i++ {
		recs = appendRecord(recs, i, o)
	}
	b := kmsg.RecordBatch{
		FirstOffset:          o.BaseOffset,
		Length:               int32(49 + len(recs)),
		PartitionLeaderEpoch: o.LeaderEpoch,
		Magic:                2,
		LastOffsetDelta:      int32(o.Records - 1),
		FirstTimestamp:       o.Timestamp,
		MaxTimestamp:         o.Timestamp + int64(o.Records-1)*max(o.TimestampStep, 0),
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           int32(o.Records),
		Records:              recs,
	}
	if o.TimestampStep < 0 {
		b.MaxTimestamp = o.Timestamp
	}
	if o.Idempotent {
		b.ProducerID, b.ProducerEpoch, b.FirstSequence = o.ProducerID, o.ProducerEpoch, o.BaseSequence
	}
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], castagnoli))
	return out
}

func appendRecord(dst []byte, i int, o BatchOptions) []byte {
	r := kmsg.Record{
		TimestampDelta64: int64(i) * o.TimestampStep,
		OffsetDelta:      int32(i),
		Value:            make([]byte, o.ValueSize),
	}
	if o.ValueSize >= 8 {
		binary.BigEndian.PutUint64(r.Value, uint64(i))
	} else {
		for j := range r.Value {
			r.Value[j] = byte(i)
		}
	}
	if o.KeySize > 0 {
		r.Key = make([]byte, o.KeySize)
	}
	body := r.AppendTo(nil)
	r.Length = int32(len(body) - 1) // the zero Length took one varint byte
	return r.AppendTo(dst)
}

// Record is a decoded record.
type Record struct {
	Offset    int64
	Timestamp int64
	Key       []byte
	Value     []byte
}

// Decode parses concatenated uncompressed batches into records.
func Decode(data []byte) ([]Record, error) {
	var out []Record
	for len(data) > 0 {
		var b kmsg.RecordBatch
		if len(data) < 12 {
			return nil, errors.New("logtest: truncated batch")
		}
		size := 12 + int(int32(binary.BigEndian.Uint32(data[8:])))
		if size > len(data) || size < 61 {
			return nil, errors.New("logtest: truncated batch")
		}
		if err := b.ReadFrom(data[:size]); err != nil {
			return nil, err
		}
		data = data[size:]
		recs := b.Records
		for i := int32(0); i < b.NumRecords; i++ {
			var r kmsg.Record
			length, n := binary.Varint(recs)
			if n <= 0 || int(length)+n > len(recs) {
				return nil, errors.New("logtest: bad record length")
			}
			if err := r.ReadFrom(recs[:n+int(length)]); err != nil {
				return nil, err
			}
			recs = recs[n+int(length):]
			ts := b.FirstTimestamp + r.TimestampDelta64
			if b.Attributes&0x08 != 0 {
				ts = b.MaxTimestamp
			}
			out = append(out, Record{Offset: b.FirstOffset + int64(r.OffsetDelta), Timestamp: ts, Key: r.Key, Value: r.Value})
		}
	}
	return out, nil
}
