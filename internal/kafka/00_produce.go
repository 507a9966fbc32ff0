package kafka

// Produce: v3-11 (v3 is the first with v2 record batches; v12+ are not implemented).
//
// Each partition's batches are validated and appended as they are (offsets and the
// leader epoch stamped in place, never decompressed), then made durable per the topic's
// flush policy, then, with acks=all, replicated to the ISR. Partitions of one request
// are processed concurrently so their fsyncs overlap. Every partition gets its own
// error code. acks=0 sends no response. Transactional produce is not implemented yet
// and is answered TRANSACTIONAL_ID_AUTHORIZATION_FAILED per partition.

import (
	"context"
	"sync"
	"time"

	"github.com/runnel-io/runnel/internal/metadata"
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
			if req.TransactionID != nil {
				sp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
				continue
			}
			tp := metadata.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}
			if len(req.Topics) == 1 && len(rt.Partitions) == 1 {
				s.producePartition(ctx, tp, rp.Records, req.Acks, sp)
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.producePartition(ctx, tp, rp.Records, req.Acks, sp)
			}()
		}
	}
	wg.Wait()
	if req.Acks == 0 {
		return nil, nil
	}
	return resp, nil
}

func (s *Server) producePartition(ctx context.Context, tp metadata.TopicPartition, records []byte, acks int16, sp *kmsg.ProduceResponseTopicPartition) {
	sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
	if len(records) == 0 {
		sp.ErrorCode = kerr.CorruptMessage.Code
		return
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
