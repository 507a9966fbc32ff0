package kafka

// AddOffsetsToTxn: v0-3.
//
// Adds the group's __consumer_offsets partition to the transaction, so that EndTxn
// writes its marker there too (TxnOffsetCommit then goes to the group coordinator).
// v4 (transaction version 2, KIP-890 part 2) is not implemented.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(25, 0, 3, handleAddOffsetsToTxn) }

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
