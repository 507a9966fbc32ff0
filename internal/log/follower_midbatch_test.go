package log

import (
	"bytes"
	"testing"

	"github.com/runnel-io/runnel/internal/log/logtest"
)

// TestFollowerAppendAtLogStartInsideBatch: DeleteRecords moved the leader's log start
// into a batch (15, inside 10-19), which the leader keeps whole. A follower restarted
// at that log start (empty, start = end = 15) is then fetched that whole batch: it
// stores it as the leader does, from its base offset, and keeps 15 as its log start.
// Refused (ErrOffsetOutOfRange), the follower, or a cluster link's mirror restarted
// at its source's log start, failed the same append at every fetch and never caught up.
func TestFollowerAppendAtLogStartInsideBatch(t *testing.T) {
	leader := openLog(t, memEnv(), DefaultConfig())
	for i := 0; i < 3; i++ {
		if _, err := leader.AppendAsLeader(logtest.Batch(10, 10), 1); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := leader.DeleteRecordsBefore(15); err != nil {
		t.Fatal(err)
	}
	ri, err := leader.Read(15, 1<<20, leader.LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := ri.AppendTo(nil)

	follower := openLog(t, memEnv(), DefaultConfig())
	if err := follower.TruncateFullyAndStartAt(15); err != nil {
		t.Fatal(err)
	}
	info, err := follower.AppendAsFollower(data)
	if err != nil {
		t.Fatalf("append of the leader's batches from its log start 15 (inside batch 10-19): %v", err)
	}
	if info.FirstOffset != 10 || info.LastOffset != 29 || follower.LogStartOffset() != 15 || follower.LogEndOffset() != 30 {
		t.Fatalf("append %+v, log start %d, end %d; want offsets 10-29 stored, log start 15, end 30",
			info, follower.LogStartOffset(), follower.LogEndOffset())
	}
	fi, err := follower.Read(15, 1<<20, follower.LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := fi.AppendTo(nil); !bytes.Equal(got, data) {
		t.Fatalf("the follower serves %d bytes from 15, the leader %d (or they differ)", len(got), len(data))
	}
	// A log holding records still refuses a batch below its end: that is divergence,
	// for the epochs to resolve, not a log start.
	if _, err := follower.AppendAsFollower(data); err == nil {
		t.Fatal("a non-empty follower took a batch below its log end")
	}
}
