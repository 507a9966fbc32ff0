package txn

import (
	"time"

	"github.com/runnel-io/runnel/internal/metadata"
)

// Description is what DescribeTransactions and ListTransactions report of an id.
type Description struct {
	TransactionalID string
	State           State
	ProducerID      int64
	ProducerEpoch   int16
	Timeout         time.Duration
	Start           time.Time // zero when no transaction is ongoing
	Partitions      []metadata.TopicPartition
}

func describe(m *txnMetadata) Description {
	return Description{TransactionalID: m.id, State: m.state, ProducerID: m.pid, ProducerEpoch: m.epoch,
		Timeout: m.timeout, Start: m.start, Partitions: m.sortedPartitions()}
}

// Describe returns txnID's state.
func (c *Coordinator) Describe(txnID string) (Description, error) {
	sh, err := c.shardFor(txnID)
	if err != nil {
		return Description{}, err
	}
	e := sh.entry(txnID, false)
	if e == nil {
		return Description{}, ErrTransactionalIDNotFound
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.meta.pid < 0 {
		return Description{}, ErrTransactionalIDNotFound
	}
	return describe(&e.meta), nil
}

// List returns the ids this node coordinates, filtered by state and producer id when
// the filters are not empty.
func (c *Coordinator) List(states []State, pids []int64) []Description {
	var out []Description
	for _, sh := range c.loadedShards() {
		for _, e := range sh.entries() {
			e.mu.Lock()
			if e.meta.pid >= 0 && matches(e.meta.state, states) && matches(e.meta.pid, pids) {
				out = append(out, describe(&e.meta))
			}
			e.mu.Unlock()
		}
	}
	return out
}

func matches[T comparable](v T, filter []T) bool {
	if len(filter) == 0 {
		return true
	}
	for _, f := range filter {
		if f == v {
			return true
		}
	}
	return false
}
