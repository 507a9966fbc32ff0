package kafka

// AddPartitionsToTxn: v0-5.
//
// v0-3 (producers): adds the partitions to the transactional id's transaction at its
// coordinator, one error code for every partition of the request (Kafka answers
// OPERATION_NOT_ATTEMPTED for the others when one fails; here all share the error).
// v4-5 (brokers, KIP-890): a batch of transactions; VerifyOnly checks that each
// partition is already part of the ongoing transaction without adding it
// (INVALID_TXN_STATE if not): the produce path of a partition leader uses it against
// a remote coordinator for transaction version 1 (Produce v11 and older). Without
// VerifyOnly the partitions are added: transaction version 2's implicit add by a
// partition leader (Produce v12) or a group coordinator (TxnOffsetCommit v5). v5 only
// allows TRANSACTION_ABORTABLE in the answer, which this coordinator never returns.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
)

func init() { regKey(24, 0, 5, handleAddPartitionsToTxn) }

func handleAddPartitionsToTxn(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.AddPartitionsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	if req.Version >= 4 {
		// Batched verification is sent by nodes (KIP-890): CLUSTER_ACTION, as Kafka.
		if err := s.authorize(r, metadata.ACLOpClusterAction, auth.Cluster); err != nil {
			resp.ErrorCode = errorCode(err)
			return resp, nil
		}
		for _, t := range req.Transactions {
			resp.Transactions = append(resp.Transactions, s.addPartitionsBatched(ctx, t))
		}
		return resp, nil
	}
	var tps []metadata.TopicPartition
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			tps = append(tps, metadata.TopicPartition{Topic: t.Topic, Partition: p})
		}
	}
	codeOf, denied := s.addPartitionsDenials(r, req)
	if denied {
		for _, t := range req.Topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, codeOf(t.Topic)
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	err := errNoTxnCoordinator
	if s.txns != nil {
		err = s.txns.AddPartitions(req.TransactionalID, req.ProducerID, req.ProducerEpoch, tps)
	}
	code := txnErrorCode(err, req.Version < 2)
	for _, t := range req.Topics {
		rt := kmsg.NewAddPartitionsToTxnResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// addPartitionsBatched answers one transaction of a v4 request.
// addPartitionsDenials checks a v0-3 AddPartitionsToTxn as Kafka: WRITE on the
// transactional id (else every partition answers TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
// and on each topic (TOPIC_AUTHORIZATION_FAILED, the other partitions then
// OPERATION_NOT_ATTEMPTED). It reports whether anything was denied, with the code of
// each topic; nothing is added to the transaction then.
func (s *Server) addPartitionsDenials(r *request, req *kmsg.AddPartitionsToTxnRequest) (func(topic string) int16, bool) {
	if s.authz == nil {
		return nil, false
	}
	if err := s.authorize(r, metadata.ACLOpWrite, auth.TransactionalID(req.TransactionalID)); err != nil {
		return func(string) int16 { return errorCode(err) }, true
	}
	check := s.topicCheck(r, metadata.ACLOpWrite)
	codes := map[string]int16{}
	denied := false
	for _, t := range req.Topics {
		if err := check(t.Topic); err != nil {
			codes[t.Topic], denied = errorCode(err), true
		}
	}
	return func(topic string) int16 {
		if c, ok := codes[topic]; ok {
			return c
		}
		return kerr.OperationNotAttempted.Code
	}, denied
}

func (s *Server) addPartitionsBatched(ctx context.Context, t kmsg.AddPartitionsToTxnRequestTransaction) kmsg.AddPartitionsToTxnResponseTransaction {
	out := kmsg.NewAddPartitionsToTxnResponseTransaction()
	out.TransactionalID = t.TransactionalID
	var tps []metadata.TopicPartition
	for _, rt := range t.Topics {
		for _, p := range rt.Partitions {
			tps = append(tps, metadata.TopicPartition{Topic: rt.Topic, Partition: p})
		}
	}
	codes := make([]int16, len(tps))
	switch {
	case s.txns == nil:
		for i := range codes {
			codes[i] = txnErrorCode(errNoTxnCoordinator, false)
		}
	case t.VerifyOnly:
		for i, tp := range tps {
			codes[i] = txnErrorCode(s.txns.Verify(ctx, t.TransactionalID, t.ProducerID, t.ProducerEpoch, tp), false)
		}
	default:
		code := txnErrorCode(s.txns.AddPartitions(t.TransactionalID, t.ProducerID, t.ProducerEpoch, tps), false)
		for i := range codes {
			codes[i] = code
		}
	}
	i := 0
	for _, rt := range t.Topics {
		ot := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
		ot.Topic = rt.Topic
		for _, p := range rt.Partitions {
			op := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
			op.Partition, op.ErrorCode = p, codes[i]
			ot.Partitions = append(ot.Partitions, op)
			i++
		}
		out.Topics = append(out.Topics, ot)
	}
	return out
}
