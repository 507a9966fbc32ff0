package controller

import (
	"bytes"
	"io"
	"reflect"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/runnel-io/runnel/internal/metadata"
)

func entry(t *testing.T, index uint64, recs ...metadata.Record) *raft.Log {
	t.Helper()
	b, err := metadata.Encode(recs)
	if err != nil {
		t.Fatal(err)
	}
	return &raft.Log{Index: index, Type: raft.LogCommand, Data: b}
}

// memSink is a raft.SnapshotSink over a buffer.
type memSink struct {
	bytes.Buffer
	closed, cancelled bool
}

func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Close() error  { s.closed = true; return nil }
func (s *memSink) Cancel() error { s.cancelled = true; return nil }

func TestFSMApplySnapshotRestore(t *testing.T) {
	f := newFSM(testLogger(t))
	topic := &metadata.Topic{Name: "t", ID: [16]byte{1, 2, 3}, Configs: map[string]string{"a": "b"},
		Partitions: []metadata.Partition{{Replicas: []metadata.NodeID{1, 2}, ISR: []metadata.NodeID{1, 2}, Leader: 1}}}
	res := f.Apply(entry(t, 5,
		metadata.Record{Type: metadata.ClusterIDType, ClusterID: "cid"},
		metadata.Record{Type: metadata.RegisterBrokerType, Broker: &metadata.Broker{ID: 1, Host: "h", Port: 9, Rack: "r", Epoch: 3}},
		metadata.Record{Type: metadata.CreateTopicType, Topic: topic},
		metadata.Record{Type: metadata.ProducerIDsType, ProducerIDBlockStart: 0, NextProducerID: 1000},
	)).(applyResult)
	if res.err != nil || res.prev.Offset != 0 || res.cur != f.image.Load() || res.cur.Offset != 5 {
		t.Fatalf("apply result %+v", res)
	}
	// An undecodable entry still advances the offset and reports its error.
	bad := f.Apply(&raft.Log{Index: 6, Type: raft.LogCommand, Data: []byte("{")}).(applyResult)
	if bad.err == nil || f.image.Load().Offset != 6 || f.image.Load().Topic("t") == nil {
		t.Fatalf("bad entry: %+v", bad)
	}

	snap, _ := f.Snapshot()
	sink := &memSink{}
	if err := snap.Persist(sink); err != nil || !sink.closed {
		t.Fatalf("persist: %v closed=%v", err, sink.closed)
	}
	snap.Release()
	g := newFSM(testLogger(t))
	if err := g.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatal(err)
	}
	want, got := f.image.Load(), g.image.Load()
	assertSameImage(t, want, got)
	if got.Offset != 6 || got.ClusterID != "cid" || !reflect.DeepEqual(got.Brokers[1], want.Brokers[1]) || got.NextProducerID != 1000 {
		t.Fatalf("restored %+v, want %+v", got, want)
	}
	if err := g.Restore(io.NopCloser(bytes.NewReader([]byte("nope")))); err == nil {
		t.Fatal("restored garbage")
	}
	// Restoring an empty image yields usable (non-nil) maps.
	if err := g.Restore(io.NopCloser(bytes.NewReader([]byte(`{"offset":1}`)))); err != nil || g.image.Load().Topics == nil || g.image.Load().Brokers == nil {
		t.Fatalf("restore of a minimal image: %v", err)
	}
}
