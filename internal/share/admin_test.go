package share

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// fakeLog is a data partition led at epoch 1 holding offsets [0, hw).
type fakeLog struct{ hw int64 }

func (fakeLog) LeaderEpoch() int32             { return 1 }
func (l fakeLog) Bounds() (logStart, hw int64) { return 0, l.hw }

// readAll covers every offset up to the high watermark with one fake batch.
func readAll(hw int64) func(int64) (Batches, error) {
	return func(int64) (Batches, error) { return Batches{Records: []byte{1}, Next: hw}, nil }
}

// TestAdminStateEpoch: AlterOffsets and DeleteOffsets start a new state epoch, which
// (1) wins on replay over a write of a leader still holding the earlier state in
// memory, and (2) is what that leader uses once a member opens a share session on the
// partition. Also the redelivery count and in-flight stats the metrics export.
func TestAdminStateEpoch(t *testing.T) {
	ctx := context.Background()
	store := NewMemStore()
	now := time.Unix(1000, 0)
	m := NewManager(ManagerConfig{
		Store: store,
		Limits: func(string) Limits {
			return Limits{LockDuration: 10 * time.Second, DeliveryLimit: 5, MaxInFlight: 1000}
		},
		AutoOffsetReset: func(string) string { return "earliest" },
		Now:             func() time.Time { return now },
	})
	k := Key{Group: "g", TopicID: [16]byte{7}, Partition: 0}
	pid := []PartitionID{{TopicID: k.TopicID, Partition: 0}}
	log := fakeLog{hw: 100}
	acquire := func(member string, max int) []AcquiredRange {
		t.Helper()
		_, rs, err := m.Acquire(ctx, k, log, member, max, readAll(log.hw))
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	stored := func() Snapshot {
		t.Helper()
		s, ok, _ := store.Read(ctx, k)
		if !ok {
			t.Fatal("no snapshot stored")
		}
		return s
	}

	m.OpenSession(SessionKey{Group: "g", Member: "a"}, pid)
	if rs := acquire("a", 10); len(rs) != 1 || rs[0].First != 0 || rs[0].Last != 9 {
		t.Fatalf("first acquisition %+v, want 0-9", rs)
	}
	if err := m.Acknowledge(ctx, k, log, "a", []AckBatch{{First: 0, Last: 4, Types: []AckType{AckAccept}}}); err != nil {
		t.Fatal(err)
	}
	if s := stored(); s.Start != 5 {
		t.Fatalf("after accepting 0-4: stored start %d, want 5", s.Start)
	}

	// An admin request moves the start to 50 while the leader still holds 5-9.
	if err := AlterOffsets(ctx, store, "g", map[Key]int64{k: 50}, now, nil); err != nil {
		t.Fatal(err)
	}
	if err := m.Acknowledge(ctx, k, log, "a", []AckBatch{{First: 5, Last: 9, Types: []AckType{AckAccept}}}); err != nil {
		t.Fatal(err)
	}
	if s := stored(); s.Start != 50 || s.StateEpoch != 1 {
		t.Fatalf("a stale leader's write replaced the altered state: stored %+v, want start 50 in state epoch 1", s)
	}

	// A member opening a session makes the leader check the Store: it resumes at 50.
	m.OpenSession(SessionKey{Group: "g", Member: "b"}, pid)
	if rs := acquire("b", 2); len(rs) != 1 || rs[0].First != 50 || rs[0].Last != 51 {
		t.Fatalf("after alter to 50 and a new session: acquired %+v, want 50-51", rs)
	}
	// Released and acquired again: a redelivery of 2 records.
	if err := m.Acknowledge(ctx, k, log, "b", []AckBatch{{First: 50, Last: 51, Types: []AckType{AckRelease}}}); err != nil {
		t.Fatal(err)
	}
	if rs := acquire("b", 3); len(rs) != 2 || rs[0].DeliveryCount != 2 || rs[1].First != 52 {
		t.Fatalf("reacquired %+v, want 50-51 at delivery 2 then 52", rs)
	}
	stats, again := m.Stats()
	if again["g"] != 2 || len(stats) != 1 || stats[0].Acquired != 3 || stats[0].Key != k {
		t.Fatalf("stats %+v redelivered %v, want 3 acquired of %v and 2 redelivered", stats, again, k)
	}
	if s := stored(); s.StateEpoch != 1 || s.Start != 50 || s.LeaderEpoch != 1 {
		t.Fatalf("after the release: stored %+v, want the leader's write in state epoch 1", s)
	}

	// DeleteOffsets: the next session starts again from share.auto.offset.reset
	// (earliest), in the deletion's state epoch.
	if err := DeleteOffsets(ctx, store, "g", []Key{k}, now, nil); err != nil {
		t.Fatal(err)
	}
	if offs, err := Offsets(ctx, store, "g"); err != nil || len(offs) != 0 {
		t.Fatalf("offsets after delete: %v %v, want none", offs, err)
	}
	m.OpenSession(SessionKey{Group: "g", Member: "c"}, pid)
	if rs := acquire("c", 1); len(rs) != 1 || rs[0].First != 0 || rs[0].DeliveryCount != 1 {
		t.Fatalf("after delete: acquired %+v, want offset 0 at delivery 1", rs)
	}
	if s := stored(); s.StateEpoch != 2 || s.Deleted || s.Start != 0 {
		t.Fatalf("after delete and reload: stored %+v, want a live state at 0 in state epoch 2", s)
	}
}

// failingStore is a MemStore whose writes (and, with failReads, reads) fail.
type failingStore struct {
	*MemStore
	failReads bool
}

var errDisk = errors.New("disk on fire")

func (f failingStore) Write(context.Context, Key, Snapshot) error { return errDisk }
func (f failingStore) Read(ctx context.Context, k Key) (Snapshot, bool, error) {
	if f.failReads {
		return Snapshot{}, false, errDisk
	}
	return f.MemStore.Read(ctx, k)
}

// TestStoreErrorsNameTopic: a failure of the Store is ErrStore, naming the group and
// the topic partition: by the caller's topic name when it has one, else by topic id.
func TestStoreErrorsNameTopic(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1000, 0)
	k := Key{Group: "g", TopicID: [16]byte{7}, Partition: 3}
	const id = "BwAAAAAAAAAAAAAAAAAAAA" // k.TopicID in Kafka's base64 form
	named := func([16]byte) string { return "orders" }
	check := func(what string, err error, want ...string) {
		t.Helper()
		if !errors.Is(err, ErrStore) {
			t.Fatalf("%s: %v, want ErrStore", what, err)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not name %q", what, err, w)
			}
		}
	}
	store := failingStore{MemStore: NewMemStore()}
	check("AlterOffsets", AlterOffsets(ctx, store, "g", map[Key]int64{k: 5}, now, named), "share group g", "orders-3", "offset 5", "disk on fire")
	check("AlterOffsets without names", AlterOffsets(ctx, store, "g", map[Key]int64{k: 5}, now, nil), "topic id "+id+" partition 3")
	check("DeleteOffsets", DeleteOffsets(ctx, store, "g", []Key{k}, now, named), "share group g", "orders-3")

	m := NewManager(ManagerConfig{
		Store:           store,
		Limits:          func(string) Limits { return Limits{LockDuration: time.Second, DeliveryLimit: 5, MaxInFlight: 100} },
		AutoOffsetReset: func(string) string { return "earliest" },
	})
	_, _, err := m.Acquire(ctx, k, fakeLog{hw: 10}, "a", 10, readAll(10))
	check("initializing", err, "share group g", "topic id "+id+" partition 3", "at offset 0")
	m = NewManager(ManagerConfig{Store: failingStore{MemStore: NewMemStore(), failReads: true}, Limits: m.cfg.Limits})
	_, _, err = m.Acquire(ctx, k, fakeLog{hw: 10}, "a", 10, readAll(10))
	check("loading", err, "loading share group g", "topic id "+id+" partition 3")
}
