package kafka

// ShareAcknowledge: v0-2 (KIP-932; v2 IsRenewAck of KIP-1222, AcquisitionLockTimeoutMillis).
//
// Acknowledges records acquired through ShareFetch on the partitions' leader, within
// the member's share session (its epoch advances as ShareFetch's; epoch 0 is refused,
// -1 applies the acknowledgements, then closes the session and releases what the
// member still holds of its partitions). ACCEPT (1), RELEASE (2), REJECT (3) and gaps
// (0) are written to __share_group_state (acks=-1) before the answer; RENEW (4) only
// with IsRenewAck, extending the locks in memory. Each partition answers on its own:
// INVALID_RECORD_STATE when an offset is not acquired by the member (the batch is not
// applied), NOT_LEADER_OR_FOLLOWER with the leader's hint.

import (
	"context"
	"time"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/share"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(79, 0, 2, handleShareAcknowledge) }

func handleShareAcknowledge(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.ShareAcknowledgeRequest)
	resp := req.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
	if req.GroupID == nil || req.MemberID == nil || *req.MemberID == "" || len(*req.MemberID) > 36 {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	group, member := *req.GroupID, *req.MemberID
	if err := s.authorize(r, metadata.ACLOpRead, auth.Group(group)); err != nil {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
		return resp, nil
	}
	if s.share == nil {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	resp.AcquisitionLockTimeoutMillis = int32(s.shareLimits(group).LockDuration / time.Millisecond)
	mgr := s.share.parts
	sk := share.SessionKey{Group: group, Member: member}
	var sess *share.Session
	switch req.ShareSessionEpoch {
	case 0:
		resp.ErrorCode = kerr.InvalidShareSessionEpoch.Code
		return resp, nil
	case -1:
		var ok bool
		if sess, ok = mgr.CloseSession(sk); !ok {
			resp.ErrorCode = kerr.ShareSessionNotFound.Code
			return resp, nil
		}
	default:
		var err error
		if sess, err = mgr.UpdateSession(sk, req.ShareSessionEpoch, nil, nil); err != nil {
			resp.ErrorCode, resp.ErrorMessage = errorCode(err), shareSessionMessage(group, member, err)
			return resp, nil
		}
	}
	sm := &shareMember{s: s, r: r, group: group, member: member, im: s.leadership.Image()}
	renew := req.Version >= 2 && req.IsRenewAck
	for _, t := range req.Topics {
		rt := kmsg.NewShareAcknowledgeResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			if len(p.AcknowledgementBatches) == 0 {
				continue // nothing to answer for, as in ShareFetch
			}
			batches := make([]share.AckBatch, 0, len(p.AcknowledgementBatches))
			for _, b := range p.AcknowledgementBatches {
				batches = append(batches, ackBatch(b.FirstOffset, b.LastOffset, b.AcknowledgeTypes, renew))
			}
			rp := kmsg.NewShareAcknowledgeResponseTopicPartition()
			rp.Partition = p.Partition
			id := share.PartitionID{TopicID: t.TopicID, Partition: p.Partition}
			hint, err := sm.acknowledge(ctx, id, batches)
			rp.ErrorCode, rp.ErrorMessage = sm.partError(id, err)
			if hint.ok {
				rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = hint.id, hint.epoch
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		if len(rt.Partitions) > 0 {
			resp.Topics = append(resp.Topics, rt)
		}
	}
	if sm.hinted {
		sm.nodeEndpoints(ctx, func(ne kmsg.ShareFetchResponseNodeEndpoint) {
			resp.NodeEndpoints = append(resp.NodeEndpoints, kmsg.ShareAcknowledgeResponseNodeEndpoint(ne))
		})
	}
	if req.ShareSessionEpoch == -1 {
		releaseShareSession(mgr, group, member, sess)
	}
	return resp, nil
}
