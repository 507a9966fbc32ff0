package interop_test

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/log/logtest"
	"github.com/runnel-io/runnel/internal/testutil"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestFranz drives one node with franz-go's producer and consumer. Auto-creation is
// off on this node, so every subtest creates its topics (and the missing-topic subtest
// can see UNKNOWN_TOPIC_OR_PARTITION).
func TestFranz(t *testing.T) {
	n := startNode(t, "auto.create.topics.enable=false")
	addr := bootstrap(n)
	t.Run("ProduceConsumeAcksAllIdempotent", func(t *testing.T) {
		t.Parallel()
		testProduceConsume(t, addr, kgo.AllISRAcks(), true)
	})
	t.Run("ProduceConsumeAcksAllNotIdempotent", func(t *testing.T) {
		t.Parallel()
		testProduceConsume(t, addr, kgo.AllISRAcks(), false)
	})
	t.Run("ProduceConsumeAcks1", func(t *testing.T) {
		t.Parallel()
		testProduceConsume(t, addr, kgo.LeaderAck(), false)
	})
	t.Run("ProduceConsumeAcks0", func(t *testing.T) {
		t.Parallel()
		testProduceConsume(t, addr, kgo.NoAck(), false)
	})
	t.Run("Seek", func(t *testing.T) { t.Parallel(); testSeek(t, addr) })
	t.Run("ListOffsetsByTimestamp", func(t *testing.T) { t.Parallel(); testListOffsetsByTimestamp(t, addr) })
	t.Run("Compression", func(t *testing.T) { t.Parallel(); testCompression(t, addr) })
	t.Run("LargeRecords", func(t *testing.T) { t.Parallel(); testLargeRecords(t, addr) })
	t.Run("TopicMaxMessageBytes", func(t *testing.T) { t.Parallel(); testTopicMaxMessageBytes(t, addr) })
	t.Run("FetchOutOfRange", func(t *testing.T) { t.Parallel(); testFetchOutOfRange(t, addr) })
	t.Run("MissingTopic", func(t *testing.T) { t.Parallel(); testMissingTopic(t, addr) })
	t.Run("IdempotentProduce", func(t *testing.T) { t.Parallel(); testIdempotentProduce(t, addr) })
	t.Run("LogAppendTime", func(t *testing.T) { t.Parallel(); testLogAppendTime(t, addr) })
}

// makeRecords returns n records for topic with keys from a set of ten (so the key
// partitioner spreads them), distinct values, two headers and distinct timestamps.
func makeRecords(topic string, n int, base time.Time) []*kgo.Record {
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{
			Topic: topic,
			Key:   fmt.Appendf(nil, "key-%d", i%10),
			Value: fmt.Appendf(nil, "value-%d-%s", i, bytes.Repeat([]byte{'x'}, i%50)),
			Headers: []kgo.RecordHeader{
				{Key: "i", Value: fmt.Appendf(nil, "%d", i)},
				{Key: "empty", Value: []byte{}},
			},
			Timestamp: base.Add(time.Duration(i) * time.Millisecond),
		}
	}
	return recs
}

// produceAll produces recs in order on cl and waits for every acknowledgement; kgo
// fills in each record's partition and offset.
func produceAll(t *testing.T, cl *kgo.Client, recs []*kgo.Record) {
	t.Helper()
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	ctx := ctxT(t)
	for _, r := range recs {
		wg.Add(1)
		cl.Produce(ctx, r, func(r *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("record %q: %w", r.Value, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	testutil.NoError(t, errors.Join(errs...), "producing %d records", len(recs))
}

// byPartition groups recs by partition, keeping their order.
func byPartition(recs []*kgo.Record) map[int32][]*kgo.Record {
	m := map[int32][]*kgo.Record{}
	for _, r := range recs {
		m[r.Partition] = append(m[r.Partition], r)
	}
	return m
}

// sameRecord fails unless got carries want's key, value, headers and timestamp.
func sameRecord(t *testing.T, got, want *kgo.Record) {
	t.Helper()
	where := fmt.Sprintf("%s[%d]@%d", got.Topic, got.Partition, got.Offset)
	testutil.Equal(t, string(got.Key), string(want.Key), "%s key", where)
	testutil.Equal(t, string(got.Value), string(want.Value), "%s value", where)
	testutil.Equal(t, len(got.Headers), len(want.Headers), "%s header count", where)
	for i := range want.Headers {
		testutil.Equal(t, got.Headers[i].Key, want.Headers[i].Key, "%s header %d key", where, i)
		testutil.Equal(t, string(got.Headers[i].Value), string(want.Headers[i].Value), "%s header %d value", where, i)
	}
	testutil.Equal(t, got.Timestamp.UnixMilli(), want.Timestamp.UnixMilli(), "%s timestamp", where)
}

// testProduceConsume produces 300 records to 3 partitions with the given acks and
// consumes them back: every record, in per-partition produce order, offsets 0, 1, ...
func testProduceConsume(t *testing.T, addr string, acks kgo.Acks, idempotent bool) {
	topic := topicName(t)
	createTopic(t, newAdmin(t, addr), topic, 3)
	opts := []kgo.Opt{kgo.RequiredAcks(acks), kgo.ProducerLinger(5 * time.Millisecond)}
	if !idempotent {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	cl := newClient(t, addr, opts...)
	recs := makeRecords(topic, 300, time.Now().Add(-time.Hour))
	produceAll(t, cl, recs)
	want := byPartition(recs)
	testutil.Equal(t, len(want), 3, "partitions the key partitioner used")
	if acks != kgo.NoAck() {
		checkContiguous(t, want, 0) // the acknowledged offsets
	}
	wantCounts := map[int32]int{}
	for p, rs := range want {
		wantCounts[p] = len(rs)
	}
	got := consumePartitions(t, addr, topic, wantCounts)
	checkContiguous(t, got, 0)
	for p, rs := range want {
		for i, r := range rs {
			sameRecord(t, got[p][i], r)
		}
	}
	ends := endOffsets(t, newAdmin(t, addr), topic)
	for p, n := range wantCounts {
		testutil.Equal(t, ends[p], int64(n), "end offset of partition %d", p)
	}
}

// produceValues produces one record per value to partition 0 of topic, in order, each
// in its own batch, and fails unless they get offsets first, first+1, ...
func produceValues(t *testing.T, cl *kgo.Client, topic string, first int64, values ...string) {
	t.Helper()
	for i, v := range values {
		r := &kgo.Record{Topic: topic, Partition: 0, Value: []byte(v)}
		testutil.NoError(t, cl.ProduceSync(ctxT(t), r).FirstErr(), "producing %q", v)
		testutil.Equal(t, r.Offset, first+int64(i), "offset of %q", v)
	}
}

// pollValues consumes from cl until it has n records and returns "offset=value" for
// each.
func pollValues(t *testing.T, cl *kgo.Client, n int) []string {
	t.Helper()
	var out []string
	ctx := ctxT(t)
	for len(out) < n {
		fs := cl.PollRecords(ctx, n-len(out))
		if ctx.Err() != nil {
			t.Fatalf("got %d of %d records (%v) before the timeout", len(out), n, out)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("fetching %s[%d]: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) { out = append(out, fmt.Sprintf("%d=%s", r.Offset, r.Value)) })
	}
	return out
}

func testSeek(t *testing.T, addr string) {
	topic := topicName(t)
	createTopic(t, newAdmin(t, addr), topic, 1)
	prod := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var values []string
	for i := range 10 {
		values = append(values, fmt.Sprintf("v%d", i))
	}
	produceValues(t, prod, topic, 0, values...)
	consumer := func(o kgo.Offset) *kgo.Client {
		return newClient(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: o}}))
	}
	testutil.Equal(t, pollValues(t, consumer(kgo.NewOffset().At(4)), 6),
		[]string{"4=v4", "5=v5", "6=v6", "7=v7", "8=v8", "9=v9"}, "consuming from offset 4")
	testutil.Equal(t, pollValues(t, consumer(kgo.NewOffset().AtStart()), 2), []string{"0=v0", "1=v1"}, "consuming from the start")
	testutil.Equal(t, pollValues(t, consumer(kgo.NewOffset().AtEnd().Relative(-2)), 2), []string{"8=v8", "9=v9"}, "consuming from end-2")
	testutil.Equal(t, pollValues(t, consumer(kgo.NewOffset().At(9)), 1), []string{"9=v9"}, "consuming the last record")
	testConsumeFromEnd(t, prod, consumer(kgo.NewOffset().AtEnd()), topic, 10)
}

// testConsumeFromEnd checks that end, a consumer of topic[0] from the end (end0
// records), gets nothing old but a record produced after it found the end. It keeps
// producing until the consumer sees one, since when it looks the end up is its own
// business.
func testConsumeFromEnd(t *testing.T, prod, end *kgo.Client, topic string, end0 int64) {
	got := make(chan string, 1)
	pollCtx := ctxT(t)
	go func() {
		fs := end.PollRecords(pollCtx, 1)
		fs.EachRecord(func(r *kgo.Record) { got <- fmt.Sprintf("%d=%s", r.Offset, r.Value) })
		close(got)
	}()
	next := end0
	for deadline := time.Now().Add(testTimeout); ; next++ {
		produceValues(t, prod, topic, next, fmt.Sprintf("v%d", next))
		select {
		case s, ok := <-got:
			testutil.True(t, ok, "the consumer from the end got nothing")
			var off int64
			var v string
			_, err := fmt.Sscanf(s, "%d=%s", &off, &v)
			testutil.NoError(t, err, "parsing %q", s)
			testutil.True(t, off >= end0 && off <= next && v == fmt.Sprintf("v%d", off),
				"the consumer from the end got %q; want a record produced after it started (%d..%d)", s, end0, next)
			return
		case <-time.After(200 * time.Millisecond):
		}
		testutil.True(t, time.Now().Before(deadline), "the consumer from the end never got a new record")
	}
}

// testLogAppendTime: on a topic with message.timestamp.type=LogAppendTime the node
// stamps its own time on each batch, returns it in the produce response, and consumers
// see it instead of the producer's timestamp.
func testLogAppendTime(t *testing.T, addr string) {
	topic := topicName(t)
	createTopic(t, newAdmin(t, addr), topic, 1, "message.timestamp.type", "LogAppendTime")
	cl := newClient(t, addr)
	before := time.Now().Add(-time.Second).UnixMilli()
	pr := rawProduce(t, cl, topic, 0, -1, logtest.BatchWith(logtest.BatchOptions{Records: 2, Timestamp: 1_000_000}))
	after := time.Now().Add(time.Second).UnixMilli()
	testutil.Equal(t, pr.ErrorCode, int16(0), "produce error code")
	testutil.True(t, pr.LogAppendTime >= before && pr.LogAppendTime <= after, "LogAppendTime in the produce response is %d, want the node's clock (%d..%d)", pr.LogAppendTime, before, after)
	got := consumePartitions(t, addr, topic, map[int32]int{0: 2})[0]
	for _, r := range got {
		testutil.Equal(t, r.Attrs.TimestampType(), int8(1), "timestamp type of offset %d", r.Offset)
		testutil.Equal(t, r.Timestamp.UnixMilli(), pr.LogAppendTime, "timestamp of offset %d", r.Offset)
	}
}
