package kafka

// AddOffsetsToTxn: v0-4.
//
// Adds the group's __consumer_offsets partition to the transaction, so that EndTxn
// writes its marker there too (TxnOffsetCommit then goes to the group coordinator).
// v4 is v3 that may answer TRANSACTION_ABORTABLE (KIP-890), which this coordinator
// never returns; transaction-version-2 clients skip this request (TxnOffsetCommit v5
// adds the partition implicitly).

import (
	"context"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(25, 0, 4, handleAddOffsetsToTxn) }

func handleAddOffsetsToTxn(_ context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.AddOffsetsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	// With ACLs on, as Kafka: WRITE on the transactional id, READ on the group.
	if err := s.authorize(r, metadata.ACLOpWrite, auth.TransactionalID(req.TransactionalID)); err != nil {
		resp.ErrorCode = errorCode(err)
		return resp, nil
	}
	if err := s.authorize(r, metadata.ACLOpRead, auth.Group(req.Group)); err != nil {
		resp.ErrorCode = errorCode(err)
		return resp, nil
	}
	err := errNoTxnCoordinator
	if s.txns != nil {
		err = s.txns.AddOffsets(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group)
	}
	resp.ErrorCode = txnErrorCode(err, req.Version < 2)
	return resp, nil
}
