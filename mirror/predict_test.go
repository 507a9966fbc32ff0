package mirror_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/clustertest"
	"github.com/runnel-io/runnel/internal/testutil"
	"github.com/runnel-io/runnel/mirror"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestMirrorPredictedOffsets checks the one-round-trip commit (commitPredicted):
// once a partition's transactions have placed records, the next transaction writes
// its records and its state (offset map, target end) together, built on where the
// records are expected to land. With identity naming a local producer on the target
// writes into the same partition between two copies, so the next prediction misses:
// that transaction must be aborted and written again, and in the end the target holds
// each source record once, in order, and the offset map translates every source
// offset to the target offset of that record (a state committed on a wrong
// prediction would map source offsets to the local records).
func TestMirrorPredictedOffsets(t *testing.T) {
	t.Parallel()
	src, tgt := startRunnel(t), startRunnel(t)
	createTopic(t, src, "orders", 1, nil)
	createTopic(t, tgt, "orders", 1, nil)
	logs := &clustertest.LockedBuffer{}
	m, _ := runMirror(t, mirror.Config{Name: "dr", Source: []string{src}, Target: []string{tgt}, Naming: mirror.Identity,
		Logger: slog.New(slog.NewTextHandler(logs, nil)), TopicRefresh: 300 * time.Millisecond})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("mirror log:\n%s", logs)
		}
	})
	pcl := newClient(t, src, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	tcl := newClient(t, tgt, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var want []*kgo.Record
	local := 0
	for round := range 6 {
		if round == 4 {
			// A record of the target's own between two copies: the next copy's
			// records land one offset later than predicted.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			testutil.NoError(t, tcl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: 0, Value: []byte("local")}).FirstErr(), "local write on the target")
			cancel()
			local++
		}
		want = append(want, produceN(t, pcl, "orders", 1, round*50, 50)...)
		waitCaughtUp(t, m)
	}
	predicted, missed, _, ok := m.WorkerCounts(mirror.TopicPartition{"orders", 0})
	if !ok {
		t.Fatal("the mirror does not own orders/0")
	}
	t.Logf("%d transactions written with predicted offsets, %d predictions missed", predicted, missed)
	if predicted == 0 {
		t.Fatal("no transaction was written with predicted offsets")
	}
	testutil.Equal(t, missed, int64(1), "missed predictions (one local write)")
	if !strings.Contains(logs.String(), "target offsets not as predicted") {
		t.Fatal("the missed prediction was not logged")
	}

	all := readAll(t, tgt, "orders", len(want)+local, 20*time.Second)
	var mirrored []*kgo.Record
	for _, r := range all[0] {
		if !mirror.HasBeenOn(r, m.SourceID()) {
			continue // the local record
		}
		mirrored = append(mirrored, r)
	}
	checkSame(t, want, map[int32][]*kgo.Record{0: mirrored})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := mirror.ReadProgress(ctx, []string{tgt}, nil, "dr")
	testutil.NoError(t, err, "read progress")
	for i, r := range mirrored {
		got, _, err := p.Translate(mirror.TopicPartition{"orders", 0}, int64(i))
		testutil.NoError(t, err, "translate")
		if got != r.Offset {
			t.Fatalf("source offset %d translates to target offset %d, but that record is at %d", i, got, r.Offset)
		}
	}
}
