package interop_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/runnel-io/runnel/internal/testutil"
)

// TestSarama drives one node (auto-creation on, 2 partitions by default) with IBM's
// sarama: the idempotent SyncProducer, PartitionConsumers at the oldest, a given and
// the newest offset, each compression codec, and the ClusterAdmin.
func TestSarama(t *testing.T) {
	n := startNode(t, "num.partitions=2")
	addr := bootstrap(n)
	t.Run("ProduceConsume", func(t *testing.T) { t.Parallel(); testSaramaProduceConsume(t, addr, sarama.V3_6_0_0) })
	// sarama's default protocol level: older, non-flexible request versions.
	t.Run("ProduceConsumeV2_1", func(t *testing.T) { t.Parallel(); testSaramaProduceConsume(t, addr, sarama.V2_1_0_0) })
	t.Run("Compression", func(t *testing.T) { t.Parallel(); testSaramaCompression(t, addr) })
	t.Run("Admin", func(t *testing.T) { t.Parallel(); testSaramaAdmin(t, addr) })
	t.Run("AutoCreate", func(t *testing.T) { t.Parallel(); testSaramaAutoCreate(t, addr) })
}

func saramaConfig() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_6_0_0
	cfg.ClientID = "runnel-interop"
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Idempotent = true
	cfg.Net.MaxOpenRequests = 1 // sarama's rule for an idempotent producer
	cfg.Producer.Return.Successes = true
	cfg.Producer.Retry.Backoff = 50 * time.Millisecond
	cfg.Metadata.Retry.Backoff = 50 * time.Millisecond
	cfg.Consumer.MaxWaitTime = 100 * time.Millisecond
	return cfg
}

func newSyncProducer(t *testing.T, addr string, cfg *sarama.Config) sarama.SyncProducer {
	t.Helper()
	p, err := sarama.NewSyncProducer([]string{addr}, cfg)
	testutil.NoError(t, err, "sarama.NewSyncProducer")
	t.Cleanup(func() { p.Close() })
	return p
}

func newSaramaConsumer(t *testing.T, addr string, version sarama.KafkaVersion) sarama.Consumer {
	t.Helper()
	cfg := saramaConfig()
	cfg.Version = version
	c, err := sarama.NewConsumer([]string{addr}, cfg)
	testutil.NoError(t, err, "sarama.NewConsumer")
	t.Cleanup(func() { c.Close() })
	return c
}

func newClusterAdmin(t *testing.T, addr string) sarama.ClusterAdmin {
	t.Helper()
	a, err := sarama.NewClusterAdmin([]string{addr}, saramaConfig())
	testutil.NoError(t, err, "sarama.NewClusterAdmin")
	t.Cleanup(func() { a.Close() })
	return a
}

// saramaMessages makes n messages with keys from a set of seven, headers and distinct
// timestamps.
func saramaMessages(topic string, n int) []*sarama.ProducerMessage {
	base := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	msgs := make([]*sarama.ProducerMessage, n)
	for i := range msgs {
		msgs[i] = &sarama.ProducerMessage{
			Topic:     topic,
			Key:       sarama.StringEncoder(fmt.Sprintf("k%d", i%7)),
			Value:     sarama.StringEncoder(fmt.Sprintf("sarama value %d", i)),
			Headers:   []sarama.RecordHeader{{Key: []byte("n"), Value: fmt.Appendf(nil, "%d", i)}},
			Timestamp: base.Add(time.Duration(i) * time.Millisecond),
		}
	}
	return msgs
}

// consumeSarama reads n messages of topic[partition] from offset and fails on any
// consumer error or if they do not come within testTimeout.
func consumeSarama(t *testing.T, c sarama.Consumer, topic string, partition int32, offset int64, n int) []*sarama.ConsumerMessage {
	t.Helper()
	pc, err := c.ConsumePartition(topic, partition, offset)
	testutil.NoError(t, err, "ConsumePartition(%s, %d, %d)", topic, partition, offset)
	defer pc.Close()
	return readSarama(t, pc, n)
}

func readSarama(t *testing.T, pc sarama.PartitionConsumer, n int) []*sarama.ConsumerMessage {
	t.Helper()
	var out []*sarama.ConsumerMessage
	timeout := time.After(testTimeout)
	for len(out) < n {
		select {
		case m := <-pc.Messages():
			out = append(out, m)
		case err := <-pc.Errors():
			t.Fatalf("partition consumer: %v", err)
		case <-timeout:
			t.Fatalf("got %d of %d messages before the timeout", len(out), n)
		}
	}
	return out
}

// sameSarama fails unless the consumed message carries what was produced.
func sameSarama(t *testing.T, got *sarama.ConsumerMessage, want *sarama.ProducerMessage) {
	t.Helper()
	var k, v []byte
	if want.Key != nil {
		k, _ = want.Key.Encode()
	}
	if want.Value != nil {
		v, _ = want.Value.Encode()
	}
	where := fmt.Sprintf("%s[%d]@%d", got.Topic, got.Partition, got.Offset)
	testutil.Equal(t, [2]string{string(got.Key), string(got.Value)}, [2]string{string(k), string(v)}, "%s key and value", where)
	testutil.Equal(t, [2]int64{int64(got.Partition), got.Offset}, [2]int64{int64(want.Partition), want.Offset}, "%s partition and offset", where)
	testutil.Equal(t, len(got.Headers), 1, "%s headers", where)
	testutil.Equal(t, [2]string{string(got.Headers[0].Key), string(got.Headers[0].Value)},
		[2]string{string(want.Headers[0].Key), string(want.Headers[0].Value)}, "%s header", where)
	testutil.Equal(t, got.Timestamp.UnixMilli(), want.Timestamp.UnixMilli(), "%s timestamp", where)
}

func testSaramaProduceConsume(t *testing.T, addr string, version sarama.KafkaVersion) {
	topic := topicName(t)
	createTopic(t, newAdmin(t, addr), topic, 3)
	cfg := saramaConfig()
	cfg.Version = version
	p := newSyncProducer(t, addr, cfg)
	msgs := saramaMessages(topic, 120)
	testutil.NoError(t, p.SendMessages(msgs), "SendMessages")
	byPart := map[int32][]*sarama.ProducerMessage{}
	for _, m := range msgs {
		testutil.Equal(t, m.Offset, int64(len(byPart[m.Partition])), "acknowledged offset of %v on partition %d", m.Value, m.Partition)
		byPart[m.Partition] = append(byPart[m.Partition], m)
	}
	testutil.Equal(t, len(byPart), 3, "partitions the hash partitioner used")

	c := newSaramaConsumer(t, addr, version)
	for part, want := range byPart {
		got := consumeSarama(t, c, topic, part, sarama.OffsetOldest, len(want))
		for i := range want {
			sameSarama(t, got[i], want[i])
		}
		mid := consumeSarama(t, c, topic, part, 3, 1)
		sameSarama(t, mid[0], want[3])
	}

	// OffsetNewest is resolved inside ConsumePartition, so a message sent after it
	// returns is the first one the consumer sees.
	pc, err := c.ConsumePartition(topic, 0, sarama.OffsetNewest)
	testutil.NoError(t, err, "ConsumePartition(newest)")
	defer pc.Close()
	m := &sarama.ProducerMessage{Topic: topic, Partition: 0, Value: sarama.StringEncoder("after newest"), Timestamp: time.Now(),
		Headers: []sarama.RecordHeader{{Key: []byte("n"), Value: []byte("new")}}}
	manual := saramaConfig()
	manual.Version = version
	manual.Producer.Partitioner = sarama.NewManualPartitioner
	_, off, err := newSyncProducer(t, addr, manual).SendMessage(m)
	testutil.NoError(t, err, "SendMessage")
	testutil.Equal(t, off, int64(len(byPart[0])), "offset of the message after newest")
	sameSarama(t, readSarama(t, pc, 1)[0], m)
}

func testSaramaCompression(t *testing.T, addr string) {
	for _, codec := range []sarama.CompressionCodec{sarama.CompressionGZIP, sarama.CompressionSnappy,
		sarama.CompressionLZ4, sarama.CompressionZSTD} {
		t.Run(codec.String(), func(t *testing.T) {
			topic := topicName(t)
			createTopic(t, newAdmin(t, addr), topic, 1)
			cfg := saramaConfig()
			cfg.Producer.Compression = codec
			cfg.Producer.Flush.Messages = 10 // several records per compressed batch
			msgs := saramaMessages(topic, 40)
			testutil.NoError(t, newSyncProducer(t, addr, cfg).SendMessages(msgs), "SendMessages with %s", codec)
			got := consumeSarama(t, newSaramaConsumer(t, addr, sarama.V3_6_0_0), topic, 0, sarama.OffsetOldest, len(msgs))
			for i := range msgs {
				sameSarama(t, got[i], msgs[i])
			}
		})
	}
}

func testSaramaAdmin(t *testing.T, addr string) {
	a := newClusterAdmin(t, addr)
	topic := topicName(t)
	retention := "86400000"
	err := a.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 4, ReplicationFactor: 1,
		ConfigEntries: map[string]*string{"retention.ms": &retention}}, false)
	testutil.NoError(t, err, "CreateTopic")
	err = a.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, false)
	testutil.ErrorIs(t, err, sarama.ErrTopicAlreadyExists, "creating %s again", topic)

	md, err := a.DescribeTopics([]string{topic})
	testutil.NoError(t, err, "DescribeTopics")
	testutil.Equal(t, [2]any{len(md), md[0].Err}, [2]any{1, sarama.ErrNoError}, "described topics and error")
	testutil.Equal(t, len(md[0].Partitions), 4, "partitions of %s", topic)
	for _, p := range md[0].Partitions {
		testutil.Equal(t, [3]any{p.Leader, p.Replicas, p.Isr}, [3]any{int32(1), []int32{1}, []int32{1}}, "partition %d", p.ID)
	}
	entries, err := a.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic})
	testutil.NoError(t, err, "DescribeConfig")
	found := false
	for _, e := range entries {
		if e.Name == "retention.ms" {
			found = true
			testutil.Equal(t, [2]any{e.Value, e.Source}, [2]any{retention, sarama.SourceTopic}, "retention.ms value and source")
		}
	}
	testutil.True(t, found, "DescribeConfig does not list retention.ms")

	topics, err := a.ListTopics()
	testutil.NoError(t, err, "ListTopics")
	testutil.Equal(t, topics[topic].NumPartitions, int32(4), "listed partitions of %s", topic)
	testutil.NoError(t, a.DeleteTopic(topic), "DeleteTopic")
	testutil.Eventually(t, 10*time.Second, func() error {
		topics, err := a.ListTopics()
		if err != nil {
			return err
		}
		if _, ok := topics[topic]; ok {
			return fmt.Errorf("%s is still listed after DeleteTopic", topic)
		}
		return nil
	})
	testutil.ErrorIs(t, a.DeleteTopic(topic), sarama.ErrUnknownTopicOrPartition, "deleting %s again", topic)
}

// testSaramaAutoCreate produces to a topic nobody created: the node creates it with
// num.partitions (2 on this node).
func testSaramaAutoCreate(t *testing.T, addr string) {
	topic := topicName(t)
	part, off, err := newSyncProducer(t, addr, saramaConfig()).SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder("x")})
	testutil.NoError(t, err, "SendMessage to a new topic")
	testutil.Equal(t, off, int64(0), "offset of the first message")
	topics, err := newClusterAdmin(t, addr).DescribeTopics([]string{topic})
	testutil.NoError(t, err, "DescribeTopics")
	testutil.Equal(t, len(topics[0].Partitions), 2, "partitions of the auto-created topic")
	got := consumeSarama(t, newSaramaConsumer(t, addr, sarama.V3_6_0_0), topic, part, sarama.OffsetOldest, 1)
	testutil.Equal(t, string(got[0].Value), "x", "the auto-created topic's record")
}
