package server_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/runnel-io/runnel/internal/recordbatch"
	"github.com/runnel-io/runnel/internal/testutil"
)

// stableEverywhere checks that no transaction is open on topic: the last stable
// offset of every partition is its high watermark.
func stableEverywhere(ctx context.Context, adm *kadm.Client, topic string) error {
	stable, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		return err
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return err
	}
	var errs []error
	ends.Each(func(e kadm.ListedOffset) {
		s, _ := stable.Lookup(topic, e.Partition)
		if e.Err != nil || s.Err != nil || s.Offset != e.Offset {
			errs = append(errs, fmt.Errorf("partition %d: stable offset %d (%v), end %d (%v)", e.Partition, s.Offset, s.Err, e.Offset, e.Err))
		}
	})
	return errors.Join(errs...)
}

// Kill the transaction coordinator's node in the middle of a transaction over three
// partitions led by different nodes, before the producer ends it: the transaction
// completes (the new coordinator loads its state from __transaction_state) or aborts,
// and read_committed consumers see all of its records or none, never part. (Kills
// while transactions end are TestTxnCheckerUnderNodeKill's.)
func TestTxnCoordinatorKilledMidTransaction(t *testing.T) {
	nodes := startCluster(t, 3)
	seeds := []string{nodes[0].addr(), nodes[1].addr(), nodes[2].addr()}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	adm := adminOf(t, nodes[0])
	_, err := adm.CreateTopic(ctx, 3, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, "txf")
	testutil.NoError(t, err, "create topic")

	prod, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.TransactionalID("txf-id"), kgo.DefaultProduceTopic("txf"),
		kgo.TransactionTimeout(20*time.Second), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	testutil.NoError(t, err, "producer")
	defer prod.Close()
	// A first transaction commits normally, across the three partitions (the
	// produce path verifies with a remote coordinator for two of them).
	const n = 30
	produceTxn := func(prefix string) {
		t.Helper()
		testutil.NoError(t, prod.BeginTransaction(), "begin")
		for i := range n {
			testutil.NoError(t, prod.ProduceSync(ctx, &kgo.Record{Value: []byte(prefix + strconv.Itoa(i))}).FirstErr(), "produce")
		}
	}
	produceTxn("a")
	testutil.NoError(t, prod.EndTransaction(ctx, kgo.TryCommit), "commit")

	produceTxn("b")
	found := adm.FindTxnCoordinators(ctx, "txf-id")["txf-id"]
	testutil.NoError(t, found.Err, "find transaction coordinator")
	victim := nodes[found.NodeID-1]
	t.Logf("killing transaction coordinator node %d", found.NodeID)
	start := time.Now()
	victim.kill()
	defer func() { t.Logf("from the kill to the end: %v", time.Since(start)) }()
	endErr := prod.EndTransaction(ctx, kgo.TryCommit)
	killed := time.Now()
	t.Logf("EndTransaction: %v", endErr)

	var survivors []string
	for _, tn := range nodes {
		if tn != victim {
			survivors = append(survivors, tn.addr())
		}
	}
	// The new coordinator serves the id: a new producer fences the old one (aborting
	// its transaction if it is still open) and commits.
	prod2, err := kgo.NewClient(kgo.SeedBrokers(survivors...), kgo.TransactionalID("txf-id"), kgo.DefaultProduceTopic("txf"),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	testutil.NoError(t, err, "second producer")
	defer prod2.Close()
	prod = prod2
	produceTxn("c")
	testutil.NoError(t, prod.EndTransaction(ctx, kgo.TryCommit), "commit on the new coordinator")
	sadm := adminOf(t, nodes[(found.NodeID)%3])
	testutil.Eventually(t, 30*time.Second, func() error { return stableEverywhere(ctx, sadm, "txf") })
	t.Logf("stable %v after EndTransaction returned", time.Since(killed))

	cons, err := kgo.NewClient(kgo.SeedBrokers(survivors...), kgo.ConsumeTopics("txf"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	testutil.NoError(t, err, "consumer")
	defer cons.Close()
	counts := map[byte]int{}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) && counts['a']+counts['b']+counts['c'] < 3*n {
		pctx, pcancel := context.WithDeadline(ctx, deadline)
		cons.PollFetches(pctx).EachRecord(func(r *kgo.Record) { counts[r.Value[0]]++ })
		pcancel()
	}
	if counts['a'] != n || counts['c'] != n {
		t.Fatalf("read_committed saw %d and %d records of the committed transactions, want %d", counts['a'], counts['c'], n)
	}
	switch {
	case counts['b'] != 0 && counts['b'] != n:
		t.Fatalf("read_committed saw %d of the %d records of the transaction open at the kill", counts['b'], n)
	case endErr == nil && counts['b'] != n:
		t.Fatalf("EndTransaction committed but read_committed saw %d of %d records", counts['b'], n)
	}
	t.Logf("the transaction open at the kill was %s", map[bool]string{true: "committed", false: "aborted"}[counts['b'] == n])
}

// A transactional write to a partition that was never added to the transaction is
// refused by a partition leader whose transaction coordinator is another node
// (txn.Config.RemoteVerify, KIP-890) up to Produce v11; from v12 (transaction version
// 2) the leader adds it at the coordinator (txn.Config.RemoteAdd), and after an
// EndTxn v5 bumped the epoch a write at the old epoch is fenced.
func TestRemoteVerifyRefusesUnaddedPartition(t *testing.T) {
	nodes := startCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := adminOf(t, nodes[0])
	_, err := adm.CreateTopic(ctx, 3, 3, nil, "rv")
	testutil.NoError(t, err, "create topic")
	cl, err := kgo.NewClient(kgo.SeedBrokers(nodes[0].addr()), kgo.RetryTimeout(20*time.Second))
	testutil.NoError(t, err, "client")
	defer cl.Close()
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID, init.TransactionTimeoutMillis = kmsg.StringPtr("rv-id"), 60000
	ir, err := init.RequestWith(ctx, cl)
	testutil.NoError(t, err, "InitProducerId")
	testutil.NoError(t, kerr.ErrorForCode(ir.ErrorCode), "InitProducerId")
	found := adm.FindTxnCoordinators(ctx, "rv-id")["rv-id"]
	testutil.NoError(t, found.Err, "find transaction coordinator")

	md, err := adm.Metadata(ctx, "rv")
	testutil.NoError(t, err, "metadata")
	partition, leader := int32(-1), int32(-1)
	for _, p := range md.Topics["rv"].Partitions {
		if p.Leader != found.NodeID {
			partition, leader = p.Partition, p.Leader
		}
	}
	if partition < 0 {
		t.Skip("every partition is led by the transaction coordinator")
	}
	produce := func(version, epoch int16, seq int32) int16 {
		req := kmsg.NewPtrProduceRequest()
		req.Version = version
		req.TransactionID, req.Acks, req.TimeoutMillis = kmsg.StringPtr("rv-id"), -1, 10000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "rv"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = partition, strayBatch(ir.ProducerID, epoch, seq)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return requestAt(t, nodes[leader-1], req).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
	}
	testutil.Equal(t, produce(11, ir.ProducerEpoch, 0), kerr.InvalidTxnState.Code, "produce v11 to partition %d (leader %d, coordinator %d) outside the transaction", partition, leader, found.NodeID)
	testutil.Equal(t, produce(12, ir.ProducerEpoch, 0), int16(0), "produce v12 to partition %d (leader %d, coordinator %d): the implicit add", partition, leader, found.NodeID)
	desc, err := adm.DescribeTransactions(ctx, "rv-id")
	testutil.NoError(t, err, "describe")
	d := desc["rv-id"]
	testutil.Equal(t, d.State, "Ongoing", "state after the implicit add")
	testutil.Equal(t, len(d.Topics["rv"]), 1, "partitions of the transaction %v", d.Topics)

	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = "rv-id", ir.ProducerID, ir.ProducerEpoch, false
	er, err := end.RequestWith(ctx, cl)
	testutil.NoError(t, err, "EndTxn")
	testutil.NoError(t, kerr.ErrorForCode(er.ErrorCode), "EndTxn")
	testutil.Equal(t, er.ProducerEpoch, ir.ProducerEpoch+1, "epoch after EndTxn v%d", er.Version)
	testutil.Equal(t, produce(12, ir.ProducerEpoch, 1), kerr.InvalidProducerEpoch.Code, "late write at the ended transaction's epoch")
	testutil.Equal(t, produce(12, er.ProducerEpoch, 0), int16(0), "first write of the next transaction")
}

// strayBatch is a one-record transactional batch of producer pid.
func strayBatch(pid int64, epoch int16, seq int32) []byte {
	b := recordbatch.NewBuilder(128)
	b.Add(nil, []byte("stray"), nil, time.Now().UnixMilli())
	batch := append([]byte(nil), b.Build()...)
	binary.BigEndian.PutUint16(batch[21:], recordbatch.TransactionalFlag)
	binary.BigEndian.PutUint64(batch[43:], uint64(pid))
	binary.BigEndian.PutUint16(batch[51:], uint16(epoch))
	binary.BigEndian.PutUint32(batch[53:], uint32(seq))
	binary.BigEndian.PutUint32(batch[17:], recordbatch.Batch(batch).ComputeCRC())
	return batch
}

// requestAt sends req to n itself at req's version (a client capped there).
func requestAt(t *testing.T, n *testNode, req kmsg.Request) kmsg.Response {
	t.Helper()
	v := kversion.Stable()
	v.SetMaxKeyVersion(req.Key(), req.GetVersion())
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.addr()), kgo.MaxVersions(v))
	testutil.NoError(t, err, "kgo.NewClient")
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	testutil.NoError(t, err, "%s to node %d", kmsg.NameForKey(req.Key()), n.id)
	if resp.GetVersion() != req.GetVersion() {
		t.Fatalf("%s went out at v%d, not v%d", kmsg.NameForKey(req.Key()), resp.GetVersion(), req.GetVersion())
	}
	return resp
}

// Kill the group coordinator between a TxnOffsetCommit and the EndTxn that commits it:
// the new coordinator of the group replays the transactional offset records as
// pending, and the COMMIT marker the transaction coordinator then writes to the
// partition's new leader makes them the group's offsets, together with the
// transaction's output.
func TestTxnOffsetsSurviveGroupCoordinatorKill(t *testing.T) {
	nodes := startCluster(t, 3)
	seeds := []string{nodes[0].addr(), nodes[1].addr(), nodes[2].addr()}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	adm := adminOf(t, nodes[0])
	isr2 := map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}
	for _, topic := range []string{"eo-in", "eo-out"} {
		_, err := adm.CreateTopic(ctx, 1, 3, isr2, topic)
		testutil.NoError(t, err, "create topic %s", topic)
	}
	const groupID = "eo-group"
	gc := adm.FindGroupCoordinators(ctx, groupID)[groupID]
	testutil.NoError(t, gc.Err, "find group coordinator")
	// A transactional id coordinated elsewhere, so that only the group moves.
	txnID := ""
	for i := 0; i < 20 && txnID == ""; i++ {
		id := "eo-" + strconv.Itoa(i)
		if tc := adm.FindTxnCoordinators(ctx, id)[id]; tc.Err == nil && tc.NodeID != gc.NodeID {
			txnID = id
		}
	}
	if txnID == "" {
		t.Fatal("every transactional id tried is coordinated by the group's coordinator")
	}

	prod, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.TransactionalID(txnID), kgo.DefaultProduceTopic("eo-out"),
		kgo.TransactionTimeout(30*time.Second))
	testutil.NoError(t, err, "producer")
	defer prod.Close()
	testutil.NoError(t, prod.BeginTransaction(), "begin")
	for i := range 5 {
		testutil.NoError(t, prod.ProduceSync(ctx, &kgo.Record{Value: []byte("out" + strconv.Itoa(i))}).FirstErr(), "produce")
	}
	pid, epoch, err := prod.ProducerID(ctx)
	testutil.NoError(t, err, "producer id")
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = txnID, pid, epoch, groupID
	addResp, err := add.RequestWith(ctx, prod)
	testutil.NoError(t, err, "AddOffsetsToTxn")
	testutil.NoError(t, kerr.ErrorForCode(addResp.ErrorCode), "AddOffsetsToTxn")
	commit := kmsg.NewPtrTxnOffsetCommitRequest()
	commit.TransactionalID, commit.Group, commit.ProducerID, commit.ProducerEpoch = txnID, groupID, pid, epoch
	commit.Generation = -1
	ct := kmsg.NewTxnOffsetCommitRequestTopic()
	ct.Topic = "eo-in"
	cp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	cp.Partition, cp.Offset, cp.LeaderEpoch = 0, 42, -1
	ct.Partitions = append(ct.Partitions, cp)
	commit.Topics = append(commit.Topics, ct)
	commitResp, err := commit.RequestWith(ctx, prod)
	testutil.NoError(t, err, "TxnOffsetCommit")
	testutil.NoError(t, kerr.ErrorForCode(commitResp.Topics[0].Partitions[0].ErrorCode), "TxnOffsetCommit")

	victim := nodes[gc.NodeID-1]
	t.Logf("killing group coordinator node %d (transaction coordinator elsewhere)", gc.NodeID)
	victim.kill()
	var survivor *testNode
	for _, tn := range nodes {
		if tn != victim {
			survivor = tn
		}
	}
	// A fresh client each time: the point is what the cluster answers, not how long
	// one client caches a dead coordinator.
	// Before the commit the offset is pending: the group has none.
	testutil.Eventually(t, 20*time.Second, func() error {
		offs, err := adminOf(t, survivor).FetchOffsets(ctx, groupID)
		if err != nil {
			return err
		}
		if o, ok := offs.Lookup("eo-in", 0); ok && o.Err == nil && o.At >= 0 {
			t.Fatalf("pending transactional offset %d visible before the commit", o.At)
		}
		return nil
	})
	testutil.NoError(t, prod.EndTransaction(ctx, kgo.TryCommit), "commit")
	testutil.Eventually(t, 20*time.Second, func() error {
		offs, err := adminOf(t, survivor).FetchOffsets(ctx, groupID)
		if err != nil {
			return err
		}
		if o, ok := offs.Lookup("eo-in", 0); !ok || o.Err != nil || o.At != 42 {
			return fmt.Errorf("group offset %+v, want 42", o)
		}
		return nil
	})
	testutil.Eventually(t, 20*time.Second, func() error { return stableEverywhere(ctx, adminOf(t, survivor), "eo-out") })
}
