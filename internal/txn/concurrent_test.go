package txn_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnCommitOffset commits offset for group's partition 0 of topic inside p's open
// transaction, with raw AddOffsetsToTxn and TxnOffsetCommit requests.
func txnCommitOffset(ctx context.Context, p *kgo.Client, txnID, groupID, topic string, offset int64) error {
	pid, epoch, err := p.ProducerID(ctx)
	if err != nil {
		return err
	}
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = txnID, pid, epoch, groupID
	ar, err := add.RequestWith(ctx, p)
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(ar.ErrorCode); err != nil {
		return fmt.Errorf("AddOffsetsToTxn: %w", err)
	}
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = txnID, groupID, pid, epoch, -1
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Offset, rp.LeaderEpoch = offset, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	cr, err := req.RequestWith(ctx, p)
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(cr.Topics[0].Partitions[0].ErrorCode); err != nil {
		return fmt.Errorf("TxnOffsetCommit: %w", err)
	}
	return nil
}

// TestConcurrentTransactions runs producers concurrently, each committing or aborting
// transactions that write records and commit a group offset (the groups share
// __consumer_offsets partitions, so their transactional batches interleave there):
// read_committed sees exactly the committed records, and every group's offset is its
// producer's last committed one.
func TestConcurrentTransactions(t *testing.T) {
	const producers, txns, perTxn = 5, 8, 3
	createTopic(t, "txn-conc", 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, producers)
	for i := range producers {
		txnID := fmt.Sprintf("conc-%d", i)
		p := client(t, kgo.TransactionalID(txnID), kgo.DefaultProduceTopic("txn-conc"))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range txns {
				if err := p.BeginTransaction(); err != nil {
					errs <- err
					return
				}
				for k := range perTxn {
					v := fmt.Sprintf("p%d-t%d-r%d", i, j, k)
					if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
						errs <- err
						return
					}
				}
				if err := txnCommitOffset(ctx, p, txnID, fmt.Sprintf("conc-g%d", i), "txn-conc", int64(j)); err != nil {
					errs <- err
					return
				}
				if err := p.EndTransaction(ctx, kgo.TransactionEndTry(j%3 != 1)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	var want []string
	for i := range producers {
		for j := range txns {
			if j%3 == 1 {
				continue
			}
			for k := range perTxn {
				want = append(want, fmt.Sprintf("p%d-t%d-r%d", i, j, k))
			}
		}
	}
	sort.Strings(want)
	got := consume(t, "txn-conc", true, len(want), 15*time.Second)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("read_committed saw %d records, want the %d committed ones:\n%v", len(got), len(want), got)
	}
	adm := kadm.NewClient(client(t))
	lastCommitted := int64(txns - 1)
	if (txns-1)%3 == 1 {
		lastCommitted--
	}
	for i := range producers {
		offs, err := adm.FetchOffsets(ctx, fmt.Sprintf("conc-g%d", i))
		if err != nil {
			t.Fatal(err)
		}
		if o, ok := offs.Lookup("txn-conc", 0); !ok || o.At != lastCommitted {
			t.Fatalf("group conc-g%d offset %+v, want %d", i, o, lastCommitted)
		}
	}
}
