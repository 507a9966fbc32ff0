package clustertest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Ack is one write the cluster acknowledged.
type Ack struct {
	Partition int32
	Offset    int64
	Value     string
	At        time.Time // when the acknowledgement reached the producer
}

// History records the writes a producer had acknowledged. Record is its promise:
// pass it to kgo.Client.Produce, or call it from your own. Values should be unique
// (NextValue makes them so), since Check reports any value stored twice.
type History struct {
	run string // immutable: random, starts every value of this history

	mu sync.Mutex // guards the fields below
	// acks in the order they arrived.
	acks []Ack
	// failures counts the produce errors by text.
	failures map[string]int
	seq      int64
}

// NewHistory returns an empty history.
func NewHistory() *History {
	var b [4]byte
	rand.Read(b[:])
	return &History{run: hex.EncodeToString(b[:]), failures: map[string]int{}}
}

// NextValue returns a value never returned before by this history (or any other).
func (h *History) NextValue(partition int32) []byte {
	h.mu.Lock()
	h.seq++
	seq := h.seq
	h.mu.Unlock()
	return []byte(fmt.Sprintf("%s-p%d-%09d", h.run, partition, seq))
}

// Record is a kgo promise: it keeps r as acknowledged when err is nil, and counts the
// failure otherwise.
func (h *History) Record(r *kgo.Record, err error) {
	now := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil {
		h.failures[err.Error()]++
		return
	}
	h.acks = append(h.acks, Ack{Partition: r.Partition, Offset: r.Offset, Value: string(r.Value), At: now})
}

// Acks returns a copy of the acknowledged writes, in arrival order.
func (h *History) Acks() []Ack {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Ack(nil), h.acks...)
}

// Len is the number of acknowledged writes.
func (h *History) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.acks)
}

// Failures describes the produce errors seen, most frequent first.
func (h *History) Failures() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	type kv struct {
		err string
		n   int
	}
	var all []kv
	for e, n := range h.failures {
		all = append(all, kv{e, n})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].n > all[j].n })
	if len(all) == 0 {
		return "none"
	}
	out := ""
	for _, f := range all {
		out += fmt.Sprintf("%d× %s; ", f.n, f.err)
	}
	return out
}

// byPartition groups acknowledged writes by partition.
func byPartition(acks []Ack) map[int32][]Ack {
	out := map[int32][]Ack{}
	for _, a := range acks {
		out[a.Partition] = append(out[a.Partition], a)
	}
	return out
}
