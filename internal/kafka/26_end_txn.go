package kafka

// EndTxn: v0-3.
//
// Commits (Commit true) or aborts the transaction. The answer comes once the decision
// is replicated in __transaction_state and the markers were written to every
// partition of the transaction (or, if a partition could not take its marker, are
// being retried by the coordinator). A retried EndTxn of a completed transaction
// succeeds; one of a transaction still completing is CONCURRENT_TRANSACTIONS. v4+
// (transaction version 2, KIP-890 part 2: an epoch bump per transaction) is not
// implemented.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(26, 0, 3, handleEndTxn) }

func handleEndTxn(_ context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.EndTxnRequest)
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	err := errNoTxnCoordinator
	if s.txns != nil {
		err = s.txns.EndTxn(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit)
	}
	resp.ErrorCode = txnErrorCode(err, req.Version < 2)
	return resp, nil
}
