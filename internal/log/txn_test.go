package log

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/recordbatch"
)

// txnBatch is a transactional batch of producer pid.
func txnBatch(pid int64, epoch int16, seq int32, records int) []byte {
	b := recordbatch.Batch(idem(pid, epoch, seq, records))
	binary.BigEndian.PutUint16(b[batchOffAttributes:], uint16(b.Attributes())|recordbatch.TransactionalFlag)
	binary.BigEndian.PutUint32(b[batchOffCRC:], b.ComputeCRC())
	return b
}

func mustControl(t *testing.T, l *Log, ct ControlType, pid int64, epoch int16) AppendInfo {
	t.Helper()
	info, err := l.AppendControl(ct, pid, epoch, 0, 1)
	if err != nil {
		t.Fatalf("AppendControl: %v", err)
	}
	return info
}

func TestControlBatchMatchesKafka(t *testing.T) {
	b := ControlBatch(ControlCommit, 42, 3, 7, 1000)
	if err := b.Verify(); err != nil {
		t.Fatal(err)
	}
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(b); err != nil {
		t.Fatal(err)
	}
	if rb.ProducerID != 42 || rb.ProducerEpoch != 3 || rb.Attributes != 0x30 || rb.NumRecords != 1 || rb.FirstSequence != -1 {
		t.Fatalf("header %+v", rb)
	}
	recs := make([]kmsg.Record, 1)
	if err := recs[0].ReadFrom(rb.Records); err != nil {
		t.Fatal(err)
	}
	var key kmsg.ControlRecordKey
	var val kmsg.EndTxnMarker
	if err := key.ReadFrom(recs[0].Key); err != nil || key.Type != kmsg.ControlRecordKeyTypeCommit {
		t.Fatalf("key %+v %v", key, err)
	}
	if err := val.ReadFrom(recs[0].Value); err != nil || val.CoordinatorEpoch != 7 {
		t.Fatalf("value %+v %v", val, err)
	}
	ct, ce, ok := ParseControl(b)
	if !ok || ct != ControlCommit || ce != 7 {
		t.Fatalf("ParseControl = %v %v %v", ct, ce, ok)
	}
	if _, _, ok := ParseControl(b[:recordbatch.HeaderSize+3]); ok {
		t.Fatal("ParseControl accepted a cut record")
	}
}

func TestTransactionsLSOAndAborted(t *testing.T) {
	forEachLogConfig(t, func(t *testing.T, env testEnv, cfg Config) {
		l := openLog(t, env, cfg)
		mustAppend(t, l, idem(9, 0, 0, 2)) // 0-1 idempotent, no transaction
		if _, ok := l.FirstUnstableOffset(); ok {
			t.Fatal("unstable offset without a transaction")
		}
		a := mustAppend(t, l, txnBatch(1, 0, 0, 3)) // 2-4 producer 1
		mustAppend(t, l, txnBatch(2, 0, 0, 2))      // 5-6 producer 2
		mustAppend(t, l, txnBatch(1, 0, 3, 1))      // 7
		if off, ok := l.FirstUnstableOffset(); !ok || off != a.FirstOffset {
			t.Fatalf("FirstUnstableOffset = %d %v, want %d", off, ok, a.FirstOffset)
		}
		if lso := l.LastStableOffset(l.LogEndOffset()); lso != 2 {
			t.Fatalf("LSO = %d, want 2", lso)
		}
		if lso := l.LastStableOffset(1); lso != 1 {
			t.Fatalf("LSO capped by hw = %d, want 1", lso)
		}
		_, err := l.AppendAsLeader(idem(1, 0, 4, 1), 1)
		wantErr(t, err, ErrInvalidTxnState)

		commit := mustControl(t, l, ControlCommit, 1, 0) // 8
		if off, _ := l.FirstUnstableOffset(); off != 5 {
			t.Fatalf("after commit of 1 FirstUnstableOffset = %d, want 5", off)
		}
		abort := mustControl(t, l, ControlAbort, 2, 0) // 9
		if _, ok := l.FirstUnstableOffset(); ok || commit.FirstOffset != 8 || abort.FirstOffset != 9 {
			t.Fatalf("after both markers: unstable %v, markers at %d %d", ok, commit.FirstOffset, abort.FirstOffset)
		}
		want := []AbortedTxn{{ProducerID: 2, FirstOffset: 5, LastOffset: 9}}
		checkAborted(t, l, 0, 100, want)
		checkAborted(t, l, 0, 5, nil)
		checkAborted(t, l, 10, 100, nil)
		checkAborted(t, l, 9, 10, want)

		mustAppend(t, l, txnBatch(2, 0, 2, 1)) // 10: a new open transaction
		// Snapshot at close ...
		l = reopen(t, env, l, cfg)
		checkAborted(t, l, 0, 100, want)
		if off, ok := l.FirstUnstableOffset(); !ok || off != 10 {
			t.Fatalf("after reopen FirstUnstableOffset = %d %v", off, ok)
		}
		// ... and a full scan rebuild the same state.
		l.Close()
		l.removeSnapshotsBelow(-1)
		l = openLog(t, env, cfg, withRecoveryPoint(l.RecoveryPoint()))
		checkAborted(t, l, 0, 100, want)
		if off, ok := l.FirstUnstableOffset(); !ok || off != 10 {
			t.Fatalf("after a full scan FirstUnstableOffset = %d %v", off, ok)
		}
		// Truncating the abort marker reopens producer 2's transaction at 5.
		if err := l.Truncate(9); err != nil {
			t.Fatal(err)
		}
		checkAborted(t, l, 0, 100, nil)
		if off, ok := l.FirstUnstableOffset(); !ok || off != 5 {
			t.Fatalf("after truncation FirstUnstableOffset = %d %v, want 5", off, ok)
		}
	})
}

func checkAborted(t *testing.T, l *Log, from, to int64, want []AbortedTxn) {
	t.Helper()
	if got := l.AbortedTransactions(from, to); !reflect.DeepEqual(got, want) {
		t.Fatalf("AbortedTransactions(%d, %d) = %+v, want %+v", from, to, got, want)
	}
}

func TestMarkerFencing(t *testing.T) {
	env := memEnv()
	l := openLog(t, env, Config{})
	mustAppend(t, l, txnBatch(1, 2, 0, 1))
	_, err := l.AppendControl(ControlCommit, 1, 1, 0, 1)
	wantErr(t, err, ErrInvalidProducerEpoch)
	if _, err := l.AppendControl(ControlAbort, 1, 3, 5, 1); err != nil { // epoch bump by the coordinator
		t.Fatal(err)
	}
	_, err = l.AppendControl(ControlAbort, 1, 3, 4, 1)
	wantErr(t, err, ErrTxnCoordinatorFenced)
	// The bumped epoch starts its sequences at 0 and may open a new transaction.
	mustAppend(t, l, txnBatch(1, 3, 0, 1))
	_, err = l.AppendAsLeader(txnBatch(1, 2, 1, 1), 1)
	wantErr(t, err, ErrInvalidProducerEpoch)
	// A marker for a producer that never wrote here (partition added, nothing sent).
	mustControl(t, l, ControlCommit, 77, 0)
	if e, seq, ok := l.ProducerState(77); !ok || e != 0 || seq != -1 {
		t.Fatalf("ProducerState(77) = %d %d %v", e, seq, ok)
	}
	mustAppend(t, l, txnBatch(77, 0, 0, 1))
	l = reopen(t, env, l, Config{})
	if off, ok := l.FirstUnstableOffset(); !ok || off != 2 {
		t.Fatalf("after reopen FirstUnstableOffset = %d %v, want 2 (producer 1's new transaction)", off, ok)
	}
}

func TestProducerSnapshotV1StillReads(t *testing.T) {
	ps := newProducerState()
	ps.update(recordbatch.Batch(idem(5, 1, 0, 3)))
	v2 := ps.encode()
	// Build the version 1 image of the same state by hand.
	v1 := binary.BigEndian.AppendUint16(nil, 1)
	v1 = append(v1, 0, 0, 0, 0)
	v1 = binary.BigEndian.AppendUint32(v1, 1)
	v1 = binary.BigEndian.AppendUint64(v1, 5)
	v1 = binary.BigEndian.AppendUint16(v1, 1)
	v1 = append(v1, 1)
	e := ps.producers[5]
	v1 = binary.BigEndian.AppendUint32(v1, 0)
	v1 = binary.BigEndian.AppendUint32(v1, 2)
	v1 = binary.BigEndian.AppendUint64(v1, uint64(e.batches[0].firstOffset))
	v1 = binary.BigEndian.AppendUint64(v1, uint64(e.batches[0].lastOffset))
	binary.BigEndian.PutUint32(v1[2:], crc32.Checksum(v1[6:], castagnoli))
	for _, img := range [][]byte{v1, v2} {
		s, err := decodeProducerSnapshot(img)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.producers[5]; got == nil || *got != *e {
			t.Fatalf("decoded %+v, want %+v", got, e)
		}
	}
	for cut := 0; cut < len(v2); cut++ {
		if _, err := decodeProducerSnapshot(v2[:cut]); err == nil {
			t.Fatalf("a snapshot cut at %d decoded", cut)
		}
	}
}

// Transaction version 2 (KIP-890 part 2): the coordinator writes the markers with
// the producer's epoch bumped, so a late write of the ended transaction is fenced at
// the partition, and the producer's next transaction starts its sequences at 0.
func TestMarkerWithBumpedEpochFencesTheEndedTransaction(t *testing.T) {
	forEachLogConfig(t, func(t *testing.T, env testEnv, cfg Config) {
		l := openLog(t, env, cfg)
		mustAppend(t, l, txnBatch(1, 4, 0, 2))
		mustControl(t, l, ControlCommit, 1, 5)
		if _, err := l.AppendAsLeader(txnBatch(1, 4, 2, 1), 1); !errors.Is(err, ErrInvalidProducerEpoch) {
			t.Fatalf("late write at the ended transaction's epoch: %v, want ErrInvalidProducerEpoch", err)
		}
		if _, err := l.AppendAsLeader(txnBatch(1, 5, 2, 1), 1); !errors.Is(err, ErrOutOfOrderSequence) {
			t.Fatalf("first write at the bumped epoch with sequence 2: %v, want ErrOutOfOrderSequence", err)
		}
		a := mustAppend(t, l, txnBatch(1, 5, 0, 1))
		if off, ok := l.FirstUnstableOffset(); !ok || off != a.FirstOffset {
			t.Fatalf("FirstUnstableOffset = %d %v, want the next transaction at %d", off, ok, a.FirstOffset)
		}
		if _, err := l.AppendControl(ControlAbort, 1, 4, 0, 1); !errors.Is(err, ErrInvalidProducerEpoch) {
			t.Fatalf("marker at the old epoch: %v, want ErrInvalidProducerEpoch", err)
		}
	})
}
