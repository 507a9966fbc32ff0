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

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(25, 0, 4, handleAddOffsetsToTxn) }

func handleAddOffsetsToTxn(_ context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.AddOffsetsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	err := errNoTxnCoordinator
	if s.txns != nil {
		err = s.txns.AddOffsets(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group)
	}
	resp.ErrorCode = txnErrorCode(err, req.Version < 2)
	return resp, nil
}
