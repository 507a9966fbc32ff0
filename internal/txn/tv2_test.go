package txn_test

import (
	"context"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/runnel-io/runnel/internal/recordbatch"
)

// describeTxn returns the producer id and epoch the coordinator holds for id.
func describeTxn(t *testing.T, id string) (int64, int16, string) {
	t.Helper()
	desc, err := kadm.NewClient(client(t)).DescribeTransactions(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	d, ok := desc[id]
	if !ok || d.Err != nil {
		t.Fatalf("describe %s: %+v", id, d)
	}
	return d.ProducerID, d.ProducerEpoch, d.State
}

// txnBatch is a one-record transactional batch of producer pid at epoch, sequence seq.
func txnBatch(value string, pid int64, epoch int16, seq int32) []byte {
	b := recordbatch.NewBuilder(128)
	b.Add(nil, []byte(value), nil, time.Now().UnixMilli())
	batch := append([]byte(nil), b.Build()...)
	binary.BigEndian.PutUint16(batch[21:], recordbatch.TransactionalFlag)
	binary.BigEndian.PutUint64(batch[43:], uint64(pid))
	binary.BigEndian.PutUint16(batch[51:], uint16(epoch))
	binary.BigEndian.PutUint32(batch[53:], uint32(seq))
	binary.BigEndian.PutUint32(batch[17:], recordbatch.Batch(batch).ComputeCRC())
	return batch
}

// rawProduce sends one transactional batch to partition 0 of topic and returns the
// partition's error code and the request version used.
func rawProduce(t *testing.T, cl *kgo.Client, txnID, topic string, batch []byte) (int16, int16) {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.TransactionID, req.Acks, req.TimeoutMillis = kmsg.StringPtr(txnID), -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = 0, batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0].ErrorCode, resp.Version
}

// rawEndTxn sends EndTxn at the negotiated version (v5 against this broker).
func rawEndTxn(t *testing.T, cl *kgo.Client, txnID string, pid int64, epoch int16, commit bool) *kmsg.EndTxnResponse {
	t.Helper()
	req := kmsg.NewPtrEndTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = txnID, pid, epoch, commit
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// wantCode fails unless got is want's code (nil: no error).
func wantCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	code := int16(0)
	if want != nil {
		code = want.Code
	}
	if got != code {
		t.Fatalf("%s: error %v, want %v", what, kerr.ErrorForCode(got), want)
	}
}

// TestTV2ApiVersionsAdvertisesTransactionVersion2: the finalized feature that makes
// clients use transaction version 2.
func TestTV2ApiVersionsAdvertisesTransactionVersion2(t *testing.T) {
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(context.Background(), client(t))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range resp.FinalizedFeatures {
		found = found || f.Name == "transaction.version" && f.MaxVersionLevel == 2
	}
	if !found || resp.FinalizedFeaturesEpoch < 0 {
		t.Fatalf("finalized features %+v (epoch %d), want transaction.version 2", resp.FinalizedFeatures, resp.FinalizedFeaturesEpoch)
	}
	max := map[int16]int16{}
	for _, k := range resp.ApiKeys {
		max[k.ApiKey] = k.MaxVersion
	}
	for key, v := range map[kmsg.Key]int16{kmsg.Produce: 12, kmsg.EndTxn: 5, kmsg.TxnOffsetCommit: 5, kmsg.AddPartitionsToTxn: 5} {
		if max[int16(key)] != v {
			t.Errorf("%s max version %d, want %d", key.Name(), max[int16(key)], v)
		}
	}
}

// TestTV2EpochBumpPerTransaction: franz-go, seeing transaction.version 2, ends every
// transaction with EndTxn v5; the coordinator bumps the epoch each time, a late
// write and a late offset commit of an ended transaction's epoch are fenced, a
// retried EndTxn at the old epoch gets the first answer, and the producer goes on.
func TestTV2EpochBumpPerTransaction(t *testing.T) {
	const topic, id = "tv2-bump", "tv2-bump"
	createTopic(t, topic, 1)
	p := client(t, kgo.TransactionalID(id), kgo.DefaultProduceTopic(topic))
	raw := client(t)
	// franz-go learns the feature from its first responses: its first transaction
	// is still of version 1, after which it re-initialises its producer id.
	for _, v := range []string{"c0", "c1"} {
		if err := transact(t, p, topic, true, v); err != nil {
			t.Fatal(err)
		}
	}
	pid, e1, state := describeTxn(t, id)
	if state != "CompleteCommit" {
		t.Fatalf("state %s after a commit", state)
	}
	if err := transact(t, p, topic, false, "a0"); err != nil {
		t.Fatal(err)
	}
	if _, e2, _ := describeTxn(t, id); e2 != e1+1 {
		t.Fatalf("epoch %d after an abort, want %d: franz-go did not use transaction version 2 or the coordinator did not bump", e2, e1+1)
	}
	if err := transact(t, p, topic, true, "c2"); err != nil {
		t.Fatal(err)
	}
	_, e3, _ := describeTxn(t, id)
	if e3 != e1+2 {
		t.Fatalf("epoch %d after the third transaction, want %d", e3, e1+2)
	}

	// A zombie write of the first transaction (its epoch is now two behind).
	code, v := rawProduce(t, raw, id, topic, txnBatch("zombie", pid, e1-1, 7))
	if v < 12 {
		t.Fatalf("raw produce went out at v%d", v)
	}
	wantCode(t, "late write at an ended transaction's epoch", code, kerr.InvalidProducerEpoch)

	// EndTxn retried at the epoch before the last bump: the same answer.
	r := rawEndTxn(t, raw, id, pid, e3-1, true)
	wantCode(t, "retried commit", r.ErrorCode, nil)
	if r.ProducerID != pid || r.ProducerEpoch != e3 {
		t.Fatalf("retried commit answered producer %d epoch %d, want %d %d", r.ProducerID, r.ProducerEpoch, pid, e3)
	}
	wantCode(t, "abort retried after a commit", rawEndTxn(t, raw, id, pid, e3-1, false).ErrorCode, kerr.InvalidTxnState)
	wantCode(t, "EndTxn two epochs behind", rawEndTxn(t, raw, id, pid, e3-2, true).ErrorCode, kerr.ProducerFenced)
	if _, e, _ := describeTxn(t, id); e != e3 {
		t.Fatalf("retries moved the epoch to %d", e)
	}

	// The producer goes on with its epoch.
	if err := transact(t, p, topic, true, "c3"); err != nil {
		t.Fatal(err)
	}
	if got := consume(t, topic, true, 4, 10*time.Second); strings.Join(got, ",") != "c0,c1,c2,c3" {
		t.Fatalf("read_committed saw %v", got)
	}
	// An abort of an empty transaction is allowed and bumps the epoch.
	_, e4, _ := describeTxn(t, id)
	r = rawEndTxn(t, raw, id, pid, e4, false)
	wantCode(t, "empty abort", r.ErrorCode, nil)
	if r.ProducerEpoch != e4+1 {
		t.Fatalf("empty abort answered epoch %d, want %d", r.ProducerEpoch, e4+1)
	}
	wantCode(t, "commit of nothing", rawEndTxn(t, raw, id, pid, e4+1, true).ErrorCode, kerr.InvalidTxnState)
}

// TestTV2LateOffsetCommitFenced: TxnOffsetCommit v5 adds the offsets partition
// implicitly; one at the epoch of an ended transaction is fenced.
func TestTV2LateOffsetCommitFenced(t *testing.T) {
	const topic, id, group = "tv2-offsets", "tv2-offsets", "tv2-offsets-g"
	createTopic(t, topic, 1)
	p := client(t, kgo.TransactionalID(id), kgo.DefaultProduceTopic(topic))
	if err := transact(t, p, topic, true, "x"); err != nil {
		t.Fatal(err)
	}
	pid, epoch, _ := describeTxn(t, id)
	commit := func(epoch int16, offset int64) int16 {
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = id, group, pid, epoch
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 0, offset
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(context.Background(), client(t))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Version < 5 {
			t.Fatalf("TxnOffsetCommit went out at v%d", resp.Version)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	wantCode(t, "offset commit at an ended transaction's epoch", commit(epoch-1, 5), kerr.ProducerFenced)
	// At the current epoch the commit opens a transaction (no AddOffsetsToTxn).
	wantCode(t, "offset commit at the current epoch", commit(epoch, 1), nil)
	if _, _, state := describeTxn(t, id); state != "Ongoing" {
		t.Fatalf("state %s after an implicit add of the offsets partition", state)
	}
	raw := client(t)
	r := rawEndTxn(t, raw, id, pid, epoch, true)
	wantCode(t, "commit of the offsets", r.ErrorCode, nil)
	offs, err := kadm.NewClient(raw).FetchOffsets(context.Background(), group)
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := offs.Lookup(topic, 0); !ok || o.At != 1 {
		t.Fatalf("committed offset %+v, want 1", o)
	}
}

// TestTV1ClientKeepsItsEpoch: a franz-go client capped below EndTxn v5 keeps
// transaction version 1: explicit AddPartitionsToTxn, the same epoch across
// transactions, and its commits and aborts work as before.
func TestTV1ClientKeepsItsEpoch(t *testing.T) {
	const topic, id = "tv1-epoch", "tv1-epoch"
	createTopic(t, topic, 1)
	v := kversion.Stable()
	v.SetMaxKeyVersion(int16(kmsg.EndTxn), 4)
	p := client(t, kgo.TransactionalID(id), kgo.DefaultProduceTopic(topic), kgo.MaxVersions(v))
	for i, commit := range []bool{true, false, true} {
		if err := transact(t, p, topic, commit, "v"+string(rune('0'+i))); err != nil {
			t.Fatal(err)
		}
	}
	_, epoch, state := describeTxn(t, id)
	if epoch != 0 || state != "CompleteCommit" {
		t.Fatalf("epoch %d state %s after three transaction-version-1 transactions, want 0 CompleteCommit", epoch, state)
	}
	if got := consume(t, topic, true, 2, 10*time.Second); strings.Join(got, ",") != "v0,v2" {
		t.Fatalf("read_committed saw %v", got)
	}
}

// TestTV2InitProducerIDRetryAfterEndTxn: a producer that lost EndTxn v5's answer
// re-initialises with the epoch it had (KIP-360, what franz-go does after an
// unconfirmed end): accepted, while an older epoch is fenced.
func TestTV2InitProducerIDRetryAfterEndTxn(t *testing.T) {
	const topic, id = "tv2-init", "tv2-init"
	createTopic(t, topic, 1)
	p := client(t, kgo.TransactionalID(id), kgo.DefaultProduceTopic(topic))
	for _, v := range []string{"w", "x"} { // the second runs with transaction version 2
		if err := transact(t, p, topic, true, v); err != nil {
			t.Fatal(err)
		}
	}
	pid, epoch, _ := describeTxn(t, id)
	init := func(epoch int16) *kmsg.InitProducerIDResponse {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr(id), 60000
		req.ProducerID, req.ProducerEpoch = pid, epoch
		resp, err := req.RequestWith(context.Background(), client(t))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	wantCode(t, "InitProducerId two epochs behind", init(epoch-2).ErrorCode, kerr.ProducerFenced)
	r := init(epoch - 1)
	wantCode(t, "InitProducerId at the epoch before EndTxn's bump", r.ErrorCode, nil)
	if r.ProducerID != pid || r.ProducerEpoch != epoch+1 {
		t.Fatalf("InitProducerId answered %d/%d, want %d/%d", r.ProducerID, r.ProducerEpoch, pid, epoch+1)
	}
}
