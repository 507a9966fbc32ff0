package server_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/testutil"
)

// unknownRun is one producer of TestTxnCheckerUnknownOutcomes.
type unknownRun struct {
	seeds  []string
	id     string // transactional id; its group is id+"-g"
	topic  string
	part   int32 // the partition whose offset its transactions commit
	txns   int
	perTxn int
	rng    *rand.Rand
	// endHook, when set, runs just before transaction j's EndTxn is sent and may
	// return the deadline for it (zero: the run's own choice).
	endHook func(j int) time.Duration
}

func (u *unknownRun) client(t *testing.T) *kgo.Client {
	cl, err := kgo.NewClient(append(testutil.KgoDebugLog(t), kgo.SeedBrokers(u.seeds...), kgo.TransactionalID(u.id), kgo.DefaultProduceTopic(u.topic),
		kgo.TransactionTimeout(3*time.Second), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.RetryTimeout(10*time.Second))...)
	if err != nil {
		t.Error(err)
	}
	return cl
}

// commitOffset commits offset for the run's group inside the open transaction
// (TxnOffsetCommit v5, which adds the offsets partition implicitly).
func (u *unknownRun) commitOffset(ctx context.Context, cl *kgo.Client, offset int64) error {
	pid, epoch, err := cl.ProducerID(ctx)
	if err != nil {
		return err
	}
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = u.id, u.id+"-g", pid, epoch
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = u.topic
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = u.part, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	return kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
}

// run ends every other transaction (and every one endHook gives a deadline) under
// a deadline of a few milliseconds, often shorter than EndTxn takes: the client
// gives up, the outcome is unknown to it, and it recovers by TryAbort (which
// re-initialises its producer id: an epoch bump that aborts what is still open)
// or, failing that, a new client.
func (u *unknownRun) run(ctx context.Context, t *testing.T) []txnOutcome {
	cl := u.client(t)
	defer func() { cl.Close() }()
	out := make([]txnOutcome, u.txns)
	for j := range u.txns {
		if ctx.Err() != nil {
			return out[:j]
		}
		commit := j%4 != 3
		err := cl.BeginTransaction()
		if err != nil { // fenced for good: a new client fences the old one in turn
			t.Logf("%s transaction %d: begin: %v", u.id, j, err)
			cl.Close()
			cl = u.client(t)
			err = cl.BeginTransaction()
		}
		for k := 0; k < u.perTxn && err == nil; k++ {
			err = cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("%s-t%d-r%d", u.id, j, k))}).FirstErr()
		}
		if err == nil {
			err = u.commitOffset(ctx, cl, int64(j+1))
		}
		if err == nil {
			err = u.end(ctx, cl, j, commit)
		}
		switch {
		case err == nil && commit:
			out[j] = outcomeCommitted
		case err == nil:
			out[j] = outcomeAborted
		default:
			t.Logf("%s transaction %d (commit %v): outcome unknown: %v", u.id, j, commit, err)
			actx, cancel := context.WithTimeout(ctx, 10*time.Second)
			if err := cl.EndTransaction(actx, kgo.TryAbort); err != nil {
				t.Logf("%s transaction %d: TryAbort: %v", u.id, j, err)
				cl.Close()
				cl = u.client(t)
			}
			cancel()
		}
	}
	return out
}

func (u *unknownRun) end(ctx context.Context, cl *kgo.Client, j int, commit bool) error {
	d := time.Duration(0)
	if u.endHook != nil {
		d = u.endHook(j)
	}
	if d == 0 && j%2 == 1 {
		d = time.Duration(u.rng.IntN(8000)) * time.Microsecond
	}
	if d == 0 {
		return cl.EndTransaction(ctx, kgo.TransactionEndTry(commit))
	}
	ectx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return cl.EndTransaction(ectx, kgo.TransactionEndTry(commit))
}

// A checker of transactions whose end the client gave up on: half of them end under a
// deadline of a few milliseconds, and the node coordinating one producer is killed
// while that producer's EndTxn is in flight. Whatever the coordinator decided, each
// such transaction is visible to read_committed entirely or not at all; transactions
// known aborted show nothing and known committed ones everything; and each producer's
// group offset, committed inside its transactions, is the one of its last visible
// transaction (offsets move with their writes, never without them).
func TestTxnCheckerUnknownOutcomes(t *testing.T) {
	const producers, txns, perTxn = 3, 16, 3
	nodes := startCluster(t, 3, "transaction.abort.timed.out.transaction.cleanup.interval.ms=200")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ck := newCheckerCluster(ctx, t, nodes, "unk")
	seeds, victim := ck.seeds, ck.victim

	var killed sync.WaitGroup
	outcomes := make([][]txnOutcome, producers)
	var wg sync.WaitGroup
	for i := range producers {
		u := &unknownRun{seeds: seeds, id: fmt.Sprintf("unk-%d", i), topic: "unk", part: int32(i), txns: txns,
			perTxn: perTxn, rng: rand.New(rand.NewPCG(uint64(i), 5))}
		if i == 0 {
			u.endHook = func(j int) time.Duration {
				if j != txns/3 {
					return 0
				}
				t.Logf("killing node %d, coordinator of unk-0, as its transaction %d ends", victim.id, j)
				killed.Add(1)
				go func() {
					defer killed.Done()
					victim.kill()
				}()
				return 300 * time.Millisecond
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			outcomes[i] = u.run(ctx, t)
		}()
	}
	wg.Wait()
	killed.Wait()

	sadm := ck.survivorAdmin(t)
	testutil.Eventually(t, 20*time.Second, func() error { return stableEverywhere(ctx, sadm, "unk") })
	seen := readCommittedCounts(ctx, t, ck.survivors(), "unk")
	unknown := map[txnOutcome]int{}
	for i, o := range outcomes {
		lastVisible := -1
		for j, x := range o {
			n := seen[fmt.Sprintf("unk-%d-t%d", i, j)]
			checkTxnVisible(t, fmt.Sprintf("unk-%d-t%d", i, j), x, n, perTxn)
			switch {
			case x == outcomeUnknown && n == perTxn:
				unknown[outcomeCommitted]++
			case x == outcomeUnknown && n == 0:
				unknown[outcomeAborted]++
			}
			if n > 0 {
				lastVisible = j
			}
		}
		checkGroupOffset(ctx, t, sadm, fmt.Sprintf("unk-%d", i), "unk", int32(i), int64(lastVisible+1))
	}
	t.Logf("unknown outcomes: %d turned out committed, %d aborted; outcomes %v", unknown[outcomeCommitted], unknown[outcomeAborted], outcomes)
	if unknown[outcomeCommitted]+unknown[outcomeAborted] == 0 {
		t.Errorf("no transaction ended with an unknown outcome: the test did not test what it is for")
	}
}

// readCommittedCounts reads topic from the start with read_committed until it has
// been quiet for a second and counts the records of each transaction ("id-tj").
func readCommittedCounts(ctx context.Context, t *testing.T, seeds []string, topic string) map[string]int {
	t.Helper()
	cons, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	testutil.NoError(t, err, "consumer")
	defer cons.Close()
	seen := map[string]int{}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := cons.PollFetches(pctx)
		cancel()
		if pctx.Err() != nil && fs.NumRecords() == 0 {
			break
		}
		fs.EachRecord(func(r *kgo.Record) {
			v := string(r.Value)
			seen[v[:strings.LastIndex(v, "-r")]]++
		})
	}
	return seen
}

// checkGroupOffset waits for group id+"-g" to have committed want on topic/partition
// (no offset when want is 0).
func checkGroupOffset(ctx context.Context, t *testing.T, adm *kadm.Client, id, topic string, partition int32, want int64) {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, func() error {
		offs, err := adm.FetchOffsets(ctx, id+"-g")
		if err != nil {
			return err
		}
		got := int64(0)
		if o, ok := offs.Lookup(topic, partition); ok && o.Err == nil {
			got = o.At
		}
		if got != want {
			return fmt.Errorf("%s: committed offset %d, want %d (one past its last visible transaction)", id, got, want)
		}
		return nil
	})
}
