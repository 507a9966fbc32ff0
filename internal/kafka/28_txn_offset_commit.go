package kafka

// TxnOffsetCommit: v0-5 (v6, topic ids, is not implemented).
//
// A transactional producer commits a group's offsets inside its transaction. Up to
// v4 the transaction coordinator is asked first whether the group's
// __consumer_offsets partition is in the producer's ongoing transaction
// (AddOffsetsToTxn; KIP-890's defence against a late commit slipping into the next
// transaction). v5 (transaction version 2, KIP-890 part 2) adds the partition to
// the transaction implicitly instead: the client sends no AddOffsetsToTxn, and a
// commit of an ended transaction's epoch is fenced there. Then the group
// coordinator appends the offsets as a transactional batch of the producer and holds
// them pending until the transaction's marker (internal/group/txn_offsets.go). The
// member id and generation (v3+) are checked when set. Partitions of unknown topics
// get UNKNOWN_TOPIC_OR_PARTITION. A fenced producer gets PRODUCER_FENCED
// (INVALID_PRODUCER_EPOCH before v3).

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/group"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/txn"
)

func init() { regKey(28, 0, 5, handleTxnOffsetCommit) }

// TxnOffsetCoordinator is the part of the group coordinator transactional offset
// commits need; *group.Coordinator implements it.
type TxnOffsetCoordinator interface {
	CommitTxnOffsets(ctx context.Context, req group.TxnCommitRequest) []error
	CompleteTxn(ctx context.Context, partition int32, pid int64, commit bool) error
}

func handleTxnOffsetCommit(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.TxnOffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	codes := make([][]int16, len(req.Topics))
	tr := group.TxnCommitRequest{TransactionalID: req.TransactionalID, GroupID: req.Group,
		ProducerID: req.ProducerID, ProducerEpoch: req.ProducerEpoch, Generation: -1}
	if req.Version >= 3 {
		tr.MemberID, tr.InstanceID, tr.Generation = req.MemberID, req.InstanceID, req.Generation
	}
	type slot struct{ ti, pi int }
	var slots []slot
	im := s.leadership.Image()
	// With ACLs on, as Kafka: WRITE on the transactional id and READ on the group
	// (else every partition answers the denial), READ on each topic.
	denial := s.authorize(r, metadata.ACLOpWrite, auth.TransactionalID(req.TransactionalID))
	if denial == nil {
		denial = s.authorize(r, metadata.ACLOpRead, auth.Group(req.Group))
	}
	topicDenied := s.topicCheck(r, metadata.ACLOpRead)
	for ti, t := range req.Topics {
		codes[ti] = make([]int16, len(t.Partitions))
		for pi, p := range t.Partitions {
			if denial != nil {
				codes[ti][pi] = errorCode(denial)
				continue
			}
			if topicDenied != nil {
				if err := topicDenied(t.Topic); err != nil {
					codes[ti][pi] = errorCode(err)
					continue
				}
			}
			if _, ok := im.Partition(metadata.TopicPartition{Topic: t.Topic, Partition: p.Partition}); !ok {
				codes[ti][pi] = kerr.UnknownTopicOrPartition.Code
				continue
			}
			le := p.LeaderEpoch
			if req.Version < 2 {
				le = -1
			}
			tr.Offsets = append(tr.Offsets, group.OffsetCommit{
				Topic: t.Topic, Partition: p.Partition, Offset: p.Offset, LeaderEpoch: le, Metadata: p.Metadata,
			})
			slots = append(slots, slot{ti, pi})
		}
	}
	if len(tr.Offsets) > 0 {
		errs := commitTxnOffsets(ctx, s, tr, req.Version >= 5)
		for i, sl := range slots {
			codes[sl.ti][sl.pi] = txnOffsetErrorCode(errs[i], req.Version < 3)
		}
	}
	for ti, t := range req.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for pi, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, codes[ti][pi]
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// commitTxnOffsets verifies the producer's transaction (or, with implicitAdd, adds
// the offsets partition to it), then commits; one error per offset.
func commitTxnOffsets(ctx context.Context, s *Server, tr group.TxnCommitRequest, implicitAdd bool) []error {
	fail := func(err error) []error { return sameError(len(tr.Offsets), err) }
	gc, ok := s.groupCoordinator().(TxnOffsetCoordinator)
	if !ok {
		return fail(errNoCoordinator)
	}
	if s.txns != nil {
		tp := metadata.TopicPartition{Topic: group.OffsetsTopic, Partition: s.groupCoordinator().PartitionFor(tr.GroupID)}
		check := s.txns.Verify
		if implicitAdd {
			check = s.txns.AddPartitionImplicit
		}
		if err := check(ctx, tr.TransactionalID, tr.ProducerID, tr.ProducerEpoch, tp); err != nil {
			return fail(err)
		}
	}
	return gc.CommitTxnOffsets(ctx, tr)
}

// txnOffsetErrorCode maps a TxnOffsetCommit error: a fenced producer as the
// transaction APIs answer it, the rest as the group APIs do.
func txnOffsetErrorCode(err error, fencedAsEpoch bool) int16 {
	if errors.Is(err, group.ErrProducerFenced) || errors.Is(err, txn.ErrProducerFenced) {
		return txnErrorCode(err, fencedAsEpoch)
	}
	return groupErrorCode(err)
}

// completeTxnOffsets tells the group coordinator that a marker reached one of its
// __consumer_offsets partitions, so that the transaction's pending offsets become
// committed or are dropped. An error asks the transaction coordinator to write the
// marker again.
func (s *Server) completeTxnOffsets(ctx context.Context, tp metadata.TopicPartition, pid int64, commit bool) error {
	if tp.Topic != group.OffsetsTopic {
		return nil
	}
	if gc, ok := s.groupCoordinator().(TxnOffsetCoordinator); ok {
		return gc.CompleteTxn(ctx, tp.Partition, pid, commit)
	}
	return nil
}
