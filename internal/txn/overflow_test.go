package txn

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/recordbatch"
)

// memLog is a __transaction_state partition in memory (every append is replicated).
type memLog struct {
	mu      sync.Mutex
	batches []byte
	next    int64
}

func (l *memLog) Append(_ context.Context, b []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := append(recordbatch.Batch(nil), b...)
	c.SetBaseOffset(l.next)
	l.next = c.NextOffset()
	l.batches = append(l.batches, c...)
	return nil
}

func (l *memLog) Offsets() (int64, int64, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return 0, l.next, l.next
}

func (l *memLog) Read(dst []byte, offset int64, _ int32) ([]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for buf := l.batches; len(buf) > 0; {
		b, rest, err := recordbatch.Next(buf, 0)
		if err != nil {
			return dst, err
		}
		if b.BaseOffset() >= offset {
			dst = append(dst, b...)
		}
		buf = rest
	}
	return dst, nil
}

// markerLog records the markers written.
type markerLog struct {
	mu      sync.Mutex
	written []ProducerIDAndEpoch
}

func (m *markerLog) WriteMarker(_ context.Context, _ metadata.TopicPartition, pid int64, epoch int16, _ int32, _ bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.written = append(m.written, ProducerIDAndEpoch{ID: pid, Epoch: epoch})
	return nil
}

func loadedCoordinator(t *testing.T, log *memLog, markers *markerLog, id string) *Coordinator {
	t.Helper()
	next := int64(100)
	return startCoordinator(t, Config{Markers: markers, AllocateProducerID: func(context.Context) (int64, error) {
		next++
		return next, nil
	}}, log, id)
}

// At epoch exhaustion a version-2 EndTxn writes its markers at MaxInt16 (fencing the
// old id for good) and hands the producer a new id at epoch 0; a retry under the old
// id is recognised, also after the state is reloaded on another coordinator.
func TestTV2EpochOverflowMovesToANewProducerID(t *testing.T) {
	const id = "overflow"
	log, markers := &memLog{}, &markerLog{}
	c := loadedCoordinator(t, log, markers, id)
	ctx := context.Background()
	first := newProducer(t, c, id, time.Minute)
	withMeta(c, id, func(m *txnMetadata) { m.epoch = math.MaxInt16 - 1 }) // as after 32766 transactions
	addTestPartition(t, c, id, first.ID, math.MaxInt16-1)
	next, err := c.EndTxn(ctx, id, first.ID, math.MaxInt16-1, true, true)
	if err != nil {
		t.Fatal(err)
	}
	if next.ID == first.ID || next.Epoch != 0 {
		t.Fatalf("after the overflow the producer goes on as %+v, want a new id at epoch 0", next)
	}
	if len(markers.written) != 1 || markers.written[0] != (ProducerIDAndEpoch{ID: first.ID, Epoch: math.MaxInt16}) {
		t.Fatalf("markers %+v, want one of the old id at epoch %d", markers.written, math.MaxInt16)
	}
	for _, co := range []*Coordinator{c, loadedCoordinator(t, log, markers, id)} {
		got, err := co.EndTxn(ctx, id, first.ID, math.MaxInt16-1, true, true)
		if err != nil || got != next {
			t.Fatalf("retried EndTxn under the old id: %+v, %v; want %+v", got, err, next)
		}
		if _, err := co.EndTxn(ctx, id, first.ID, math.MaxInt16-1, false, true); err == nil {
			t.Fatal("an abort retried after the commit succeeded")
		}
	}
}
