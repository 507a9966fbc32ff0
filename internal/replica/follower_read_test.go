package replica

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/log"
	"github.com/runnel-io/runnel/internal/log/logtest"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/vfs"
)

// newTestFollower returns node 2's replica of t/0, which follows node 1 in leader
// epoch 0 (node 1 is not registered, so no fetcher runs: the test feeds the follower
// as its fetcher would).
func newTestFollower(t *testing.T) *Partition {
	t.Helper()
	logs, err := log.NewManager(log.ManagerOptions{FS: vfs.OS(), DataDir: t.TempDir(), Defaults: log.DefaultConfig()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logs.Close() })
	m, err := NewManager(Options{Node: 2, Logs: logs, IsrChanger: &fakeIsrChanger{}, ReplicaLagTimeMax: time.Hour,
		Resolve: func(*metadata.Image, *metadata.Topic) TopicSettings {
			return TopicSettings{Log: log.DefaultConfig(), MinISR: 1}
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	im := metadata.Empty().Apply(metadata.Record{Type: metadata.CreateTopicType, Topic: &metadata.Topic{
		Name: "t", Partitions: []metadata.Partition{{Replicas: []metadata.NodeID{1, 2, 3}, ISR: []metadata.NodeID{1, 2, 3}, Leader: 1}},
	}}, 1)
	if err := m.ApplyImage(im); err != nil {
		t.Fatal(err)
	}
	p, err := m.Partition(metadata.TopicPartition{Topic: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if p.IsLeader() {
		t.Fatal("node 2 leads t/0; want it to follow node 1")
	}
	return p
}

// fetched appends records [base, base+n) to the follower as its fetcher does, then
// adopts the leader's high watermark of that fetch answer.
func fetched(t *testing.T, p *Partition, base int64, n int, leaderHW int64) {
	t.Helper()
	b := logtest.BatchWith(logtest.BatchOptions{Records: n, BaseOffset: base})
	if _, err := p.appendAsFollower(b, 0); err != nil {
		t.Fatalf("follower append at %d: %v", base, err)
	}
	p.adoptLeaderHighWatermark(leaderHW, 0)
}

// consumerRead is a consumer's Fetch v11+ of the follower (KIP-392).
func consumerRead(p *Partition, offset int64) (ReadResult, error) {
	return p.Read(ReadOptions{FetchOffset: offset, MaxBytes: 1 << 20, MinOneBatch: true, CurrentLeaderEpoch: -1,
		ReplicaID: -1, FromFollower: true})
}

// lastOffset is the last offset of the records a read returned, -1 for none.
func lastOffset(t *testing.T, res ReadResult) int64 {
	t.Helper()
	if res.Info.Size == 0 {
		return -1
	}
	b, err := res.Info.AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := logtest.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return recs[len(recs)-1].Offset
}

// TestFollowerServesConsumersBelowItsHighWatermark: a follower serves a consumer's
// fetch (KIP-392) up to its own high watermark and never past it, answers no records
// between its high watermark and its log end (not an error: the leader may have
// committed them already), and OFFSET_OUT_OF_RANGE past its log end, as Kafka. Only a
// consumer's fetch that allows it (v11+) is served; anything else is NOT_LEADER.
func TestFollowerServesConsumersBelowItsHighWatermark(t *testing.T) {
	p := newTestFollower(t)
	fetched(t, p, 0, 5, 3) // the leader had committed 3 when it answered
	fetched(t, p, 5, 5, 5)
	if hw, leo := p.HighWatermark(), p.Log().LogEndOffset(); hw != 5 || leo != 10 {
		t.Fatalf("follower high watermark %d, log end %d; want 5 and 10", hw, leo)
	}

	res, err := consumerRead(p, 0)
	if err != nil {
		t.Fatalf("consumer read at 0 from the follower: %v", err)
	}
	if last := lastOffset(t, res); last != 4 || !res.Follower || res.HighWatermark != 5 {
		t.Fatalf("consumer read at 0: last offset %d, follower %v, high watermark %d; want 4 (below the high watermark 5), true, 5",
			last, res.Follower, res.HighWatermark)
	}
	for _, off := range []int64{5, 7, 10} {
		res, err := consumerRead(p, off)
		if err != nil || res.Info.Size != 0 {
			t.Fatalf("consumer read at %d (high watermark 5, log end 10): %d bytes, %v; want none and no error", off, res.Info.Size, err)
		}
	}
	if _, err := consumerRead(p, 11); !errors.Is(err, log.ErrOffsetOutOfRange) {
		t.Fatalf("consumer read at 11, past the follower's log end 10: %v; want offset out of range", err)
	}

	// Before v11 (Kafka's fetchOnlyLeader), and a replica's fetch, only the leader answers.
	if _, err := p.Read(ReadOptions{FetchOffset: 0, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1, ReplicaID: -1}); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("consumer read without FromFollower: %v; want not leader", err)
	}
	if _, err := p.Read(ReadOptions{FetchOffset: 0, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1, ReplicaID: 3, FromFollower: true}); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("replica 3 reading from follower 2: %v; want not leader", err)
	}
	// The consumer's leader epoch is checked against the one the follower follows.
	if _, err := p.Read(ReadOptions{FetchOffset: 0, MaxBytes: 1 << 20, CurrentLeaderEpoch: 1, ReplicaID: -1, FromFollower: true}); !errors.Is(err, ErrUnknownLeaderEpoch) {
		t.Fatalf("consumer read naming epoch 1 from a follower of epoch 0: %v; want unknown leader epoch", err)
	}

	// A leader's high watermark past what the follower holds is capped by its log end.
	p.adoptLeaderHighWatermark(12, 0)
	res, err = consumerRead(p, 5)
	if err != nil || lastOffset(t, res) != 9 || res.HighWatermark != 10 {
		t.Fatalf("consumer read at 5 after the leader's high watermark 12: last offset %d, high watermark %d, %v; want 9, 10 (the follower's log end)",
			lastOffset(t, res), res.HighWatermark, err)
	}
}

// TestFollowerHighWatermarkWakesConsumers: a consumer's long poll parked on a follower
// is woken when the follower adopts a higher high watermark from its leader, as Kafka
// completes the delayed fetches of the partitions whose follower high watermark moved;
// otherwise it would sleep until its MaxWait with the records readable.
func TestFollowerHighWatermarkWakesConsumers(t *testing.T) {
	p := newTestFollower(t)
	fetched(t, p, 0, 5, 0)
	parked, stop := Watch([]*Partition{p})
	defer stop()
	p.adoptLeaderHighWatermark(5, 0)
	select {
	case <-parked:
	case <-time.After(5 * time.Second):
		t.Fatal("a consumer parked on the follower was not woken by its high watermark moving from 0 to 5")
	}
	// The same high watermark again (a fetch answer with no news) wakes nobody.
	p.adoptLeaderHighWatermark(5, 0)
	select {
	case <-parked:
		t.Fatal("a consumer parked on the follower was woken with its high watermark unchanged")
	default:
	}
}
