package replica

import (
	"testing"

	"github.com/runnel-io/runnel/internal/log/logtest"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// followerWithEpochs returns a partition whose log holds, for each (epoch, count) pair
// in order, count records appended as leader in that epoch, one batch per record (a
// truncation inside a batch drops the whole batch, as Kafka's does).
func followerWithEpochs(t *testing.T, epochs ...[2]int32) (*Manager, *Partition) {
	t.Helper()
	m, p := newTestPartition(t, []metadata.NodeID{1}, 1)
	for _, e := range epochs {
		for range e[1] {
			if _, err := p.log.AppendAsLeader(logtest.Batch(1, 10), e[0]); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Node 2 leads epoch 2 now; this replica follows it.
	p.applyState(metadata.Partition{Replicas: []metadata.NodeID{1, 2, 3}, ISR: []metadata.NodeID{1, 2, 3}, Leader: 2, LeaderEpoch: 2}, 1, true, -1)
	return m, p
}

func epochEnd(epoch int32, end int64) kmsg.OffsetForLeaderEpochResponseTopicPartition {
	rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
	rp.LeaderEpoch, rp.EndOffset = epoch, end
	return rp
}

// KIP-101: the follower has records of epoch 1 past where the new leader's epoch 1
// ended (they were never committed); it truncates to the leader's end of epoch 1.
func TestTruncateToLeaderEpochEnd(t *testing.T) {
	m, p := followerWithEpochs(t, [2]int32{0, 5}, [2]int32{1, 5}) // offsets 0-4 epoch 0, 5-9 epoch 1
	f := &Fetcher{m: m, source: 2}
	s := &fetchState{p: p, leaderEpoch: 2}
	f.applyEpochEnd(s, epochEnd(1, 7))
	if leo := p.log.LogEndOffset(); leo != 7 {
		t.Fatalf("log end after truncation = %d, want 7 (the leader's end of epoch 1)", leo)
	}
	if !s.truncated {
		t.Fatal("partition not marked truncated")
	}
}

// KIP-279: the leader never saw the follower's latest epoch (1) and answers with the
// largest epoch it knows below it (0) and that epoch's end (8, further than the
// follower's own epoch 0, which ended at 5). The follower truncates to the end of
// epoch 0 as it knows it (5), where both logs certainly agree, not to 8.
func TestTruncateWhenLeaderLacksOurEpoch(t *testing.T) {
	m, p := followerWithEpochs(t, [2]int32{0, 5}, [2]int32{1, 5})
	f := &Fetcher{m: m, source: 2}
	s := &fetchState{p: p, leaderEpoch: 2}
	f.applyEpochEnd(s, epochEnd(0, 8))
	if leo := p.log.LogEndOffset(); leo != 5 {
		t.Fatalf("log end after truncation = %d, want 5", leo)
	}
}

// A follower that agrees with the leader keeps everything.
func TestNoTruncationWhenLogsAgree(t *testing.T) {
	m, p := followerWithEpochs(t, [2]int32{0, 5}, [2]int32{1, 5})
	f := &Fetcher{m: m, source: 2}
	s := &fetchState{p: p, leaderEpoch: 2}
	f.applyEpochEnd(s, epochEnd(1, 12))
	if leo := p.log.LogEndOffset(); leo != 10 {
		t.Fatalf("log end = %d, want 10 (nothing to truncate)", leo)
	}
	if !s.truncated {
		t.Fatal("partition not marked truncated")
	}
}

// A fetcher still working for an epoch the replica no longer follows must not cut its
// log: the new role's divergence check decides.
func TestNoTruncationForAnOldEpoch(t *testing.T) {
	m, p := followerWithEpochs(t, [2]int32{0, 5}, [2]int32{1, 5})
	f := &Fetcher{m: m, source: 2}
	s := &fetchState{p: p, leaderEpoch: 1}
	f.applyEpochEnd(s, epochEnd(0, 3))
	if leo := p.log.LogEndOffset(); leo != 10 {
		t.Fatalf("log end = %d after a truncation for epoch 1 while following epoch 2, want 10", leo)
	}
	if s.truncated {
		t.Fatal("an old epoch's fetch state was marked truncated")
	}
}

// The high watermark never stays above a truncated log end.
func TestTruncationLowersHighWatermark(t *testing.T) {
	m, p := followerWithEpochs(t, [2]int32{0, 5}, [2]int32{1, 5})
	p.hw.Store(9)
	f := &Fetcher{m: m, source: 2}
	f.applyEpochEnd(&fetchState{p: p, leaderEpoch: 2}, epochEnd(1, 6))
	if hw := p.HighWatermark(); hw != 6 {
		t.Fatalf("high watermark = %d after truncating to 6", hw)
	}
}
