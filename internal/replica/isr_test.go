package replica

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/log"
	"github.com/runnel-io/runnel/internal/log/logtest"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/vfs"
)

func TestHighWatermarkIsMinOverISR(t *testing.T) {
	f := map[metadata.NodeID]*followerState{2: {logEndOffset: 7}, 3: {logEndOffset: 4}}
	cases := []struct {
		name string
		isr  []metadata.NodeID
		want int64
	}{
		{"leader alone", []metadata.NodeID{1}, 10},
		{"one follower", []metadata.NodeID{1, 2}, 7},
		{"slowest follower wins", []metadata.NodeID{1, 2, 3}, 4},
		{"unknown follower holds it", []metadata.NodeID{1, 4}, -1},
	}
	for _, c := range cases {
		if got := highWatermark(10, 1, c.isr, f); got != c.want {
			t.Errorf("%s: highWatermark = %d, want %d", c.name, got, c.want)
		}
	}
}

func TestOutOfSyncReplicas(t *testing.T) {
	const maxLag = 1000
	f := map[metadata.NodeID]*followerState{
		2: {logEndOffset: 10, lastCaughtUpTimeMs: 0},   // at the log end: in sync whatever the time
		3: {logEndOffset: 5, lastCaughtUpTimeMs: 9500}, // behind but caught up recently
		4: {logEndOffset: 5, lastCaughtUpTimeMs: 8000}, // behind for too long
	}
	got := outOfSyncReplicas([]metadata.NodeID{1, 2, 3, 4, 5}, 1, f, 10, 10000, maxLag, nil)
	if want := []metadata.NodeID{4, 5}; !slices.Equal(got, want) {
		t.Fatalf("out of sync = %v, want %v", got, want)
	}
	// On a full disk, behind is out of sync at once; at the log end it stays.
	full := func(r metadata.NodeID) bool { return r == 2 || r == 3 }
	got = outOfSyncReplicas([]metadata.NodeID{1, 2, 3, 4, 5}, 1, f, 10, 10000, maxLag, full)
	if want := []metadata.NodeID{3, 4, 5}; !slices.Equal(got, want) {
		t.Fatalf("out of sync with 2 and 3 on full disks = %v, want %v", got, want)
	}
}

func TestCanJoinISR(t *testing.T) {
	if canJoinISR(&followerState{logEndOffset: 9}, 10, 0) {
		t.Error("a follower below the high watermark joined the ISR")
	}
	if canJoinISR(&followerState{logEndOffset: 10}, 10, 12) {
		t.Error("a follower below the leader epoch start joined the ISR")
	}
	if !canJoinISR(&followerState{logEndOffset: 12}, 10, 12) {
		t.Error("a caught-up follower could not join the ISR")
	}
}

// fakeIsrChanger records proposals and accepts them.
type fakeIsrChanger struct {
	mu    sync.Mutex
	calls [][]metadata.NodeID
}

func (f *fakeIsrChanger) AlterPartition(_ context.Context, tp metadata.TopicPartition, leader metadata.NodeID, le, pe int32, isr []metadata.NodeID) (metadata.Partition, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, isr)
	return metadata.Partition{Leader: leader, LeaderEpoch: le, PartitionEpoch: pe + 1, ISR: isr}, nil
}

func newTestPartition(t *testing.T, isr []metadata.NodeID, minISR int32) (*Manager, *Partition) {
	t.Helper()
	logs, err := log.NewManager(log.ManagerOptions{FS: vfs.OS(), DataDir: t.TempDir(), Defaults: log.DefaultConfig()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logs.Close() })
	changer := &fakeIsrChanger{}
	m, err := NewManager(Options{Node: 1, Logs: logs, IsrChanger: changer, ReplicaLagTimeMax: time.Hour,
		Resolve: func(*metadata.Image, *metadata.Topic) TopicSettings {
			return TopicSettings{Log: log.DefaultConfig(), MinISR: minISR}
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	im := metadata.Empty().Apply(metadata.Record{Type: metadata.CreateTopicType, Topic: &metadata.Topic{
		Name: "t", Partitions: []metadata.Partition{{Replicas: []metadata.NodeID{1, 2, 3}, ISR: isr, Leader: 1}},
	}}, 1)
	if err := m.ApplyImage(im); err != nil {
		t.Fatal(err)
	}
	p, err := m.Partition(metadata.TopicPartition{Topic: "t"})
	if err != nil {
		t.Fatal(err)
	}
	return m, p
}

// acks=all is acknowledged only once every ISR member has fetched past the batch, and
// the high watermark follows the slowest ISR member.
func TestAcksAllWaitsForISR(t *testing.T) {
	_, p := newTestPartition(t, []metadata.NodeID{1, 2, 3}, 2)
	done := make(chan error, 1)
	go func() {
		_, err := p.AppendToLeader(context.Background(), logtest.Batch(5, 10), -1)
		done <- err
	}()
	waitFor(t, func() bool { return p.log.LogEndOffset() == 5 }, "leader append")
	fetch := func(id metadata.NodeID, off int64) {
		if err := p.RecordFollowerFetch(id, off, -1, -1, time.Now()); err != nil {
			t.Fatalf("follower %d fetch at %d: %v", id, off, err)
		}
	}
	fetch(2, 5)
	select {
	case err := <-done:
		t.Fatalf("acks=all answered (%v) before follower 3 had the batch", err)
	case <-time.After(50 * time.Millisecond):
	}
	if hw := p.HighWatermark(); hw != 0 {
		t.Fatalf("high watermark %d moved past follower 3's log end 0", hw)
	}
	fetch(3, 5)
	if err := <-done; err != nil {
		t.Fatalf("acks=all: %v", err)
	}
	if hw := p.HighWatermark(); hw != 5 {
		t.Fatalf("high watermark = %d, want 5", hw)
	}
}

func TestNotEnoughReplicas(t *testing.T) {
	_, p := newTestPartition(t, []metadata.NodeID{1}, 2)
	_, err := p.AppendToLeader(context.Background(), logtest.Batch(1, 10), -1)
	if !errors.Is(err, ErrNotEnoughReplicas) {
		t.Fatalf("append with ISR 1 < min.insync.replicas 2: err = %v, want ErrNotEnoughReplicas", err)
	}
	if leo := p.log.LogEndOffset(); leo != 0 {
		t.Fatalf("rejected append still wrote: log end %d", leo)
	}
	// acks=1 is not subject to min.insync.replicas.
	if _, err := p.AppendToLeader(context.Background(), logtest.Batch(1, 10), 1); err != nil {
		t.Fatalf("acks=1: %v", err)
	}
}

func TestFollowerRejoinsISR(t *testing.T) {
	m, p := newTestPartition(t, []metadata.NodeID{1, 2}, 1)
	if _, err := p.AppendToLeader(context.Background(), logtest.Batch(3, 10), 1); err != nil {
		t.Fatal(err)
	}
	fetch := func(off int64) {
		if err := p.RecordFollowerFetch(3, off, -1, -1, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	fetch(0) // behind the high watermark (0 until follower 2 fetches): may join at once
	changer := m.opts.IsrChanger.(*fakeIsrChanger)
	waitFor(t, func() bool { return slices.Contains(p.State().ISR, 3) }, "follower 3 in the ISR")
	changer.mu.Lock()
	defer changer.mu.Unlock()
	if len(changer.calls) != 1 || !slices.Equal(changer.calls[0], []metadata.NodeID{1, 2, 3}) {
		t.Fatalf("proposals = %v, want one expansion to [1 2 3]", changer.calls)
	}
}

func TestReadRejectsStaleEpochAndNonLeader(t *testing.T) {
	_, p := newTestPartition(t, []metadata.NodeID{1}, 1)
	p.applyState(metadata.Partition{Replicas: []metadata.NodeID{1, 2}, ISR: []metadata.NodeID{1, 2}, Leader: 1, LeaderEpoch: 3}, 1, true, -1)
	if _, err := p.Read(ReadOptions{CurrentLeaderEpoch: 2, ReplicaID: -1}); !errors.Is(err, ErrFencedLeaderEpoch) {
		t.Errorf("older epoch: %v, want ErrFencedLeaderEpoch", err)
	}
	if _, err := p.Read(ReadOptions{CurrentLeaderEpoch: 4, ReplicaID: -1}); !errors.Is(err, ErrUnknownLeaderEpoch) {
		t.Errorf("newer epoch: %v, want ErrUnknownLeaderEpoch", err)
	}
	p.applyState(metadata.Partition{Replicas: []metadata.NodeID{1, 2}, ISR: []metadata.NodeID{1, 2}, Leader: 2, LeaderEpoch: 4}, 1, true, -1)
	if _, err := p.AppendToLeader(context.Background(), logtest.Batch(1, 1), 1); !errors.Is(err, ErrNotLeader) {
		t.Errorf("produce to a follower: %v, want ErrNotLeader", err)
	}
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Read only reads: a follower's read (a long poll reads several times per request)
// records nothing about the follower; RecordFollowerFetch does, once.
func TestReadIsARead(t *testing.T) {
	_, p := newTestPartition(t, []metadata.NodeID{1, 2}, 1)
	if _, err := p.AppendToLeader(context.Background(), logtest.Batch(5, 10), 1); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := p.Read(ReadOptions{FetchOffset: 5, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1, ReplicaID: 2}); err != nil {
			t.Fatal(err)
		}
	}
	if lag := p.State().FollowerLag[2]; lag != 5 {
		t.Fatalf("follower 2's lag after reads alone = %d, want 5 (nothing recorded)", lag)
	}
	if hw := p.HighWatermark(); hw != 0 {
		t.Fatalf("reads moved the high watermark to %d", hw)
	}
	if err := p.RecordFollowerFetch(2, 5, -1, -1, time.Now()); err != nil {
		t.Fatal(err)
	}
	if lag, hw := p.State().FollowerLag[2], p.HighWatermark(); lag != 0 || hw != 5 {
		t.Fatalf("after RecordFollowerFetch(5): lag %d, high watermark %d; want 0 and 5", lag, hw)
	}
	// A fetch the leader would refuse records nothing.
	if err := p.RecordFollowerFetch(2, 9, -1, -1, time.Now()); !errors.Is(err, log.ErrOffsetOutOfRange) {
		t.Fatalf("fetch past the log end: %v, want ErrOffsetOutOfRange", err)
	}
	if err := p.RecordFollowerFetch(2, 5, -1, 7, time.Now()); !errors.Is(err, ErrUnknownLeaderEpoch) {
		t.Fatalf("fetch naming a future epoch: %v, want ErrUnknownLeaderEpoch", err)
	}
}
