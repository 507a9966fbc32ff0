package group

import (
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/log"
	"github.com/runnel-io/runnel/internal/recordbatch"
)

// txnWrite is a TxnOffsetCommit's write of one offset of group g by producer pid.
func txnWrite(g string, pid int64, partition int32, offset int64) write {
	o := offsetAndMetadata{offset: offset, leaderEpoch: -1}
	return write{records: []kv{{offsetCommitKey(g, "t", partition), offsetCommitValue(o)}}, producer: &txnProducer{id: pid}}
}

func marker(pid int64, commit bool) []byte {
	t := log.ControlAbort
	if commit {
		t = log.ControlCommit
	}
	return log.ControlBatch(t, pid, 0, 0, 0)
}

func TestReplayTransactionalOffsets(t *testing.T) {
	var buf []byte
	buf = append(buf, encodeWrites([]write{
		{records: []kv{{offsetCommitKey("g", "t", 0), offsetCommitValue(offsetAndMetadata{offset: 1, leaderEpoch: -1})}}},
		txnWrite("g", 7, 0, 10), txnWrite("g", 8, 1, 20), txnWrite("h", 9, 2, 30),
	})...)
	b, _, err := recordbatch.Next(buf[len(buf)-len(encodeWrites([]write{txnWrite("h", 9, 2, 30)})):], 0)
	if err != nil || !b.IsTransactional() || b.ProducerID() != 9 || b.Verify() != nil {
		t.Fatalf("transactional write encoded as %v (err %v)", b, err)
	}
	buf = append(buf, marker(7, true)...)
	buf = append(buf, marker(8, false)...)
	loaded := map[string]*loadedGroup{}
	if _, err := replay(loaded, buf); err != nil {
		t.Fatal(err)
	}
	g := loaded["g"]
	if g.offsets[TopicPartition{"t", 0}].offset != 10 {
		t.Fatalf("committed transaction's offset not applied: %+v", g.offsets)
	}
	if _, ok := g.offsets[TopicPartition{"t", 1}]; ok || len(g.txnOffsets) != 0 {
		t.Fatalf("aborted transaction's offset applied or kept: %+v %+v", g.offsets, g.txnOffsets)
	}
	h := loaded["h"]
	if len(h.offsets) != 0 || h.txnOffsets[9][TopicPartition{"t", 2}].offset != 30 {
		t.Fatalf("open transaction: offsets %+v pending %+v", h.offsets, h.txnOffsets)
	}
	restored := restoreGroup("h", h, defaultLimits(), nil, time.Now())
	if restored.canBeRemoved() {
		t.Fatal("a group with pending transactional offsets can be removed")
	}
	restored.completeTxn(9, true)
	if o := restored.fetchOffsets(nil); len(o) != 1 || o[0].Offset != 30 {
		t.Fatalf("after the commit marker: %+v", o)
	}
}

func TestTxnCommitPendingUntilMarker(t *testing.T) {
	h := newHarness(t)
	commit := func(pid int64, offset int64) []error {
		var got []error
		h.g.txnCommit(h.now, TxnCommitRequest{GroupID: "g", ProducerID: pid, Generation: -1,
			Offsets: []OffsetCommit{{Topic: "t", Offset: offset}}}, func(errs []error) { got = errs })
		return got
	}
	commit(1, 5)
	h.finishWrites(nil)
	if o := h.g.fetchOffsets(nil); len(o) != 0 {
		t.Fatalf("pending offsets visible before the marker: %+v", o)
	}
	if o := h.g.fetchOffsets([]TopicPartition{{"t", 0}}); o[0].Offset != -1 || !o[0].Unstable {
		t.Fatalf("partition with a pending offset fetched as %+v, want none and unstable", o)
	}
	h.g.completeTxn(1, false)
	commit(1, 6)
	h.finishWrites(nil)
	h.g.completeTxn(1, true)
	if o := h.g.fetchOffsets(nil); len(o) != 1 || o[0].Offset != 6 || o[0].Unstable {
		t.Fatalf("after abort then commit: %+v", o)
	}
	commit(2, 7)
	h.finishWrites(ErrCoordinatorNotAvailable)
	if len(h.g.txnOffsets) != 0 {
		t.Fatalf("failed append left pending offsets %+v", h.g.txnOffsets)
	}
	h.g.completeTxn(2, true)
	if o := h.g.fetchOffsets(nil); o[0].Offset != 6 {
		t.Fatalf("failed transactional commit applied: %+v", o)
	}
}
