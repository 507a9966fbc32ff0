package txn_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// committedTotal is the sum of the group's committed offsets on topic.
func committedTotal(t *testing.T, groupID, topic string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	offs, err := kadm.NewClient(client(t)).FetchOffsets(ctx, groupID)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic && o.Err == nil {
			total += o.At
		}
	})
	return total
}

// transformRound polls the session until it has read n records, copies them upper-cased
// to out in one transaction and ends it with commit.
func transformRound(t *testing.T, s *kgo.GroupTransactSession, out string, n int, commit bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.Begin(); err != nil {
		t.Fatal(err)
	}
	for read := 0; read < n; {
		fs := s.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records", read, n)
		}
		fs.EachRecord(func(r *kgo.Record) {
			read++
			// Synchronously: an abort drops records still buffered.
			if err := s.ProduceSync(ctx, &kgo.Record{Topic: out, Value: []byte(strings.ToUpper(string(r.Value)))}).FirstErr(); err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	committed, err := s.End(ctx, kgo.TransactionEndTry(commit))
	if err != nil || committed != commit {
		t.Fatalf("End(%v) = %v, %v", commit, committed, err)
	}
}

func produce(t *testing.T, topic string, values ...string) {
	t.Helper()
	p := client(t, kgo.DefaultProduceTopic(topic))
	for _, v := range values {
		if err := p.ProduceSync(context.Background(), &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

func values(prefix string, from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, prefix+strconv.Itoa(i))
	}
	return out
}

// TestFranzGoConsumeTransformProduce runs a kgo.GroupTransactSession: the offsets it
// commits with TxnOffsetCommit move with the transaction's writes, and an aborted
// transaction moves neither (the records are then processed again and committed).
func TestFranzGoConsumeTransformProduce(t *testing.T) {
	createTopic(t, "eos-in", 2)
	createTopic(t, "eos-out", 1)
	produce(t, "eos-in", values("r", 0, 10)...)
	s, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(brokerAddr(t)), kgo.TransactionalID("eos"),
		kgo.ConsumerGroup("eos-g"), kgo.ConsumeTopics("eos-in"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DefaultProduceTopic("eos-out"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	transformRound(t, s, "eos-out", 10, true)
	if got := committedTotal(t, "eos-g", "eos-in"); got != 10 {
		t.Fatalf("after the commit the group's offsets sum to %d, want 10", got)
	}
	if got := consume(t, "eos-out", true, 10, 10*time.Second); len(got) != 10 || got[0] != "R0" {
		t.Fatalf("read_committed output %v", got)
	}

	produce(t, "eos-in", values("s", 0, 5)...)
	transformRound(t, s, "eos-out", 5, false)
	if got := committedTotal(t, "eos-g", "eos-in"); got != 10 {
		t.Fatalf("after the abort the group's offsets sum to %d, want 10", got)
	}
	// The session rewinds to the committed offsets: the 5 records come again.
	transformRound(t, s, "eos-out", 5, true)
	if got := committedTotal(t, "eos-g", "eos-in"); got != 15 {
		t.Fatalf("after the second commit the group's offsets sum to %d, want 15", got)
	}
	got := consume(t, "eos-out", true, 15, 10*time.Second)
	if len(got) != 15 || strings.Join(got[10:], ",") != "S0,S1,S2,S3,S4" {
		t.Fatalf("read_committed output %v, want R0-R9 and S0-S4 once", got)
	}
	if all := consume(t, "eos-out", false, 20, 10*time.Second); len(all) != 20 {
		t.Fatalf("read_uncommitted output %d records, want 20 (the aborted 5 included)", len(all))
	}
}
