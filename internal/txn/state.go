package txn

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/recordbatch"
)

// StateTopic is the internal topic holding the coordinators' state.
const StateTopic = "__transaction_state"

// State is a transaction's state, Kafka's numbering.
type State = kmsg.TransactionState

const (
	Empty          = kmsg.TransactionStateEmpty
	Ongoing        = kmsg.TransactionStateOngoing
	PrepareCommit  = kmsg.TransactionStatePrepareCommit
	PrepareAbort   = kmsg.TransactionStatePrepareAbort
	CompleteCommit = kmsg.TransactionStateCompleteCommit
	CompleteAbort  = kmsg.TransactionStateCompleteAbort
	Dead           = kmsg.TransactionStateDead
)

// txnMetadata is one transactional id's state (Kafka TransactionMetadata).
type txnMetadata struct {
	id      string
	pid     int64 // -1 before the first InitProducerId
	epoch   int16
	timeout time.Duration
	state   State
	// partitions are the partitions of the current transaction (Ongoing, Prepare*);
	// empty otherwise.
	partitions map[metadata.TopicPartition]struct{}
	lastUpdate time.Time
	start      time.Time // when the current transaction became Ongoing

	// Transaction version 2 (KIP-890 part 2), where EndTxn bumps the epoch.
	// prevPid is the producer id before an epoch overflow moved the id to a new
	// one (-1 when none): a retried EndTxn of the old id is then recognised.
	prevPid int64
	// nextPid is the producer id allocated for an epoch overflow while the
	// transaction completes (Prepare* only; -1 otherwise).
	nextPid int64
	// lastEpoch is the epoch before the last bump a producer caused itself (an
	// EndTxn of version 2 or a KIP-360 InitProducerId), -1 when the last bump
	// fenced another producer: a retry from the same producer at that epoch is
	// recognised. Not persisted (Kafka's lastProducerEpoch is not either), but
	// rebuilt at load for a transaction ended by a version-2 EndTxn, so that a
	// producer that lost the answer when the coordinator died can still retry.
	lastEpoch int16
	// tv2 is whether the transaction was prepared by an EndTxn of transaction
	// version 2, which bumped the epoch (persisted as ClientTransactionVersion 2);
	// false when a timeout or a new producer aborted it with a fencing bump.
	tv2 bool
}

func (m *txnMetadata) clone() txnMetadata {
	c := *m
	c.partitions = make(map[metadata.TopicPartition]struct{}, len(m.partitions))
	for tp := range m.partitions {
		c.partitions[tp] = struct{}{}
	}
	return c
}

// sortedPartitions lists the partitions by topic then partition.
func (m *txnMetadata) sortedPartitions() []metadata.TopicPartition {
	out := make([]metadata.TopicPartition, 0, len(m.partitions))
	for tp := range m.partitions {
		out = append(out, tp)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

// record encodes m as a __transaction_state batch.
func (m *txnMetadata) record() []byte {
	key := kmsg.NewTxnMetadataKey()
	key.TransactionalID = m.id
	v := kmsg.NewTxnMetadataValue()
	v.Version = 1 // flexible: the KIP-890 tagged fields
	v.ProducerID, v.ProducerEpoch = m.pid, m.epoch
	v.PreviousProducerID, v.NextProducerID = m.prevPid, m.nextPid
	if m.tv2 {
		v.ClientTransactionVersion = 2
	}
	v.TimeoutMillis = int32(m.timeout / time.Millisecond)
	v.State = m.state
	v.LastUpdateTimestamp = m.lastUpdate.UnixMilli()
	v.StartTimestamp = -1
	if !m.start.IsZero() {
		v.StartTimestamp = m.start.UnixMilli()
	}
	for _, tp := range m.sortedPartitions() {
		if n := len(v.Topics); n == 0 || v.Topics[n-1].Topic != tp.Topic {
			t := kmsg.NewTxnMetadataValueTopic()
			t.Topic = tp.Topic
			v.Topics = append(v.Topics, t)
		}
		v.Topics[len(v.Topics)-1].Partitions = append(v.Topics[len(v.Topics)-1].Partitions, tp.Partition)
	}
	b := recordbatch.NewBuilder(256)
	b.Add(key.AppendTo(nil), v.AppendTo(nil), nil, m.lastUpdate.UnixMilli())
	return append([]byte(nil), b.Build()...)
}

// decodeRecord parses one record; meta is nil for a tombstone (an expired id).
func decodeRecord(key, value []byte) (id string, meta *txnMetadata, err error) {
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(key); err != nil {
		return "", nil, fmt.Errorf("transaction key: %w", err)
	}
	if value == nil {
		return k.TransactionalID, nil, nil
	}
	v := kmsg.NewTxnMetadataValue() // the tagged fields' defaults, for version 0
	if err := v.ReadFrom(value); err != nil {
		return "", nil, fmt.Errorf("transaction value of %q: %w", k.TransactionalID, err)
	}
	m := &txnMetadata{id: k.TransactionalID, pid: v.ProducerID, epoch: v.ProducerEpoch,
		timeout: time.Duration(v.TimeoutMillis) * time.Millisecond, state: v.State,
		partitions: map[metadata.TopicPartition]struct{}{}, lastUpdate: time.UnixMilli(v.LastUpdateTimestamp),
		prevPid: v.PreviousProducerID, nextPid: v.NextProducerID, lastEpoch: -1, tv2: v.ClientTransactionVersion >= 2}
	switch m.state {
	case PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort:
		// Complete* records never hold a next producer id; a Prepare* one does at an
		// epoch overflow, where the bump was still to MaxInt16 under the old id.
		if m.tv2 && m.epoch > 0 {
			m.lastEpoch = m.epoch - 1
		}
	}
	if v.StartTimestamp >= 0 {
		m.start = time.UnixMilli(v.StartTimestamp)
	}
	for _, t := range v.Topics {
		for _, p := range t.Partitions {
			m.partitions[metadata.TopicPartition{Topic: t.Topic, Partition: p}] = struct{}{}
		}
	}
	return k.TransactionalID, m, nil
}

var errBadRecord = errors.New("malformed record")

// forEachRecord calls fn with the key and value of each record of an uncompressed
// batch (nil for a null key or value).
func forEachRecord(b recordbatch.Batch, fn func(key, value []byte) error) error {
	body := []byte(b[recordbatch.HeaderSize:])
	for i := int32(0); i < b.RecordCount(); i++ {
		length, n := binary.Varint(body)
		if n <= 0 || length < 0 || int64(len(body)-n) < length {
			return errBadRecord
		}
		rec := body[n : n+int(length)]
		body = body[n+int(length):]
		if len(rec) < 1 {
			return errBadRecord
		}
		rec = rec[1:]            // attributes
		for j := 0; j < 2; j++ { // timestamp and offset deltas
			_, k := binary.Varint(rec)
			if k <= 0 {
				return errBadRecord
			}
			rec = rec[k:]
		}
		key, rest, ok := varBytes(rec)
		value, _, ok2 := varBytes(rest)
		if !ok || !ok2 {
			return errBadRecord
		}
		if err := fn(key, value); err != nil {
			return err
		}
	}
	return nil
}

func varBytes(p []byte) (v, rest []byte, ok bool) {
	n, k := binary.Varint(p)
	switch {
	case k <= 0 || int64(len(p)-k) < n:
		return nil, nil, false
	case n < 0:
		return nil, p[k:], true
	}
	return p[k : k+int(n)], p[k+int(n):], true
}
