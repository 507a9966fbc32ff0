package txn_test

import (
	"context"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/internal/clustertest"
)

// shared is the one node every test of the binary uses (internal/clustertest's in-process
// mode on loopback, started by the first test that needs it). Timed-out transactions
// are aborted every 100 ms instead of every 10 s, for the timeout tests.
var shared = clustertest.NewShared(clustertest.Options{Nodes: 1, InProcess: true, StartTimeout: 60 * time.Second, Sets: []string{
	"offsets.topic.num.partitions=3", "transaction.abort.timed.out.transaction.cleanup.interval.ms=100",
}})

func TestMain(m *testing.M) { os.Exit(shared.Main(m)) }

// brokerAddr starts the shared node on first use and returns its Kafka address.
func brokerAddr(t *testing.T) string {
	t.Helper()
	return shared.Get(t).Node(1).KafkaAddr
}

func client(t *testing.T, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokerAddr(t))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func createTopic(t *testing.T, name string, partitions int32) {
	t.Helper()
	if _, err := kadm.NewClient(client(t)).CreateTopic(context.Background(), partitions, 1, nil, name); err != nil {
		t.Fatal(err)
	}
}

// transact runs one transaction producing values and ends it with commit.
func transact(t *testing.T, p *kgo.Client, topic string, commit bool, values ...string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := p.BeginTransaction(); err != nil {
		return err
	}
	for _, v := range values {
		if err := p.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(); err != nil {
			return err
		}
	}
	return p.EndTransaction(ctx, kgo.TransactionEndTry(commit))
}

// consume reads topic from the start for d and returns the values seen, sorted.
func consume(t *testing.T, topic string, committed bool, want int, d time.Duration) []string {
	t.Helper()
	opts := []kgo.Opt{kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}
	if committed {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	cl := client(t, opts...)
	var out []string
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) && (want < 0 || len(out) < want) {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
	}
	sort.Strings(out)
	return out
}

func TestFranzGoCommitAbortReadCommitted(t *testing.T) {
	createTopic(t, "txn-basic", 2)
	p := client(t, kgo.TransactionalID("basic"), kgo.DefaultProduceTopic("txn-basic"))
	if err := transact(t, p, "txn-basic", true, "c0", "c1", "c2"); err != nil {
		t.Fatal(err)
	}
	if err := transact(t, p, "txn-basic", false, "a0", "a1", "a2"); err != nil {
		t.Fatal(err)
	}
	if err := transact(t, p, "txn-basic", true, "c3", "c4"); err != nil {
		t.Fatal(err)
	}
	got := consume(t, "txn-basic", true, 5, 10*time.Second)
	if strings.Join(got, ",") != "c0,c1,c2,c3,c4" {
		t.Fatalf("read_committed saw %v", got)
	}
	if got := consume(t, "txn-basic", false, 8, 10*time.Second); len(got) != 8 {
		t.Fatalf("read_uncommitted saw %v, want the 8 records, aborted ones included", got)
	}
}

func TestFranzGoOpenTransactionBlocksReadCommitted(t *testing.T) {
	createTopic(t, "txn-open", 1)
	open := client(t, kgo.TransactionalID("open"))
	other := client(t, kgo.TransactionalID("other"))
	ctx := context.Background()
	if err := open.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := open.ProduceSync(ctx, &kgo.Record{Topic: "txn-open", Value: []byte("open")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := transact(t, other, "txn-open", true, "after"); err != nil {
		t.Fatal(err)
	}
	if got := consume(t, "txn-open", true, -1, 2*time.Second); len(got) != 0 {
		t.Fatalf("read_committed read past an open transaction: %v", got)
	}
	if err := open.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	if got := consume(t, "txn-open", true, 2, 10*time.Second); strings.Join(got, ",") != "after,open" {
		t.Fatalf("after the commit read_committed saw %v", got)
	}
}

func TestFranzGoZombieFenced(t *testing.T) {
	createTopic(t, "txn-zombie", 1)
	ctx := context.Background()
	zombie := client(t, kgo.TransactionalID("zombie"))
	if err := zombie.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := zombie.ProduceSync(ctx, &kgo.Record{Topic: "txn-zombie", Value: []byte("zombie")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// A new producer with the same id fences the zombie and aborts its transaction.
	fresh := client(t, kgo.TransactionalID("zombie"))
	if err := transact(t, fresh, "txn-zombie", true, "fresh"); err != nil {
		t.Fatal(err)
	}
	if err := zombie.EndTransaction(ctx, kgo.TryCommit); err == nil {
		t.Fatal("the fenced producer committed")
	}
	if got := consume(t, "txn-zombie", true, 1, 5*time.Second); strings.Join(got, ",") != "fresh" {
		t.Fatalf("read_committed saw %v, want only the fresh producer's record", got)
	}
}
