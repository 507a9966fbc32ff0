package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/clustertest"
	"github.com/runnel-io/runnel/mirror"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestMirrorFailoverAndTranslateCommands mirrors a topic whose source offsets have
// gaps (an aborted transaction) with a group's commit in the middle, then, with the
// mirror stopped, runs `runnel mirror translate` and `runnel mirror failover` against
// the target alone: translate prints the exact target offset, failover prints each
// partition's old and new offset, and a consumer of the group with a default franz-go
// client resumes on the target at exactly the record after the source commit.
func TestMirrorFailoverAndTranslateCommands(t *testing.T) {
	src, tgt := clustertest.StartOne(t), clustertest.StartOne(t)
	ctx := ctxTimeout(t, 90*time.Second)
	sadm := kadm.NewClient(newProducer(t, src))
	_, err := sadm.CreateTopic(ctx, 2, -1, nil, "pay")
	if err != nil {
		t.Fatalf("create topic: %v", err)
	}
	pcl := newProducer(t, src, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produce := func(from, n int) {
		var rs []*kgo.Record
		for i := from; i < from+n; i++ {
			rs = append(rs, &kgo.Record{Topic: "pay", Partition: int32(i % 2), Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("v%d", i))})
		}
		if err := pcl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	produce(0, 40)
	// An aborted transaction: source offsets 20..24 of each partition and a marker
	// are gaps, so source and target offsets differ after them.
	txn := newProducer(t, src, kgo.TransactionalID("aborter"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 2; p++ {
		for range 5 {
			if err := txn.ProduceSync(ctx, &kgo.Record{Topic: "pay", Partition: p, Value: []byte("aborted")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := txn.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	produce(40, 40)
	// The group has consumed 30 records of each partition: it commits the source
	// offset of the 31st.
	var srcRecs [2][]*kgo.Record
	rd := newProducer(t, src, kgo.ConsumeTopics("pay"), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	for len(srcRecs[0])+len(srcRecs[1]) < 80 {
		fs := rd.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of 80 source records", len(srcRecs[0])+len(srcRecs[1]))
		}
		fs.EachRecord(func(r *kgo.Record) { srcRecs[r.Partition] = append(srcRecs[r.Partition], r) })
	}
	var commit kadm.Offsets
	for p := range srcRecs {
		commit.Add(kadm.Offset{Topic: "pay", Partition: int32(p), At: srcRecs[p][30].Offset, LeaderEpoch: -1})
	}
	if _, err := sadm.CommitOffsets(ctx, "billing", commit); err != nil {
		t.Fatalf("commit on the source: %v", err)
	}
	if srcRecs[0][30].Offset == 30 {
		t.Fatalf("source offset of record 30 is 30: the aborted transaction left no gap")
	}

	// The mirror runs until both partitions' checkpoints of the group are on the target.
	m, err := mirror.New(mirror.Config{Name: "dr", Source: []string{src}, Target: []string{tgt}, SourceAlias: "east",
		Groups: []string{"billing"}, GroupSyncInterval: 200 * time.Millisecond, TopicRefresh: 300 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	mctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- m.Run(mctx) }()
	eventually(t, 60*time.Second, func() error {
		p, err := mirror.ReadProgress(ctx, []string{tgt}, nil, "dr")
		if err != nil {
			return err
		}
		return errIf(len(p.Checkpoint["billing"]) != 2, "%d of 2 checkpoints of group billing on the target", len(p.Checkpoint["billing"]))
	})
	stop()
	if err := <-done; err != nil {
		t.Fatalf("mirror: %v", err)
	}

	// The target offsets of the mirrored records, by key.
	tgtOff := map[string]int64{}
	tr := newProducer(t, tgt, kgo.ConsumeTopics("east.pay"), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	for len(tgtOff) < 80 {
		fs := tr.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of 80 target records", len(tgtOff))
		}
		fs.EachRecord(func(r *kgo.Record) { tgtOff[string(r.Key)] = r.Offset })
	}

	for p := range srcRecs {
		r := srcRecs[p][30]
		out := mustRun(t, "", "mirror", "translate", "--target", tgt, "--name", "dr", "--topic", "pay",
			"--partition", fmt.Sprint(p), "--offset", fmt.Sprint(r.Offset)).stdout
		if want := fmt.Sprintf("east.pay %d %d\n", p, tgtOff[string(r.Key)]); out != want {
			t.Fatalf("translate pay/%d offset %d: %q, want %q", p, r.Offset, out, want)
		}
	}

	dry := mustRun(t, "", "mirror", "failover", "--target", tgt, "--name", "dr", "--group", "billing", "--dry-run").stdout
	if !strings.Contains(dry, "(dry run: nothing committed)") {
		t.Fatalf("dry run output %q does not say nothing was committed", dry)
	}
	var moves []failoverRow
	if err := json.Unmarshal([]byte(mustRun(t, "", "mirror", "failover", "--target", tgt, "--name", "dr", "--group", "billing", "--json").stdout), &moves); err != nil {
		t.Fatal(err)
	}
	if len(moves) != 2 {
		t.Fatalf("failover moved %d partitions, want 2: %+v", len(moves), moves)
	}
	for _, mv := range moves {
		want := tgtOff[string(srcRecs[mv.Partition][30].Key)]
		if mv.Group != "billing" || mv.Topic != "east.pay" || mv.Old != -1 || mv.New != want {
			t.Fatalf("failover row %+v: want billing east.pay/%d from -1 (none) to %d", mv, mv.Partition, want)
		}
		if !strings.Contains(strings.Join(strings.Fields(dry), " "), fmt.Sprintf("billing east.pay %d - %d", mv.Partition, want)) {
			t.Fatalf("dry run output %q lacks partition %d's old (-) and new (%d) offsets", dry, mv.Partition, want)
		}
	}

	// A consumer of the group with a default client resumes right after the commit.
	cl := newProducer(t, tgt, kgo.ConsumerGroup("billing"), kgo.ConsumeTopics("east.pay"))
	first := map[int32]*kgo.Record{}
	for len(first) < 2 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("the group's consumer got records of %d of 2 partitions", len(first))
		}
		fs.EachRecord(func(r *kgo.Record) {
			if first[r.Partition] == nil {
				first[r.Partition] = r
			}
		})
	}
	for p, r := range first {
		if want := srcRecs[p][30]; string(r.Key) != string(want.Key) || string(r.Value) != string(want.Value) {
			t.Fatalf("partition %d: the group resumed at %s=%s, want %s=%s (the record after the source commit)", p, r.Key, r.Value, want.Key, want.Value)
		}
	}
}

// TestMirrorRunRefusesUnsafeOptions: the overload choices that would drop or fail a
// mirror's own records, and an inconsistent security flag, fail at start-up with a
// message naming the flag and why, before anything connects.
func TestMirrorRunRefusesUnsafeOptions(t *testing.T) {
	base := []string{"mirror", "run", "--source", "127.0.0.1:1", "--target", "127.0.0.1:2", "--name", "dr"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--on-full", "drop"}, "--on-full drop is refused: an exactly-once mirror never drops a record"},
		{[]string{"--on-full", "error"}, "--on-full error is refused"},
		// The per-side security flags work now; a bad one still fails before
		// anything connects (TestMirrorSideProperties has the rest).
		{[]string{"--target-X", "sasl.mechanism=PLAIN"}, "--target-X sasl.mechanism is set but security.protocol is plaintext"},
	} {
		r := run(t, "", append(base, c.args...)...)
		if r.code == 0 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("runnel %s: exit %d, stderr %q; want a failure saying %q", strings.Join(c.args, " "), r.code, r.stderr, c.want)
		}
	}
}
