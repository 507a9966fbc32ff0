package kafka

// Produce: v3-11 (v3 is the first with v2 record batches; v12+ are not implemented).
//
// Each partition's batches are validated and appended as they are (offsets and the
// leader epoch stamped in place, never decompressed), then made durable per the topic's
// flush policy, then, with acks=all, replicated to the ISR. Partitions of one request
// are processed concurrently so their fsyncs overlap. Every partition gets its own
// error code. acks=0 sends no response. A transactional produce (TransactionID set) is
// verified first (KIP-890 part 1): the partition must be part of the producer's
// ongoing transaction at its coordinator, else INVALID_TXN_STATE, so that a write
// delayed past its transaction's end never lands in the next one.

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/recordbatch"
	"github.com/runnel-io/runnel/internal/txn"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(0, 3, 11, handleProduce) }

func handleProduce(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	timeout := time.Duration(req.TimeoutMillis) * time.Millisecond
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	var wg sync.WaitGroup
	resp.Topics = make([]kmsg.ProduceResponseTopic, len(req.Topics))
	for ti := range req.Topics {
		rt := &req.Topics[ti]
		st := &resp.Topics[ti]
		*st = kmsg.NewProduceResponseTopic()
		st.Topic = rt.Topic
		st.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(rt.Partitions))
		for pi := range rt.Partitions {
			rp := &rt.Partitions[pi]
			sp := &st.Partitions[pi]
			*sp = kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			tp := metadata.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}
			if len(req.Topics) == 1 && len(rt.Partitions) == 1 {
				s.producePartition(ctx, req.TransactionID, tp, rp.Records, req.Acks, sp)
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.producePartition(ctx, req.TransactionID, tp, rp.Records, req.Acks, sp)
			}()
		}
	}
	wg.Wait()
	if req.Acks == 0 {
		return nil, nil
	}
	return resp, nil
}

func (s *Server) producePartition(ctx context.Context, txnID *string, tp metadata.TopicPartition, records []byte, acks int16, sp *kmsg.ProduceResponseTopicPartition) {
	sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
	if len(records) == 0 {
		sp.ErrorCode = kerr.CorruptMessage.Code
		return
	}
	if txnID != nil {
		if err := s.verifyTxnProduce(ctx, *txnID, tp, records); err != nil {
			sp.ErrorCode, sp.ErrorMessage = txnErrorCode(err, false), errorMessage(err)
			return
		}
	}
	p, err := s.replicas.Partition(tp)
	if err != nil {
		sp.ErrorCode = errorCode(err)
		return
	}
	info, err := p.AppendToLeader(ctx, records, acks)
	sp.LogStartOffset = p.Log().LogStartOffset()
	if err != nil {
		sp.ErrorCode = errorCode(err)
		sp.ErrorMessage = errorMessage(err)
		if info.NumBatches == 0 {
			return
		}
	}
	sp.BaseOffset = info.FirstOffset
	sp.LogAppendTime = info.LogAppendTime
}

// verifyTxnProduce checks a transactional produce with the coordinator.
func (s *Server) verifyTxnProduce(ctx context.Context, txnID string, tp metadata.TopicPartition, records []byte) error {
	b, _, err := recordbatch.Next(records, 0)
	if err != nil {
		return err
	}
	if !b.IsTransactional() {
		return fmt.Errorf("%w: a produce with transactional id %q holds a non-transactional batch", txn.ErrInvalidTxnState, txnID)
	}
	if s.txns == nil {
		return errNoTxnCoordinator
	}
	return s.txns.Verify(ctx, txnID, b.ProducerID(), b.ProducerEpoch(), tp)
}
