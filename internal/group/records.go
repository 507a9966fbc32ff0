package group

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Record formats of __consumer_offsets, as Kafka writes them (see doc.go). The key's
// leading int16 version tells the two kinds apart: 0 and 1 are offset commits, 2 is
// group metadata. A null value is a tombstone.
const (
	offsetCommitKeyVersion   = 1
	groupMetadataKeyVersion  = 2
	offsetCommitValueVersion = 3
	groupMetadataValVersion  = 3
)

// kv is one record to append: key and value (nil value: tombstone).
type kv struct {
	key, value []byte
}

func offsetCommitKey(group, topic string, partition int32) []byte {
	k := kmsg.OffsetCommitKey{Version: offsetCommitKeyVersion, Group: group, Topic: topic, Partition: partition}
	return k.AppendTo(nil)
}

func offsetCommitValue(o offsetAndMetadata) []byte {
	v := kmsg.NewOffsetCommitValue()
	v.Version = offsetCommitValueVersion
	v.Offset, v.LeaderEpoch, v.Metadata, v.CommitTimestamp = o.offset, o.leaderEpoch, o.metadata, o.commitTimestamp
	return v.AppendTo(nil)
}

func groupMetadataKey(group string) []byte {
	k := kmsg.GroupMetadataKey{Version: groupMetadataKeyVersion, Group: group}
	return k.AppendTo(nil)
}

// decodedRecord is one __consumer_offsets record after decoding its key.
type decodedRecord struct {
	group string
	// isOffset: an offset commit for tp; otherwise group metadata.
	isOffset bool
	tp       TopicPartition
	// offset is set for a live offset commit, meta for live group metadata; both nil
	// for a tombstone.
	offset *offsetAndMetadata
	meta   *kmsg.GroupMetadataValue
}

var errUnknownRecord = errors.New("unknown __consumer_offsets record key version")

// decodeRecord decodes one record's key and value.
func decodeRecord(key, value []byte) (decodedRecord, error) {
	if len(key) < 2 {
		return decodedRecord{}, fmt.Errorf("%w: %d-byte key", errUnknownRecord, len(key))
	}
	switch v := int16(binary.BigEndian.Uint16(key)); v {
	case 0, 1:
		var k kmsg.OffsetCommitKey
		if err := k.ReadFrom(key); err != nil {
			return decodedRecord{}, err
		}
		r := decodedRecord{group: k.Group, isOffset: true, tp: TopicPartition{k.Topic, k.Partition}}
		if value == nil {
			return r, nil
		}
		var val kmsg.OffsetCommitValue
		if err := val.ReadFrom(value); err != nil {
			return decodedRecord{}, fmt.Errorf("offset commit value of %s: %w", k.Group, err)
		}
		le := val.LeaderEpoch
		if val.Version < 3 {
			le = -1
		}
		r.offset = &offsetAndMetadata{offset: val.Offset, leaderEpoch: le, metadata: val.Metadata, commitTimestamp: val.CommitTimestamp}
		return r, nil
	case 2:
		var k kmsg.GroupMetadataKey
		if err := k.ReadFrom(key); err != nil {
			return decodedRecord{}, err
		}
		r := decodedRecord{group: k.Group}
		if value == nil {
			return r, nil
		}
		var val kmsg.GroupMetadataValue
		if err := val.ReadFrom(value); err != nil {
			return decodedRecord{}, fmt.Errorf("group metadata value of %s: %w", k.Group, err)
		}
		r.meta = &val
		return r, nil
	default:
		return decodedRecord{}, fmt.Errorf("%w %d", errUnknownRecord, v)
	}
}

// forEachRecord calls fn with the key and value of every record in one uncompressed
// v2 batch body (the bytes after the 61-byte header), count records long.
func forEachRecord(body []byte, count int32, fn func(key, value []byte) error) error {
	for i := int32(0); i < count; i++ {
		length, n := binary.Varint(body)
		if n <= 0 || length < 0 || int64(len(body)-n) < length {
			return fmt.Errorf("record %d: bad length", i)
		}
		rec := body[n : n+int(length)]
		body = body[n+int(length):]
		if len(rec) < 1 {
			return fmt.Errorf("record %d: empty", i)
		}
		rec = rec[1:] // attributes
		var err error
		for j := 0; j < 2 && err == nil; j++ { // timestamp delta, offset delta
			rec, err = skipVarint(rec)
		}
		var key, value []byte
		if err == nil {
			key, rec, err = readNullableBytes(rec)
		}
		if err == nil {
			value, _, err = readNullableBytes(rec)
		}
		if err != nil {
			return fmt.Errorf("record %d: %w", i, err)
		}
		if err := fn(key, value); err != nil {
			return err
		}
	}
	return nil
}

var errShortRecord = errors.New("truncated record")

func skipVarint(b []byte) ([]byte, error) {
	_, n := binary.Varint(b)
	if n <= 0 {
		return nil, errShortRecord
	}
	return b[n:], nil
}

func readNullableBytes(b []byte) (p, rest []byte, err error) {
	l, n := binary.Varint(b)
	if n <= 0 || int64(len(b)-n) < l {
		return nil, nil, errShortRecord
	}
	if l < 0 {
		return nil, b[n:], nil
	}
	return b[n : n+int(l) : n+int(l)], b[n+int(l):], nil
}
