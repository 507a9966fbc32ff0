package mirror_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/testutil"
	"github.com/runnel-io/runnel/mirror"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestMirrorActiveActiveIdentity runs two mirrors in opposite directions with
// identity naming between two Runnel clusters, producing on both: each cluster ends
// with each record exactly once, and the loop counters show the records stopped.
func TestMirrorActiveActiveIdentity(t *testing.T) {
	t.Parallel()
	a, b := startRunnel(t), startRunnel(t)
	createTopic(t, a, "events", 2, nil)
	createTopic(t, b, "events", 2, nil)
	pa := newClient(t, a, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	pb := newClient(t, b, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceN(t, pa, "events", 2, 0, 200)
	produceN(t, pb, "events", 2, 1000, 200)
	cfg := func(name, src, tgt string) mirror.Config {
		return mirror.Config{Name: name, Source: []string{src}, Target: []string{tgt}, Naming: mirror.Identity, TopicRefresh: 500 * time.Millisecond}
	}
	ab, _ := runMirror(t, cfg("a-to-b", a, b))
	ba, _ := runMirror(t, cfg("b-to-a", b, a))
	produceN(t, pa, "events", 2, 200, 100)
	produceN(t, pb, "events", 2, 1200, 100)
	waitCaughtUp(t, ab, ba)
	for _, addr := range []string{a, b} {
		got := readAll(t, addr, "events", 600, 20*time.Second)
		seen := map[string]int{}
		for _, rs := range got {
			for _, r := range rs {
				seen[string(r.Key)]++
			}
		}
		testutil.Equal(t, len(seen), 600, "distinct records on "+addr)
		for k, n := range seen {
			if n != 1 {
				t.Fatalf("cluster %s holds record %s %d times", addr, k, n)
			}
		}
	}
	// Each record comes back once, and is stopped there.
	testutil.Eventually(t, 20*time.Second, func() error {
		var loops int64
		for _, s := range append(ab.Status(time.Now()), ba.Status(time.Now())...) {
			loops += s.Loops
		}
		if loops != 600 {
			return fmt.Errorf("loop records stopped: %d, want 600", loops)
		}
		return nil
	})
}

// waitCaughtUp waits until every partition of every mirror has no lag.
func waitCaughtUp(t *testing.T, ms ...*mirror.Mirror) {
	t.Helper()
	testutil.Eventually(t, 60*time.Second, func() error {
		for _, m := range ms {
			st := m.Status(time.Now())
			if len(st) == 0 {
				return fmt.Errorf("mirror %s owns no partition yet", m.Name())
			}
			for _, s := range st {
				if s.LagRecords != 0 || s.State != "running" {
					return fmt.Errorf("mirror %s %s/%d: lag %d state %s %s", m.Name(), s.Topic, s.Partition, s.LagRecords, s.State, s.Error)
				}
			}
		}
		return nil
	})
}

// TestMirrorGroupFailover commits a source group's offset in the middle of a
// partition, lets the mirror sync it, fails the group over with the target alone,
// and checks that a consumer of the group on the target starts at the very record
// after the source commit.
func TestMirrorGroupFailover(t *testing.T) {
	t.Parallel()
	src, tgt := startRunnel(t), startRunnel(t)
	createTopic(t, src, "pay", 2, nil)
	pcl := newClient(t, src, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceN(t, pcl, "pay", 2, 0, 100)
	abortedTxn(t, src, "pay", 2) // gaps on the source, so offsets differ on the target
	want := produceN(t, pcl, "pay", 2, 100, 100)

	// The group reads 40 records of each partition (past the gap) and commits.
	srcRecs := readAll(t, src, "pay", 200, 10*time.Second)
	adm := kadm.NewClient(newClient(t, src))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var commit kadm.Offsets
	for p, rs := range srcRecs {
		commit.Add(kadm.Offset{Topic: "pay", Partition: p, At: rs[60].Offset, LeaderEpoch: -1})
	}
	_, err := adm.CommitOffsets(ctx, "billing", commit)
	testutil.NoError(t, err, "commit on the source")

	m, stop := runMirror(t, mirror.Config{Name: "dr", Source: []string{src}, Target: []string{tgt}, SourceAlias: "east",
		Groups: []string{"bill.*"}, GroupSyncInterval: 300 * time.Millisecond, TopicRefresh: 500 * time.Millisecond})
	waitCaughtUp(t, m)
	testutil.Eventually(t, 20*time.Second, func() error {
		p, err := mirror.ReadProgress(ctx, []string{tgt}, nil, "dr")
		if err != nil {
			return err
		}
		if n := len(p.Checkpoint["billing"]); n != 2 {
			return fmt.Errorf("%d checkpoints of group billing, want 2", n)
		}
		return nil
	})
	stop() // the source side may now be gone: failover reads the target only
	p, err := mirror.ReadProgress(ctx, []string{tgt}, nil, "dr")
	testutil.NoError(t, err, "read progress")
	tadm := kadm.NewClient(newClient(t, tgt))
	moves, err := mirror.PlanCommit(ctx, tadm, "billing", p.Checkpoint["billing"], true)
	testutil.NoError(t, err, "plan")
	if len(moves) > 0 {
		testutil.NoError(t, mirror.ApplyMoves(ctx, tadm, "billing", moves), "apply")
	}
	// A consumer of the group on the target starts exactly after the source commit.
	cl := newClient(t, tgt, kgo.ConsumerGroup("billing"), kgo.ConsumeTopics("east.pay"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()))
	first := map[int32]*kgo.Record{}
	for len(first) < 2 && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			if first[r.Partition] == nil {
				first[r.Partition] = r
			}
		})
	}
	for part, r := range first {
		if err := sameRecord(srcRecs[part][60], r); err != nil {
			t.Fatalf("partition %d: the group resumed on the target at %s: %v", part, r.Key, err)
		}
	}
	_ = want
}

// TestMirrorSourceRetentionOverrun deletes source records the mirror had not
// copied yet (as retention would) and checks that the partition stops with an error
// naming the lost range, and that OnDataLossSkip goes on and counts.
func TestMirrorSourceRetentionOverrun(t *testing.T) {
	t.Parallel()
	src, tgt := startRunnel(t), startRunnel(t)
	createTopic(t, src, "logs", 1, nil)
	pcl := newClient(t, src, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceN(t, pcl, "logs", 1, 0, 50)
	cfg := mirror.Config{Name: "dr", Source: []string{src}, Target: []string{tgt}, SourceAlias: "east", TopicRefresh: 500 * time.Millisecond}
	m, stop := runMirror(t, cfg)
	waitCaughtUp(t, m)
	stop()
	produceN(t, pcl, "logs", 1, 50, 50)
	adm := kadm.NewClient(newClient(t, src))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var before kadm.Offsets
	before.Add(kadm.Offset{Topic: "logs", Partition: 0, At: 80})
	_, err := adm.DeleteRecords(ctx, before)
	testutil.NoError(t, err, "delete records")

	m, stop = runMirror(t, cfg)
	var msg string
	testutil.Eventually(t, 30*time.Second, func() error {
		for _, s := range m.Status(time.Now()) {
			if s.State == "error" {
				msg = s.Error
				return nil
			}
		}
		return fmt.Errorf("no partition in error: %+v", m.Status(time.Now()))
	})
	if !strings.Contains(msg, "logs/0 offsets 50 to 79 were deleted") {
		t.Fatalf("error %q does not name the lost range logs/0 50 to 79", msg)
	}
	stop()
	cfg.OnDataLoss = mirror.OnDataLossSkip
	m, _ = runMirror(t, cfg)
	waitCaughtUp(t, m)
	st := m.Status(time.Now())
	testutil.Equal(t, st[0].Skipped, int64(30), "skipped offsets")
	testutil.Equal(t, st[0].Records, int64(70), "records mirrored")
}

// TestMirrorFencedOwnerStops initialises a partition's transactional id from
// outside, as a new owner does, while the mirror owns the partition: its next
// transaction fails as fenced, nothing it produced after that reaches the target,
// and it stops the partition instead of fencing back.
func TestMirrorFencedOwnerStops(t *testing.T) {
	t.Parallel()
	src, tgt := startKfake(t), startRunnel(t)
	createTopic(t, src, "t", 1, nil)
	pcl := newClient(t, src, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceN(t, pcl, "t", 1, 0, 10)
	m, _ := runMirror(t, mirror.Config{Name: "dr", Source: strings.Split(src, ","), Target: []string{tgt}, SourceAlias: "east",
		Heartbeat: 200 * time.Millisecond})
	waitCaughtUp(t, m)
	// The new owner: InitProducerID with the same transactional id.
	owner := newClient(t, tgt, kgo.TransactionalID(mirror.TransactionalID("dr", "t", 0)), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	testutil.NoError(t, owner.BeginTransaction(), "begin")
	testutil.NoError(t, owner.ProduceSync(ctx, &kgo.Record{Topic: mirror.ProgressTopic("dr"), Key: []byte("x")}).FirstErr(), "fence")
	testutil.NoError(t, owner.EndTransaction(ctx, kgo.TryAbort), "abort")
	produceN(t, pcl, "t", 1, 10, 10)
	testutil.Eventually(t, 20*time.Second, func() error {
		st := m.Status(time.Now())
		if len(st) != 1 || st[0].State != "stopped" || !strings.Contains(st[0].Error, "fenced") {
			return fmt.Errorf("partition not stopped as fenced: %+v", st)
		}
		return nil
	})
	time.Sleep(time.Second) // the stopped worker must stay stopped
	testutil.Equal(t, len(readAll(t, tgt, "east.t", 10, 10*time.Second)[0]), 10, "records on the target")
	if st := m.Status(time.Now()); st[0].State != "stopped" {
		t.Fatalf("the fenced partition came back: %+v", st[0])
	}
}
