package kafka

// InitProducerId: v0-5 (v5 may answer TRANSACTION_ABORTABLE, KIP-890, which this
// broker never returns).
//
// Without a transactional id, a fresh producer id is allocated from the controller
// (unique across restarts, in blocks) with epoch 0. A client that passes its current id
// and epoch (v3+, KIP-360) gets the same id with the epoch bumped, which resets its
// sequence numbers. With a transactional id the transaction coordinator answers (see
// internal/txn): the id's producer id with its epoch bumped, fencing older producers
// and aborting their ongoing transaction; PRODUCER_FENCED is INVALID_PRODUCER_EPOCH
// before v4. A KIP-360 retry at the epoch before a bump the producer caused itself
// (its own InitProducerId, or a transaction-version-2 EndTxn whose answer it lost) is
// accepted.

import (
	"context"
	"math"
	"time"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(22, 0, 5, handleInitProducerID) }

func handleInitProducerID(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	// With ACLs on, as Kafka: WRITE on the transactional id; an idempotent producer
	// needs IDEMPOTENT_WRITE on the cluster or WRITE on some topic (KIP-679).
	if req.TransactionalID != nil {
		if err := s.authorize(r, metadata.ACLOpWrite, auth.TransactionalID(*req.TransactionalID)); err != nil {
			resp.ErrorCode = errorCode(err)
			return resp, nil
		}
		return s.initTransactionalProducer(ctx, req, resp), nil
	}
	if !s.allowedQuiet(r, metadata.ACLOpIdempotentWrite, auth.Cluster) && !s.allowedAny(r, metadata.ACLOpWrite, metadata.ACLResourceTopic) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	if req.ProducerID >= 0 && req.ProducerEpoch >= 0 && req.ProducerEpoch < math.MaxInt16-1 {
		resp.ProducerID, resp.ProducerEpoch = req.ProducerID, req.ProducerEpoch+1
		return resp, nil
	}
	id, err := s.admin.AllocateProducerID(ctx)
	if err != nil {
		resp.ErrorCode = errorCode(err)
		return resp, nil
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return resp, nil
}

func (s *Server) initTransactionalProducer(ctx context.Context, req *kmsg.InitProducerIDRequest, resp *kmsg.InitProducerIDResponse) *kmsg.InitProducerIDResponse {
	if s.txns == nil {
		resp.ErrorCode = txnErrorCode(errNoTxnCoordinator, false)
		return resp
	}
	timeout := time.Duration(req.TransactionTimeoutMillis) * time.Millisecond
	id, err := s.txns.InitProducerID(ctx, *req.TransactionalID, timeout, req.ProducerID, req.ProducerEpoch)
	if resp.ErrorCode = txnErrorCode(err, req.Version < 4); err == nil {
		resp.ProducerID, resp.ProducerEpoch = id.ID, id.Epoch
	}
	return resp
}
