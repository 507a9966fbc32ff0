package share_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestShareGroupReadCommitted: share.isolation.level=read_committed (KIP-932). A
// franz-go transactional producer writes an aborted transaction, a committed one,
// then opens a third and, while it is open, a plain record lands behind it. A
// read_committed share group gets the committed records only: never an aborted one,
// and nothing at or past the open transaction (the last stable offset) until it
// commits; then the rest. A read_uncommitted group on the same partition gets the
// aborted records too, which is what a share consumer would see without the
// isolation level.
func TestShareGroupReadCommitted(t *testing.T) {
	const topic, committedGroup, uncommittedGroup = "share-txn", "share-txn-rc", "share-txn-ru"
	addr, ctx, admin, _ := startShareNode(t, 60*time.Second, topic, 1)
	for _, g := range []string{committedGroup, uncommittedGroup} {
		setGroupConfig(t, ctx, admin, g, "share.auto.offset.reset", "earliest")
	}
	setGroupConfig(t, ctx, admin, committedGroup, "share.isolation.level", "read_committed")

	txp, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID("share-txn-producer"), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer txp.Close()
	// txn produces prefix-0..4 in a new transaction, left open.
	txn := func(prefix string) {
		t.Helper()
		if err := txp.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range 5 {
			if err := txp.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("%s-%d", prefix, i))).FirstErr(); err != nil {
				t.Fatalf("produce %s-%d to %s-0: %v", prefix, i, topic, err)
			}
		}
	}
	txn("aborted")
	if err := txp.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatalf("abort: %v", err)
	}
	txn("committed")
	if err := txp.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit: %v", err)
	}
	txn("open") // committed at the end
	if err := admin.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("plain-after")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// consume polls group's share consumer, accepting every record, until stop says
	// so or the test times out; it returns the values in delivery order.
	consume := func(cl *kgo.Client, group string, got *[]string, stop func() bool) {
		t.Helper()
		for !stop() {
			if ctx.Err() != nil {
				t.Fatalf("share group %s: timed out with %v", group, *got)
			}
			pctx, pcancel := context.WithTimeout(ctx, 500*time.Millisecond)
			fs := cl.PollFetches(pctx)
			pcancel()
			fs.EachRecord(func(r *kgo.Record) {
				*got = append(*got, string(r.Value))
				r.Ack(kgo.AckAccept)
			})
			if err := cl.FlushAcks(ctx); err != nil && ctx.Err() == nil {
				t.Fatalf("share group %s: flush acks: %v", group, err)
			}
		}
	}
	newConsumer := func(group string) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.FetchMaxWait(200*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	count := func(got []string, prefix string) int {
		n := 0
		for _, v := range got {
			if strings.HasPrefix(v, prefix) {
				n++
			}
		}
		return n
	}

	// read_uncommitted: everything below the high watermark, aborted records included.
	var ru []string
	consume(newConsumer(uncommittedGroup), uncommittedGroup, &ru, func() bool { return len(ru) >= 16 })
	if count(ru, "aborted-") != 5 || count(ru, "open-") != 5 || count(ru, "plain-after") != 1 {
		t.Fatalf("read_uncommitted share group %s got %v, want the 16 records written", uncommittedGroup, ru)
	}

	// read_committed: the committed transaction, then nothing while the third is open
	// (2 s of polls: the records past the last stable offset never come).
	rcl := newConsumer(committedGroup)
	var rc []string
	consume(rcl, committedGroup, &rc, func() bool { return count(rc, "committed-") >= 5 })
	quiet := time.Now().Add(2 * time.Second)
	consume(rcl, committedGroup, &rc, func() bool { return time.Now().After(quiet) })
	if len(rc) != 5 || count(rc, "committed-") != 5 {
		t.Fatalf("read_committed share group %s got %v with a transaction open, want committed-0..4 only", committedGroup, rc)
	}
	// Its lag counts to the last stable offset: every record below it is done (the
	// committed ones accepted, the aborted ones archived), so none, while the open
	// transaction's five and the plain record behind them are past it.
	lags, err := describeShareOffsets(t, ctx, admin, committedGroup)
	if err != nil {
		t.Fatalf("describe share group %s offsets: %v", committedGroup, err)
	}
	if lag := lags[0][1]; lag != 0 {
		t.Errorf("read_committed share group %s: lag %d on %s-0 with every record below the last stable offset done, want 0 (start offset %d)",
			committedGroup, lag, topic, lags[0][0])
	}
	if err := txp.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit the open transaction: %v", err)
	}
	consume(rcl, committedGroup, &rc, func() bool { return len(rc) >= 11 })
	if count(rc, "aborted-") != 0 || count(rc, "open-") != 5 || count(rc, "plain-after") != 1 || len(rc) != 11 {
		t.Fatalf("read_committed share group %s got %v, want committed-0..4, then open-0..4 and plain-after, never an aborted record", committedGroup, rc)
	}
}
