package interop_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/testutil"
	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
)

// TestKafkaGo drives one node with segmentio/kafka-go: topics created through
// kafka.Client, a Writer at RequireAll, Readers pinned to a partition and positioned
// with SetOffset, lag and offsets read back, and partition metadata from a Conn.
func TestKafkaGo(t *testing.T) {
	n := startNode(t)
	addr := bootstrap(n)
	t.Run("WriteRead", func(t *testing.T) { t.Parallel(); testKafkaGoWriteRead(t, addr) })
	t.Run("CreateTopics", func(t *testing.T) { t.Parallel(); testKafkaGoCreateTopics(t, addr) })
	t.Run("Compression", func(t *testing.T) { t.Parallel(); testKafkaGoCompression(t, addr) })
}

// kafkaGoCreate creates topic through kafka.Client and fails unless it was created.
func kafkaGoCreate(t *testing.T, addr, topic string, partitions int, configs ...kafka.ConfigEntry) {
	t.Helper()
	cl := &kafka.Client{Addr: kafka.TCP(addr), Timeout: testTimeout}
	resp, err := cl.CreateTopics(ctxT(t), &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{
		Topic: topic, NumPartitions: partitions, ReplicationFactor: 1, ConfigEntries: configs,
	}}})
	testutil.NoError(t, err, "CreateTopics")
	testutil.NoError(t, resp.Errors[topic], "creating %s", topic)
}

// ackLog collects the messages a Writer's Completion reports as written, with their
// partitions and offsets.
type ackLog struct {
	mu   sync.Mutex // guards msgs
	msgs []kafka.Message
}

func (a *ackLog) completion(msgs []kafka.Message, err error) {
	if err != nil {
		return // WriteMessages reports it
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.msgs = append(a.msgs, msgs...)
}

func (a *ackLog) all() []kafka.Message {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]kafka.Message(nil), a.msgs...)
}

// kafkaGoWriter returns a RequireAll writer for topic that records every
// acknowledged message in acked.
func kafkaGoWriter(t *testing.T, addr, topic string, balancer kafka.Balancer, acked *ackLog) *kafka.Writer {
	w := &kafka.Writer{
		Addr: kafka.TCP(addr), Topic: topic, Balancer: balancer, RequiredAcks: kafka.RequireAll,
		BatchTimeout: 5 * time.Millisecond, WriteTimeout: testTimeout, Completion: acked.completion,
	}
	t.Cleanup(func() { w.Close() })
	return w
}

func kafkaGoMessages(n int) []kafka.Message {
	base := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	msgs := make([]kafka.Message, n)
	for i := range msgs {
		msgs[i] = kafka.Message{
			Key:     fmt.Appendf(nil, "k%d", i%5),
			Value:   fmt.Appendf(nil, "kafka-go value %d", i),
			Headers: []kafka.Header{{Key: "n", Value: fmt.Appendf(nil, "%d", i)}},
			Time:    base.Add(time.Duration(i) * time.Millisecond),
		}
	}
	return msgs
}

// newReader returns a Reader of topic[partition] positioned at offset.
func newReader(t *testing.T, addr, topic string, partition int, offset int64) *kafka.Reader {
	t.Helper()
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{addr}, Topic: topic, Partition: partition,
		MinBytes: 1, MaxBytes: 10 << 20, MaxWait: 100 * time.Millisecond})
	t.Cleanup(func() { r.Close() })
	testutil.NoError(t, r.SetOffset(offset), "SetOffset(%d)", offset)
	return r
}

func sameKafkaGo(t *testing.T, got, want kafka.Message) {
	t.Helper()
	where := fmt.Sprintf("%s[%d]@%d", got.Topic, got.Partition, got.Offset)
	testutil.Equal(t, [2]int64{int64(got.Partition), got.Offset}, [2]int64{int64(want.Partition), want.Offset}, "%s partition and offset", where)
	testutil.Equal(t, [2]string{string(got.Key), string(got.Value)}, [2]string{string(want.Key), string(want.Value)}, "%s key and value", where)
	testutil.Equal(t, len(got.Headers), 1, "%s headers", where)
	testutil.Equal(t, [2]string{got.Headers[0].Key, string(got.Headers[0].Value)}, [2]string{want.Headers[0].Key, string(want.Headers[0].Value)}, "%s header", where)
	testutil.Equal(t, got.Time.UnixMilli(), want.Time.UnixMilli(), "%s timestamp", where)
}

func readKafkaGo(t *testing.T, r *kafka.Reader, n int) []kafka.Message {
	t.Helper()
	ctx := ctxT(t)
	out := make([]kafka.Message, 0, n)
	for range n {
		m, err := r.ReadMessage(ctx)
		testutil.NoError(t, err, "ReadMessage after %d of %d", len(out), n)
		out = append(out, m)
	}
	return out
}

func testKafkaGoWriteRead(t *testing.T, addr string) {
	topic := topicName(t)
	kafkaGoCreate(t, addr, topic, 3)
	var acked ackLog
	w := kafkaGoWriter(t, addr, topic, &kafka.Hash{}, &acked)
	testutil.NoError(t, w.WriteMessages(ctxT(t), kafkaGoMessages(90)...), "WriteMessages")
	testutil.Equal(t, len(acked.all()), 90, "acknowledged messages")
	byPart := map[int][]kafka.Message{}
	for _, m := range acked.all() {
		byPart[m.Partition] = append(byPart[m.Partition], m)
	}
	testutil.Equal(t, len(byPart), 3, "partitions the hash balancer used")
	for p, ms := range byPart {
		for i, m := range ms {
			testutil.Equal(t, m.Offset, int64(i), "acknowledged offset %d of partition %d", i, p)
		}
		for i, m := range readKafkaGo(t, newReader(t, addr, topic, p, kafka.FirstOffset), len(ms)) {
			sameKafkaGo(t, m, ms[i])
		}
		r := newReader(t, addr, topic, p, 2)
		sameKafkaGo(t, readKafkaGo(t, r, 1)[0], ms[2])
		lag, err := r.ReadLag(ctxT(t))
		testutil.NoError(t, err, "ReadLag")
		testutil.Equal(t, lag, int64(len(ms)-3), "lag of partition %d after reading offset 2", p)
	}
	testKafkaGoConn(t, addr, topic, int64(len(byPart[0])))
	testKafkaGoLastOffset(t, addr, topic, int64(len(byPart[1])))
}

// testKafkaGoConn checks a Conn's view: offsets of partition 0 (end0 records) and the
// topic's partitions.
func testKafkaGoConn(t *testing.T, addr, topic string, end0 int64) {
	conn, err := kafka.DialLeader(ctxT(t), "tcp", addr, topic, 0)
	testutil.NoError(t, err, "DialLeader")
	defer conn.Close()
	first, last, err := conn.ReadOffsets()
	testutil.NoError(t, err, "ReadOffsets")
	testutil.Equal(t, [2]int64{first, last}, [2]int64{0, end0}, "first and last offsets of partition 0")
	parts, err := conn.ReadPartitions(topic)
	testutil.NoError(t, err, "ReadPartitions")
	testutil.Equal(t, len(parts), 3, "partitions of %s", topic)
	for _, p := range parts {
		testutil.Equal(t, [4]any{p.Topic, p.Leader.ID, len(p.Replicas), len(p.Isr)}, [4]any{topic, 1, 1, 1},
			"partition %d topic, leader, replicas and ISR", p.ID)
	}
}

// testKafkaGoLastOffset positions a reader of partition 1 (end1 records) at the end: it
// reads the message written after, at offset end1, and nothing before.
func testKafkaGoLastOffset(t *testing.T, addr, topic string, end1 int64) {
	r := newReader(t, addr, topic, 1, kafka.LastOffset)
	var acked ackLog
	w := kafkaGoWriter(t, addr, topic, kafka.BalancerFunc(func(kafka.Message, ...int) int { return 1 }), &acked)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	got := make(chan kafka.Message, 1)
	go func() {
		m, _ := r.ReadMessage(ctx)
		got <- m
	}()
	// When the reader looks the end up is its own business: write until it sees one.
	for i := 0; ; i++ {
		msg := kafka.Message{Key: []byte("late"), Value: fmt.Appendf(nil, "late %d", i), Headers: []kafka.Header{{Key: "n", Value: []byte("late")}}, Time: time.Now()}
		testutil.NoError(t, w.WriteMessages(ctx, msg), "WriteMessages")
		select {
		case m := <-got:
			testutil.NoError(t, ctx.Err(), "reading from the last offset")
			late := acked.all()
			testutil.True(t, m.Offset >= end1 && m.Offset < end1+int64(len(late)), "read offset %d from the end, want %d..%d", m.Offset, end1, end1+int64(len(late))-1)
			sameKafkaGo(t, m, late[m.Offset-end1])
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func testKafkaGoCreateTopics(t *testing.T, addr string) {
	topic := topicName(t)
	kafkaGoCreate(t, addr, topic, 2, kafka.ConfigEntry{ConfigName: "retention.ms", ConfigValue: "123456"})
	cl := &kafka.Client{Addr: kafka.TCP(addr), Timeout: testTimeout}
	resp, err := cl.CreateTopics(ctxT(t), &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{Topic: topic, NumPartitions: 1, ReplicationFactor: 1}}})
	testutil.NoError(t, err, "CreateTopics again")
	testutil.ErrorIs(t, resp.Errors[topic], kafka.TopicAlreadyExists, "creating %s again", topic)
	cfgs := configsOf(t, newAdmin(t, addr), topic)
	testutil.Equal(t, *cfgs["retention.ms"].Value, "123456", "retention.ms of the topic kafka-go created")
	md, err := cl.Metadata(ctxT(t), &kafka.MetadataRequest{Topics: []string{topic}})
	testutil.NoError(t, err, "Metadata")
	testutil.Equal(t, [2]int{len(md.Topics), len(md.Topics[0].Partitions)}, [2]int{1, 2}, "topics and partitions in metadata")
}

func testKafkaGoCompression(t *testing.T, addr string) {
	for _, codec := range []compress.Compression{compress.Gzip, compress.Snappy, compress.Lz4, compress.Zstd} {
		t.Run(codec.String(), func(t *testing.T) {
			topic := topicName(t)
			kafkaGoCreate(t, addr, topic, 1)
			var acked ackLog
			w := kafkaGoWriter(t, addr, topic, &kafka.RoundRobin{}, &acked)
			w.Compression = codec
			testutil.NoError(t, w.WriteMessages(ctxT(t), kafkaGoMessages(30)...), "WriteMessages with %s", codec)
			got := readKafkaGo(t, newReader(t, addr, topic, 0, kafka.FirstOffset), 30)
			for i := range got {
				sameKafkaGo(t, got[i], acked.all()[i])
			}
		})
	}
}
