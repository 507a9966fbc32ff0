package server_test

import (
	"context"
	"fmt"
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
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Second)
	defer cancel()
	ck := newCheckerCluster(ctx, t, nodes, "chk")
	seeds, victim := ck.seeds, ck.victim

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
						t.Logf("killing node %d, coordinator of chk-0", victim.id)
						wg.Add(1)
						go func() {
							defer wg.Done()
							victim.kill()
						}()
					})
				}
			})
		}()
	}
	wg.Wait()

	// Transactions whose end failed are aborted by a fencing client or time out.
	testutil.Eventually(t, 40*time.Second, func() error { return stableEverywhere(ctx, ck.survivorAdmin(t), "chk") })
	want := 0
	for _, o := range outcomes {
		for _, x := range o {
			if x == outcomeCommitted {
				want += perTxn
			}
		}
	}
	seen := readCommittedCounts(ctx, t, ck.survivors(), "chk")
	got := 0
	for i, o := range outcomes {
		for j, x := range o {
			n := seen[fmt.Sprintf("chk-%d-t%d", i, j)]
			checkTxnVisible(t, fmt.Sprintf("chk-%d-t%d", i, j), x, n, perTxn)
			got += n
		}
	}
	t.Logf("%d records visible, %d from transactions known committed; outcomes %v", got, want, outcomes)
}

// checkerCluster is the set-up of a transaction checker: a topic of 3 partitions on
// the 3 nodes (min.insync.replicas 2), and the node coordinating the transactional
// id topic+"-0", the one the checker kills.
type checkerCluster struct {
	nodes  []*testNode
	seeds  []string
	victim *testNode
}

func newCheckerCluster(ctx context.Context, t *testing.T, nodes []*testNode, topic string) *checkerCluster {
	t.Helper()
	ck := &checkerCluster{nodes: nodes}
	for _, tn := range nodes {
		ck.seeds = append(ck.seeds, tn.addr())
	}
	adm := adminOf(t, nodes[0])
	_, err := adm.CreateTopic(ctx, 3, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, topic)
	testutil.NoError(t, err, "create topic %s", topic)
	found := adm.FindTxnCoordinators(ctx, topic+"-0")[topic+"-0"]
	testutil.NoError(t, found.Err, "find the transaction coordinator of %s-0", topic)
	ck.victim = nodes[found.NodeID-1]
	return ck
}

// survivors are the Kafka addresses of the nodes other than the victim.
func (ck *checkerCluster) survivors() []string {
	var out []string
	for _, tn := range ck.nodes {
		if tn != ck.victim {
			out = append(out, tn.addr())
		}
	}
	return out
}

// survivorAdmin is an admin client of a node other than the victim.
func (ck *checkerCluster) survivorAdmin(t *testing.T) *kadm.Client {
	for _, tn := range ck.nodes {
		if tn != ck.victim {
			return adminOf(t, tn)
		}
	}
	t.Fatal("no node survives the victim")
	return nil
}

// checkTxnVisible fails the test unless transaction name, of which the producer knows
// outcome x, shows n of its perTxn records to read_committed consistently with x: all
// if committed, none if aborted, all or none if unknown.
func checkTxnVisible(t *testing.T, name string, x txnOutcome, n, perTxn int) {
	t.Helper()
	switch {
	case x == outcomeCommitted && n != perTxn:
		t.Errorf("committed transaction %s: %d of %d records visible", name, n, perTxn)
	case x == outcomeAborted && n != 0:
		t.Errorf("aborted transaction %s: %d records visible", name, n)
	case n != 0 && n != perTxn:
		t.Errorf("transaction %s with an unknown outcome: %d of %d records visible", name, n, perTxn)
	}
}
