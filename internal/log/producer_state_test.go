package log

import (
	"reflect"
	"testing"

	"github.com/runnel-io/runnel/internal/log/logtest"
)

func idem(pid int64, epoch int16, seq int32, records int) []byte {
	return logtest.BatchWith(logtest.BatchOptions{Records: records, Idempotent: true, ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq})
}

func TestIdempotentProducer(t *testing.T) {
	forEachLogConfig(t, func(t *testing.T, env testEnv, cfg Config) {
		l := openLog(t, env, cfg)
		var infos []AppendInfo
		for seq := int32(0); seq < 30; seq += 3 {
			infos = append(infos, mustAppend(t, l, idem(7, 0, seq, 3)))
		}
		leo, size := l.LogEndOffset(), l.Size()
		// A retry of one of the last five batches: the original offsets, nothing written.
		dup := mustAppend(t, l, idem(7, 0, 21, 3))
		if !dup.Duplicate || dup.FirstOffset != infos[7].FirstOffset || dup.LastOffset != infos[7].LastOffset {
			t.Fatalf("retry answered %+v, want the offsets of %+v", dup, infos[7])
		}
		if l.LogEndOffset() != leo || l.Size() != size {
			t.Fatal("a duplicate was written")
		}
		_, err := l.AppendAsLeader(idem(7, 0, 3, 3), 1) // older than the last five
		wantErr(t, err, ErrOutOfOrderSequence)
		_, err = l.AppendAsLeader(idem(7, 0, 31, 1), 1) // gap
		wantErr(t, err, ErrOutOfOrderSequence)
		_, err = l.AppendAsLeader(idem(7, 1, 5, 1), 1) // new epoch must start at 0
		wantErr(t, err, ErrOutOfOrderSequence)
		mustAppend(t, l, idem(99, 0, 1234, 2)) // unknown producer: any sequence
		mustAppend(t, l, idem(7, 1, 0, 2))     // epoch bump
		_, err = l.AppendAsLeader(idem(7, 0, 30, 1), 1)
		wantErr(t, err, ErrInvalidProducerEpoch)
		if e, seq, ok := l.ProducerState(7); !ok || e != 1 || seq != 1 {
			t.Fatalf("ProducerState(7) = %d %d %v", e, seq, ok)
		}
		// The state survives a clean restart (snapshot) ...
		l = reopen(t, env, l, cfg)
		if e, seq, ok := l.ProducerState(99); !ok || e != 0 || seq != 1235 {
			t.Fatalf("after reopen ProducerState(99) = %d %d %v", e, seq, ok)
		}
		if d := mustAppend(t, l, idem(7, 1, 0, 2)); !d.Duplicate {
			t.Fatal("retry not recognised after reopen")
		}
		mustAppend(t, l, idem(7, 1, 2, 1))
		// ... and a restart without any snapshot (full scan).
		l.Close()
		l.removeSnapshotsBelow(-1)
		l = openLog(t, env, cfg, withRecoveryPoint(l.RecoveryPoint()))
		if e, seq, ok := l.ProducerState(7); !ok || e != 1 || seq != 2 {
			t.Fatalf("after a full scan ProducerState(7) = %d %d %v", e, seq, ok)
		}
		// Truncation rolls the state back.
		if err := l.Truncate(l.LogEndOffset() - 1); err != nil {
			t.Fatal(err)
		}
		if _, seq, _ := l.ProducerState(7); seq != 1 {
			t.Fatalf("after truncation last sequence %d, want 1", seq)
		}
	})
}

func TestIdempotentMultiBatchAppend(t *testing.T) {
	l := openLog(t, memEnv(), DefaultConfig())
	two := append(idem(5, 0, 0, 2), idem(5, 0, 2, 2)...)
	mustAppend(t, l, two)
	gap := append(idem(5, 0, 4, 2), idem(5, 0, 7, 1)...)
	_, err := l.AppendAsLeader(gap, 0)
	wantErr(t, err, ErrOutOfOrderSequence)
	if l.LogEndOffset() != 4 {
		t.Fatalf("a rejected append wrote: leo %d", l.LogEndOffset())
	}
}

func TestSequenceWraps(t *testing.T) {
	l := openLog(t, memEnv(), DefaultConfig())
	mustAppend(t, l, idem(1, 0, 1<<31-2, 2)) // sequences MaxInt32-1, MaxInt32
	mustAppend(t, l, idem(1, 0, 0, 1))
	if _, seq, _ := l.ProducerState(1); seq != 0 {
		t.Fatalf("last sequence %d after wrapping", seq)
	}
}

func TestProducerSnapshotRoundTrip(t *testing.T) {
	ps := newProducerState()
	for pid := int64(0); pid < 20; pid++ {
		for s := int32(0); s < int32(pid%8); s++ {
			ps.update(logtestBatchAt(pid, s, int64(pid*100)+int64(s)))
		}
	}
	got, err := decodeProducerSnapshot(ps.encode())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.producers, ps.producers) {
		t.Fatal("snapshot round trip changed the state")
	}
	b := ps.encode()
	b[len(b)-1] ^= 1
	if _, err := decodeProducerSnapshot(b); err == nil {
		t.Fatal("corrupt snapshot accepted")
	}
}

func logtestBatchAt(pid int64, seq int32, offset int64) []byte {
	return logtest.BatchWith(logtest.BatchOptions{Idempotent: true, ProducerID: pid, BaseSequence: seq, BaseOffset: offset})
}
