package kafka

// DescribeTransactions: v0.
//
// Describes each transactional id this node coordinates: state, producer id and
// epoch, timeout, start time and partitions. Ids coordinated elsewhere get
// NOT_COORDINATOR; unknown ids TRANSACTIONAL_ID_NOT_FOUND.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/txn"
)

func init() { regKey(65, 0, 0, handleDescribeTransactions) }

func handleDescribeTransactions(_ context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.DescribeTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	for _, id := range req.TransactionalIDs {
		rt := kmsg.NewDescribeTransactionsResponseTransactionState()
		rt.TransactionalID = id
		// With ACLs on, as Kafka: DESCRIBE on the transactional id.
		if err := s.authorize(r, metadata.ACLOpDescribe, auth.TransactionalID(id)); err != nil {
			rt.ErrorCode = errorCode(err)
			resp.TransactionStates = append(resp.TransactionStates, rt)
			continue
		}
		d, err := txn.Description{}, error(errNoTxnCoordinator)
		if s.txns != nil {
			d, err = s.txns.Describe(id)
		}
		if rt.ErrorCode = txnErrorCode(err, false); err == nil {
			fillDescription(&rt, d)
		}
		resp.TransactionStates = append(resp.TransactionStates, rt)
	}
	return resp, nil
}

func fillDescription(rt *kmsg.DescribeTransactionsResponseTransactionState, d txn.Description) {
	rt.State = d.State.String()
	rt.TimeoutMillis = int32(d.Timeout.Milliseconds())
	rt.StartTimestamp = -1
	if !d.Start.IsZero() {
		rt.StartTimestamp = d.Start.UnixMilli()
	}
	rt.ProducerID, rt.ProducerEpoch = d.ProducerID, d.ProducerEpoch
	for _, tp := range d.Partitions {
		if n := len(rt.Topics); n == 0 || rt.Topics[n-1].Topic != tp.Topic {
			t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
			t.Topic = tp.Topic
			rt.Topics = append(rt.Topics, t)
		}
		rt.Topics[len(rt.Topics)-1].Partitions = append(rt.Topics[len(rt.Topics)-1].Partitions, tp.Partition)
	}
}
