package txn_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTransactionTimeoutAborts leaves a transaction open past transaction.timeout.ms:
// the coordinator aborts it (its record never visible to read_committed, the LSO moves
// past it so that a later committed transaction becomes readable) and its producer is
// fenced.
func TestTransactionTimeoutAborts(t *testing.T) {
	createTopic(t, "txn-timeout", 1)
	ctx := context.Background()
	abandoned := client(t, kgo.TransactionalID("abandoned"), kgo.TransactionTimeout(500*time.Millisecond))
	if err := abandoned.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := abandoned.ProduceSync(ctx, &kgo.Record{Topic: "txn-timeout", Value: []byte("abandoned")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	other := client(t, kgo.TransactionalID("after-timeout"))
	if err := transact(t, other, "txn-timeout", true, "after"); err != nil {
		t.Fatal(err)
	}
	// Only the abort lets read_committed past the open transaction's first offset.
	if got := consume(t, "txn-timeout", true, 1, 10*time.Second); strings.Join(got, ",") != "after" {
		t.Fatalf("read_committed saw %v, want only the committed record once the open transaction timed out", got)
	}
	adm := kadm.NewClient(client(t))
	desc, err := adm.DescribeTransactions(ctx, "abandoned")
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := desc["abandoned"]; !ok || d.State != "CompleteAbort" {
		t.Fatalf("abandoned transaction described as %+v", desc)
	}
	stable, err := adm.ListCommittedOffsets(ctx, "txn-timeout")
	if err != nil {
		t.Fatal(err)
	}
	ends, err := adm.ListEndOffsets(ctx, "txn-timeout")
	if err != nil {
		t.Fatal(err)
	}
	// Two records and two markers: the last stable offset is the high watermark.
	lso, _ := stable.Lookup("txn-timeout", 0)
	hw, _ := ends.Lookup("txn-timeout", 0)
	if lso.Offset != 4 || hw.Offset != 4 {
		t.Fatalf("last stable offset %d, high watermark %d, want 4 and 4", lso.Offset, hw.Offset)
	}
	if err := abandoned.EndTransaction(ctx, kgo.TryCommit); err == nil {
		t.Fatal("the timed-out producer committed")
	}
	if got := consume(t, "txn-timeout", true, -1, 2*time.Second); strings.Join(got, ",") != "after" {
		t.Fatalf("after the zombie's commit attempt read_committed saw %v", got)
	}
}
