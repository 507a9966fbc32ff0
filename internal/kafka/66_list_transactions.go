package kafka

// ListTransactions: v0-1.
//
// Lists the transactional ids this node coordinates, filtered by state names (Kafka's:
// Empty, Ongoing, PrepareCommit...) and producer ids; v1's DurationFilterMillis keeps
// the transactions running longer than it. An unknown state name lists nothing for
// it and is reported in UnknownStateFilters.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/txn"
)

func init() { regKey(66, 0, 1, handleListTransactions) }

func handleListTransactions(_ context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.ListTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	if s.txns == nil {
		resp.ErrorCode = txnErrorCode(errNoTxnCoordinator, false)
		return resp, nil
	}
	var states []txn.State
	for _, name := range req.StateFilters {
		st, err := kmsg.ParseTransactionState(name)
		if err != nil {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, name)
			continue
		}
		states = append(states, st)
	}
	if len(req.StateFilters) > 0 && len(states) == 0 {
		return resp, nil
	}
	for _, d := range s.txns.List(states, req.ProducerIDFilters) {
		if req.DurationFilterMillis > 0 && (d.Start.IsZero() || time.Since(d.Start) < time.Duration(req.DurationFilterMillis)*time.Millisecond) {
			continue
		}
		// With ACLs on, as Kafka: only the transactional ids the principal may DESCRIBE.
		if !s.allowedQuiet(r, metadata.ACLOpDescribe, auth.TransactionalID(d.TransactionalID)) {
			continue
		}
		ts := kmsg.NewListTransactionsResponseTransactionState()
		ts.TransactionalID, ts.ProducerID, ts.TransactionState = d.TransactionalID, d.ProducerID, d.State.String()
		resp.TransactionStates = append(resp.TransactionStates, ts)
	}
	return resp, nil
}
