package server

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/internal/testutil"
)

// txnOutcome is what a producer of the checker knows of one of its transactions.
type txnOutcome int8

const (
	outcomeUnknown txnOutcome = iota // the end failed: committed or aborted
	outcomeCommitted
	outcomeAborted
)

// checkerProducer runs transactions of perTxn records over topic until it has ended
// txns of them, committing all but every third; after an error it aborts, or starts a
// new client with the same transactional id (which fences the old one). started is
// called after each transaction.
func checkerProducer(ctx context.Context, t *testing.T, seeds []string, id string, topic string, txns, perTxn int, started func(j int)) []txnOutcome {
	newClient := func() *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.TransactionalID(id), kgo.DefaultProduceTopic(topic),
			kgo.TransactionTimeout(10*time.Second), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
			kgo.RetryTimeout(15*time.Second))
		if err != nil {
			t.Error(err)
		}
		return cl
	}
	cl := newClient()
	defer func() { cl.Close() }()
	out := make([]txnOutcome, txns)
	for j := range txns {
		if ctx.Err() != nil {
			return out[:j]
		}
		commit := j%3 != 1
		err := cl.BeginTransaction()
		for k := 0; k < perTxn && err == nil; k++ {
			err = cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("%s-t%d-r%d", id, j, k))}).FirstErr()
		}
		if err == nil {
			err = cl.EndTransaction(ctx, kgo.TransactionEndTry(commit))
		}
		switch {
		case err == nil && commit:
			out[j] = outcomeCommitted
		case err == nil:
			out[j] = outcomeAborted
		default:
			t.Logf("%s transaction %d: %v", id, j, err)
			if cl.EndTransaction(ctx, kgo.TryAbort) != nil {
				cl.Close()
				cl = newClient()
			}
		}
		started(j)
		time.Sleep(30 * time.Millisecond) // spread the transactions over the kill
	}
	return out
}

// A checker: concurrent transactional producers while the node coordinating one of
// them (and leading some partitions) is killed. Afterwards read_committed shows no
// record of an aborted transaction, every record of a committed one, and of every
// transaction whose end failed all records or none.
func TestTxnCheckerUnderNodeKill(t *testing.T) {
	const producers, txns, perTxn = 3, 20, 4
	nodes := startCluster(t, 3)
	seeds := []string{nodes[0].node.KafkaAddr().String(), nodes[1].node.KafkaAddr().String(), nodes[2].node.KafkaAddr().String()}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Second)
	defer cancel()
	adm := adminOf(t, nodes[0].node)
	_, err := adm.CreateTopic(ctx, 3, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, "chk")
	testutil.NoError(t, err, "create topic")
	found := adm.FindTxnCoordinators(ctx, "chk-0")["chk-0"]
	testutil.NoError(t, found.Err, "find transaction coordinator")
	victim := nodes[found.NodeID-1]

	var killOnce sync.Once
	outcomes := make([][]txnOutcome, producers)
	var wg sync.WaitGroup
	for i := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outcomes[i] = checkerProducer(ctx, t, seeds, fmt.Sprintf("chk-%d", i), "chk", txns, perTxn, func(j int) {
				if i == 0 && j == txns/3 {
					// In the background, so that transactions are under way meanwhile.
					killOnce.Do(func() {
						t.Logf("killing node %d, coordinator of chk-0", found.NodeID)
						wg.Add(1)
						go func() {
							defer wg.Done()
							kill(victim)
						}()
					})
				}
			})
		}()
	}
	wg.Wait()

	var survivors []string
	for _, tn := range nodes {
		if tn != victim {
			survivors = append(survivors, tn.node.KafkaAddr().String())
		}
	}
	// Transactions whose end failed are aborted by a fencing client or time out.
	testutil.Eventually(t, 40*time.Second, func() error { return stableEverywhere(ctx, adminOf(t, nodes[found.NodeID%3].node), "chk") })
	cons, err := kgo.NewClient(kgo.SeedBrokers(survivors...), kgo.ConsumeTopics("chk"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	testutil.NoError(t, err, "consumer")
	defer cons.Close()
	want := 0
	for _, o := range outcomes {
		for _, x := range o {
			if x == outcomeCommitted {
				want += perTxn
			}
		}
	}
	seen := map[string]int{} // records per transaction "chk-i-tj"
	got := 0
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		pctx, pcancel := context.WithDeadline(ctx, deadline)
		cons.PollFetches(pctx).EachRecord(func(r *kgo.Record) {
			v := string(r.Value)
			seen[v[:strings.LastIndex(v, "-r")]]++
			got++
		})
		pcancel()
	}
	for i, o := range outcomes {
		for j, x := range o {
			n := seen[fmt.Sprintf("chk-%d-t%d", i, j)]
			switch {
			case x == outcomeCommitted && n != perTxn:
				t.Errorf("committed transaction chk-%d-t%d: %d of %d records visible", i, j, n, perTxn)
			case x == outcomeAborted && n != 0:
				t.Errorf("aborted transaction chk-%d-t%d: %d records visible", i, j, n)
			case n != 0 && n != perTxn:
				t.Errorf("transaction chk-%d-t%d with an unknown end: %d of %d records visible", i, j, n, perTxn)
			}
		}
	}
	t.Logf("%d records visible, %d from transactions known committed; outcomes %v", got, want, outcomes)
}
