package kafka

// EndTxn: v0-5.
//
// Commits (Commit true) or aborts the transaction. The answer comes once the decision
// is replicated in __transaction_state and the markers were written to every
// partition of the transaction (or, if a partition could not take its marker, are
// being retried by the coordinator).
//
// v0-4 (transaction versions 0 and 1): the producer epoch stays. A retried EndTxn of
// a completed transaction succeeds; one of a transaction still completing is
// CONCURRENT_TRANSACTIONS. PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v2.
//
// v5 (transaction version 2, KIP-890 part 2): the coordinator bumps the epoch at the
// end of every transaction and writes the markers with the bumped epoch, which
// fences late writes of the ended transaction; the response carries the producer id
// and epoch to go on with (a new id when the epoch is exhausted). A retry at the
// epoch before the bump gets the same answer; an abort of an empty transaction is
// allowed and bumps the epoch too. See internal/txn/tv2.go.

import (
	"context"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(26, 0, 5, handleEndTxn) }

func handleEndTxn(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.EndTxnRequest)
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	// With ACLs on, as Kafka: WRITE on the transactional id.
	if err := s.authorize(r, metadata.ACLOpWrite, auth.TransactionalID(req.TransactionalID)); err != nil {
		resp.ErrorCode = errorCode(err)
		return resp, nil
	}
	if s.txns == nil {
		resp.ErrorCode = txnErrorCode(errNoTxnCoordinator, false)
		return resp, nil
	}
	id, err := s.txns.EndTxn(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit, req.Version >= 5)
	if resp.ErrorCode = txnErrorCode(err, req.Version < 2); err == nil && req.Version >= 5 {
		resp.ProducerID, resp.ProducerEpoch = id.ID, id.Epoch
	}
	return resp, nil
}
