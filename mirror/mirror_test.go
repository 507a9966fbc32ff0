package mirror_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/testutil"
	"github.com/runnel-io/runnel/mirror"
	"github.com/twmb/franz-go/pkg/kgo"
)

// produceN produces n records to topic over its partitions, with keys, headers,
// explicit old timestamps and some null values, and returns them as acknowledged.
func produceN(t *testing.T, cl *kgo.Client, topic string, partitions int32, from, n int) []*kgo.Record {
	t.Helper()
	base := time.UnixMilli(1_600_000_000_000)
	var rs []*kgo.Record
	for i := from; i < from+n; i++ {
		r := &kgo.Record{Topic: topic, Partition: int32(i) % partitions, Key: []byte(fmt.Sprintf("k%d", i)),
			Value: []byte(fmt.Sprintf("v%d", i)), Timestamp: base.Add(time.Duration(i) * time.Millisecond),
			Headers: []kgo.RecordHeader{{Key: "h", Value: []byte(fmt.Sprint(i))}}}
		if i%97 == 0 {
			r.Value = nil // a tombstone stays a tombstone
		}
		rs = append(rs, r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	return rs
}

// TestMirrorToKfake mirrors a Runnel topic into franz-go's kfake (a different
// Kafka implementation, with transactions) and back out of it: every record arrives
// once with its partition, key, value, headers and timestamp, in order; records of
// an aborted source transaction never arrive; and the offset map translates exactly
// across the gaps the transaction markers and aborted records leave.
func TestMirrorToKfake(t *testing.T) {
	t.Parallel()
	src := startRunnel(t)
	tgt := startKfake(t)
	createTopic(t, src, "orders", 3, nil)
	pcl := newClient(t, src, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	want := produceN(t, pcl, "orders", 3, 0, 300)
	abortedTxn(t, src, "orders", 3)
	want = append(want, produceN(t, pcl, "orders", 3, 300, 300)...)

	m, _ := runMirror(t, mirror.Config{Name: "dr", Source: []string{src}, Target: strings.Split(tgt, ","),
		SourceAlias: "east", TopicRefresh: 500 * time.Millisecond})
	got := readAll(t, tgt, "east.orders", len(want), 60*time.Second)
	checkSame(t, want, got)

	// Every source offset translates to the target offset of the first mirrored
	// record at or after it.
	testutil.Eventually(t, 20*time.Second, func() error {
		for _, s := range m.Status(time.Now()) {
			if s.LagRecords != 0 {
				return fmt.Errorf("%s/%d lag %d", s.Topic, s.Partition, s.LagRecords)
			}
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := mirror.ReadProgress(ctx, strings.Split(tgt, ","), nil, "dr")
	testutil.NoError(t, err, "read progress")
	srcRecs := readAll(t, src, "orders", len(want), 10*time.Second)
	for part, rs := range srcRecs {
		tp := mirror.TopicPartition{"orders", part}
		for i, r := range rs {
			o, _, err := p.Translate(tp, r.Offset)
			testutil.NoError(t, err, "translate")
			testutil.Equal(t, o, got[part][i].Offset, fmt.Sprintf("%s offset %d", tp, r.Offset))
			if i > 0 && r.Offset > rs[i-1].Offset+1 { // a gap: inside it maps forward
				o, _, _ := p.Translate(tp, r.Offset-1)
				testutil.Equal(t, o, got[part][i].Offset, fmt.Sprintf("%s gap offset %d", tp, r.Offset-1))
			}
		}
	}
}

// abortedTxn writes and aborts a transaction on every partition of topic.
func abortedTxn(t *testing.T, addr, topic string, partitions int32) {
	t.Helper()
	cl := newClient(t, addr, kgo.TransactionalID("aborter"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	testutil.NoError(t, cl.BeginTransaction(), "begin")
	for p := int32(0); p < partitions; p++ {
		for i := 0; i < 5; i++ {
			testutil.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte("aborted")}).FirstErr(), "produce aborted")
		}
	}
	testutil.NoError(t, cl.EndTransaction(ctx, kgo.TryAbort), "abort")
}

// checkSame compares the mirrored records with the source's, partition by partition.
func checkSame(t *testing.T, want []*kgo.Record, got map[int32][]*kgo.Record) {
	t.Helper()
	byPart := map[int32][]*kgo.Record{}
	for _, r := range want {
		byPart[r.Partition] = append(byPart[r.Partition], r)
	}
	for p, ws := range byPart {
		gs := got[p]
		if len(gs) != len(ws) {
			t.Fatalf("partition %d: %d records on the target, want %d", p, len(gs), len(ws))
		}
		for i := range ws {
			if err := sameRecord(ws[i], gs[i]); err != nil {
				t.Fatalf("partition %d record %d: %v", p, i, err)
			}
		}
	}
}
