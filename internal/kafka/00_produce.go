package kafka

// Produce: v3-12 (v3 is the first with v2 record batches; v13+, topic ids, are not
// implemented).
//
// Each partition's batches are validated and appended as they are (offsets and the
// leader epoch stamped in place, never decompressed), then made durable per the topic's
// flush policy, then, with acks=all, replicated to the ISR. Partitions of one request
// are processed concurrently so their fsyncs overlap. Every partition gets its own
// error code. acks=0 sends no response. A transactional produce (TransactionID set) is
// verified first (KIP-890 part 1): the partition must be part of the producer's
// ongoing transaction at its coordinator, else INVALID_TXN_STATE, so that a write
// delayed past its transaction's end never lands in the next one. From v12
// (transaction version 2, KIP-890 part 2) the partition is added to the transaction
// implicitly instead (see verifyTxnProduce in txn.go). With ACLs on, each topic needs
// WRITE (TOPIC_AUTHORIZATION_FAILED on its partitions, which are not appended) and a
// transactional produce WRITE on its transactional id (authorize.go).

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/recordbatch"
	"github.com/runnel-io/runnel/internal/replica"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKeyOverlapping(kmsg.Produce.Int16(), 3, 12, handleProduce) }

func handleProduce(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	start := time.Now()
	stages := s.metrics.produceRecorder()
	stages.started(r, start)
	req := r.kreq.(*kmsg.ProduceRequest)
	timeout := time.Duration(req.TimeoutMillis) * time.Millisecond
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, parts := s.producePartitions(r, req)
	// Phase 1, in this request's turn on its connection: append. The connection's
	// earlier requests have taken effect first (an earlier produce has appended), so
	// that pipelined batches of one producer land in the order it sent them.
	err := r.turn.wait(ctx)
	stages.observe(StageOrder, time.Since(start))
	s.appendParts(ctx, req, parts, err, stages)
	r.appendDone()
	// Phase 2, concurrently with the connection's later requests (pipeline.go):
	// durability and replication.
	forEachPart(parts, func(pp *producePart) { s.completePart(ctx, req.Acks, pp, stages) })
	if req.Acks == 0 {
		return nil, nil
	}
	s.addProduceLeaderHints(ctx, resp)
	return resp, nil
}

// producePartitions builds the response, every partition in it, and the parts to
// append: those of the topics the request may write. The others are answered already
// (a transactional id the principal may not write, a topic it may not write, a mirror
// topic, an internal topic clients do not produce to).
func (s *Server) producePartitions(r *request, req *kmsg.ProduceRequest) (*kmsg.ProduceResponse, []*producePart) {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	var parts []*producePart
	resp.Topics = make([]kmsg.ProduceResponseTopic, len(req.Topics))
	txnDenial := s.produceTxnDenial(r, req.TransactionID)
	for ti := range req.Topics {
		rt := &req.Topics[ti]
		st := &resp.Topics[ti]
		*st = kmsg.NewProduceResponseTopic()
		st.Topic = rt.Topic
		st.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(rt.Partitions))
		denial := txnDenial
		if denial == nil {
			denial = s.authorize(r, metadata.ACLOpWrite, auth.Topic(rt.Topic))
		}
		if denial == nil {
			denial = s.mirrorDenial(rt.Topic) // links.go: read-only until promoted
		}
		if denial == nil {
			denial = s.internalTopicDenial(r, rt.Topic) // share.go: __share_group_state
		}
		for pi := range rt.Partitions {
			sp := &st.Partitions[pi]
			*sp = kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rt.Partitions[pi].Partition
			sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
			if denial != nil {
				sp.ErrorCode, sp.ErrorMessage = errorCode(denial), reasonMessage(denial)
				continue
			}
			parts = append(parts, &producePart{
				tp:      metadata.TopicPartition{Topic: rt.Topic, Partition: sp.Partition},
				records: rt.Partitions[pi].Records, resp: sp,
			})
		}
	}
	return resp, parts
}

// appendParts appends every part, in the request's turn; turnErr is why the turn never
// came (the server is closing), which every part then answers.
func (s *Server) appendParts(ctx context.Context, req *kmsg.ProduceRequest, parts []*producePart, turnErr error, stages stageRecorder[ProduceStage]) {
	if turnErr != nil {
		for _, pp := range parts {
			pp.resp.ErrorCode = errorCode(turnErr)
		}
		return
	}
	appendOne := func(pp *producePart) { s.appendPart(ctx, req.TransactionID, req.Version, req.Acks, pp, stages) }
	if req.TransactionID != nil {
		// Transactional appends may wait on the coordinator: side by side.
		forEachPart(parts, appendOne)
		return
	}
	// Appends only copy into the page cache: a goroutine per partition would cost more
	// than the work.
	for _, pp := range parts {
		appendOne(pp)
	}
}

// produceTxnDenial is the refusal of a transactional produce whose principal may not
// WRITE its transactional id (every partition then answers
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as Kafka); nil when allowed or not
// transactional. An idempotent producer needs nothing beyond WRITE on the topics
// here: InitProducerId checked IDEMPOTENT_WRITE or WRITE on some topic (KIP-679).
func (s *Server) produceTxnDenial(r *request, txnID *string) error {
	if txnID == nil {
		return nil
	}
	return s.authorize(r, metadata.ACLOpWrite, auth.TransactionalID(*txnID))
}

// producePart is one partition of a produce request on its way through both phases.
type producePart struct {
	tp      metadata.TopicPartition
	records []byte
	resp    *kmsg.ProduceResponseTopicPartition
	part    *replica.Partition
	info    replica.AppendInfo
	err     error
}

// errorMessage is the response's error text, naming the partition (a produce may
// carry many, and clients often log only the message).
func (pp *producePart) errorMessage(err error) *string {
	return errorMessage(fmt.Errorf("%s-%d: %w", pp.tp.Topic, pp.tp.Partition, err))
}

// forEachPart runs fn for every part, concurrently when there are several.
func forEachPart(parts []*producePart, fn func(*producePart)) {
	if len(parts) == 1 {
		fn(parts[0])
		return
	}
	var wg sync.WaitGroup
	for _, pp := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(pp)
		}()
	}
	wg.Wait()
}

func (s *Server) appendPart(ctx context.Context, txnID *string, version, acks int16, pp *producePart, stages stageRecorder[ProduceStage]) {
	if len(pp.records) == 0 {
		pp.err = fmt.Errorf("%w: empty record set", recordbatch.ErrCorrupt)
		return
	}
	if txnID != nil {
		if err := s.verifyTxnProduce(ctx, *txnID, version, pp.tp, pp.records); err != nil {
			pp.resp.ErrorCode, pp.resp.ErrorMessage = produceVerifyErrorCode(err, version), pp.errorMessage(err)
			return
		}
	}
	start := time.Now()
	s.appendToLeader(acks, pp)
	stages.observe(StageAppend, time.Since(start))
	if errors.Is(pp.err, replica.ErrNotLeader) && s.leadership.LeaderMove(ctx, pp.tp) {
		// The leader this node knew is gone and a new one (maybe this node) was just
		// elected: try again rather than send the client off to refresh its metadata.
		s.appendToLeader(acks, pp)
	}
}

// appendToLeader appends pp's records if this node leads its partition.
func (s *Server) appendToLeader(acks int16, pp *producePart) {
	pp.part, pp.err = s.leaderPartition(pp.tp)
	if pp.err != nil {
		return
	}
	pp.info, pp.err = pp.part.Append(pp.records, acks)
}

func (s *Server) completePart(ctx context.Context, acks int16, pp *producePart, stages stageRecorder[ProduceStage]) {
	sp := pp.resp
	if sp.ErrorCode != 0 {
		return
	}
	if pp.err == nil {
		var st replica.AppendStages
		pp.err = pp.part.CompleteAppend(ctx, pp.info, acks, &st)
		stages.observe(StageFlush, st.Flush)
		if acks == -1 {
			stages.observe(StageReplicate, st.Replicate)
		}
	}
	if pp.part != nil {
		sp.LogStartOffset = pp.part.Log().LogStartOffset()
	}
	if pp.err != nil {
		sp.ErrorCode, sp.ErrorMessage = errorCode(pp.err), pp.errorMessage(pp.err)
		sp.ErrorRecords = produceRecordErrors(pp.err)
		if pp.info.NumBatches == 0 {
			return
		}
	}
	sp.BaseOffset = pp.info.FirstOffset
	sp.LogAppendTime = pp.info.LogAppendTime
}
