package group_test

// End-to-end consumer group tests with sarama and kafka-go, which speak older protocol
// versions than franz-go (kafka-go: JoinGroup v1, SyncGroup v0, OffsetCommit v2;
// sarama: per its configured Kafka version).

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	kafkago "github.com/segmentio/kafka-go"
)

// saramaMember is one sarama consumer group member.
type saramaMember struct {
	group sarama.ConsumerGroup
	mu    sync.Mutex
	parts map[int32]bool
	vals  []string
}

func (m *saramaMember) Setup(s sarama.ConsumerGroupSession) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.parts = map[int32]bool{}
	for _, ps := range s.Claims() {
		for _, p := range ps {
			m.parts[p] = true
		}
	}
	return nil
}

func (m *saramaMember) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (m *saramaMember) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for msg := range c.Messages() {
		m.mu.Lock()
		m.vals = append(m.vals, string(msg.Value))
		m.mu.Unlock()
		s.MarkMessage(msg, "")
	}
	return nil
}

func (m *saramaMember) partitions() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.parts)
}

func (m *saramaMember) values() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.vals...)
}

func startSarama(t *testing.T, ctx context.Context, wg *sync.WaitGroup, version sarama.KafkaVersion, groupID, topic string) *saramaMember {
	t.Helper()
	cfg := sarama.NewConfig()
	cfg.Version = version
	cfg.ClientID = "sarama-test"
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Interval = 100 * time.Millisecond
	cfg.Consumer.Group.Session.Timeout = 3 * time.Second
	cfg.Consumer.Group.Heartbeat.Interval = 300 * time.Millisecond
	cfg.Consumer.Group.Rebalance.Timeout = 10 * time.Second
	cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategyRange()}
	cfg.Consumer.MaxWaitTime = 200 * time.Millisecond
	g, err := sarama.NewConsumerGroup([]string{brokerAddr(t)}, groupID, cfg)
	if err != nil {
		t.Fatalf("sarama consumer group: %v", err)
	}
	m := &saramaMember{group: g}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			if err := g.Consume(ctx, []string{topic}, m); err != nil && !errors.Is(err, sarama.ErrClosedConsumerGroup) {
				t.Logf("sarama consume: %v", err)
				time.Sleep(100 * time.Millisecond)
			}
		}
	}()
	return m
}

func allConsumed(from, to int, lists ...[]string) error {
	got := map[string]bool{}
	for _, l := range lists {
		for _, v := range l {
			got[v] = true
		}
	}
	for i := from; i < to; i++ {
		if !got[fmt.Sprint(i)] {
			return fmt.Errorf("record %d not consumed (%d distinct)", i, len(got))
		}
	}
	return nil
}

func TestSaramaConsumerGroup(t *testing.T) {
	for _, v := range []sarama.KafkaVersion{sarama.V2_1_0_0, sarama.V3_6_0_0} {
		t.Run(v.String(), func(t *testing.T) {
			topic, group := "sarama-"+v.String(), "g-sarama-"+v.String()
			createTopic(t, topic, 4, 40)
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			a := startSarama(t, ctx, &wg, v, group, topic)
			b := startSarama(t, ctx, &wg, v, group, topic)
			eventually(t, 30*time.Second, "two sarama members sharing 4 partitions", func() error {
				if pa, pb := a.partitions(), b.partitions(); pa == 0 || pb == 0 || pa+pb != 4 {
					return fmt.Errorf("a has %d partitions, b %d", pa, pb)
				}
				return nil
			})
			eventually(t, 30*time.Second, "consuming every record", func() error { return allConsumed(0, 40, a.values(), b.values()) })
			// b leaves: a takes over everything.
			if err := b.group.Close(); err != nil {
				t.Fatal(err)
			}
			eventually(t, 30*time.Second, "a owning all partitions", func() error {
				if p := a.partitions(); p != 4 {
					return fmt.Errorf("a has %d", p)
				}
				return nil
			})
			cancel()
			a.group.Close()
			wg.Wait()

			// A new member resumes from the committed offsets: it sees the new records
			// and none of the old ones.
			produce(t, topic, 40, 60)
			ctx2, cancel2 := context.WithCancel(context.Background())
			var wg2 sync.WaitGroup
			c := startSarama(t, ctx2, &wg2, v, group, topic)
			eventually(t, 30*time.Second, "the new member consuming the new records", func() error { return allConsumed(40, 60, c.values()) })
			cancel2()
			c.group.Close()
			wg2.Wait()
			for _, val := range c.values() {
				var n int
				fmt.Sscan(val, &n)
				if n < 40 {
					t.Fatalf("record %d consumed again after its offset was committed", n)
				}
			}
		})
	}
}

func newKafkaGoReader(t *testing.T, group, topic string) *kafkago.Reader {
	return kafkago.NewReader(kafkago.ReaderConfig{
		Brokers: []string{brokerAddr(t)}, GroupID: group, Topic: topic,
		MinBytes: 1, MaxBytes: 1 << 20, MaxWait: 200 * time.Millisecond, StartOffset: kafkago.FirstOffset,
		HeartbeatInterval: 300 * time.Millisecond, SessionTimeout: 3 * time.Second,
		RebalanceTimeout: 5 * time.Second, JoinGroupBackoff: 200 * time.Millisecond,
		ReadBackoffMin: 50 * time.Millisecond, ReadBackoffMax: 200 * time.Millisecond,
	})
}

// readKafkaGo fetches and commits messages until ctx ends.
func readKafkaGo(ctx context.Context, wg *sync.WaitGroup, r *kafkago.Reader, mu *sync.Mutex, out *[]string, parts map[int]bool) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			msg, err := r.FetchMessage(ctx)
			if err != nil {
				return
			}
			mu.Lock()
			*out = append(*out, string(msg.Value))
			parts[msg.Partition] = true
			mu.Unlock()
			if err := r.CommitMessages(ctx, msg); err != nil {
				return
			}
		}
	}()
}

func TestKafkaGoReaderGroup(t *testing.T) {
	topic, group := "kafkago", "g-kafkago"
	createTopic(t, topic, 4, 40)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var mu sync.Mutex
	var va, vb []string
	pa, pb := map[int]bool{}, map[int]bool{}
	ra := newKafkaGoReader(t, group, topic)
	rb := newKafkaGoReader(t, group, topic)
	readKafkaGo(ctx, &wg, ra, &mu, &va, pa)
	readKafkaGo(ctx, &wg, rb, &mu, &vb, pb)
	eventually(t, 30*time.Second, "two kafka-go readers consuming every record", func() error {
		mu.Lock()
		defer mu.Unlock()
		return allConsumed(0, 40, va, vb)
	})
	// The two readers share the partitions. Which one read which records depends on
	// timing (a reader that joins first may read all 40 before the other joins), so
	// the sharing is checked on the group's assignment, not on the records read.
	adm := newAdmin(t)
	eventually(t, 30*time.Second, "both kafka-go readers assigned partitions", func() error {
		described, err := adm.DescribeGroups(context.Background(), group)
		if err != nil {
			return err
		}
		g := described[group]
		if len(g.Members) != 2 {
			return fmt.Errorf("group has %d members, want 2", len(g.Members))
		}
		total := 0
		for _, m := range g.Members {
			ca, ok := m.Assigned.AsConsumer()
			if !ok || len(ca.Topics) == 0 || len(ca.Topics[0].Partitions) == 0 {
				return fmt.Errorf("member %s has no partition", m.MemberID)
			}
			total += len(ca.Topics[0].Partitions)
		}
		if total != 4 {
			return fmt.Errorf("members hold %d partitions, want 4", total)
		}
		return nil
	})
	cancel()
	wg.Wait()
	if err := ra.Close(); err != nil {
		t.Fatal(err)
	}
	if err := rb.Close(); err != nil {
		t.Fatal(err)
	}

	// A new reader resumes after the committed offsets.
	produce(t, topic, 40, 60)
	ctx2, cancel2 := context.WithCancel(context.Background())
	var wg2 sync.WaitGroup
	var vc []string
	rc := newKafkaGoReader(t, group, topic)
	readKafkaGo(ctx2, &wg2, rc, &mu, &vc, map[int]bool{})
	eventually(t, 30*time.Second, "the new reader consuming the new records", func() error {
		mu.Lock()
		defer mu.Unlock()
		return allConsumed(40, 60, vc)
	})
	cancel2()
	wg2.Wait()
	rc.Close()
	for _, val := range vc {
		var n int
		fmt.Sscan(val, &n)
		if n < 40 {
			t.Fatalf("record %d read again after its offset was committed", n)
		}
	}
}
