package kafka

// DeleteRecords: v0-2.
//
// Advances a partition's log start offset to the given offset (-1 = the high
// watermark); whole segments below it are deleted. An offset above the high watermark
// is OFFSET_OUT_OF_RANGE. The response's low watermark is the new log start offset.
//
// Runnel's tagged field AcceptDamageLossTag on a request partition (flexible versions,
// v2+; JSON, an AcceptDamageLoss) asks instead to accept the loss of the damaged
// ranges of the partition's only copy (`runnel topic repair --accept-loss`): the
// leader replaces each damaged range of its log by an empty batch holding its
// offsets (log.DropDamaged: no offset is reused, the quarantined copies stay), and
// the replicas that were damaged too converge as any damaged follower does
// (replica/repair.go: out of the ISR, truncate, fetch again). The partition's offset
// is then ignored (send 0: a server that skips the tag deletes nothing). The answer
// carries the same tag (AcceptDamageLossResult): what was dropped, or why nothing
// was. It is refused (POLICY_VIOLATION, with the reason in the tag) while an intact
// copy exists: another replica in the ISR not reported damaged, or a live one not
// reported damaged that holds offsets past the first damaged one (it catches up, the
// controller moves the leadership to it, and this copy is then repaired from it
// with nothing lost). The leader's copy intact: nothing to drop (NONE; a damaged
// follower repairs itself from it).

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/replica"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(21, 0, 2, handleDeleteRecords) }

func handleDeleteRecords(_ context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.DeleteRecordsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewDeleteRecordsResponseTopic()
		st.Topic = rt.Topic
		// With ACLs on, as Kafka: DELETE on the topic (TOPIC_AUTHORIZATION_FAILED).
		denial := s.authorize(r, metadata.ACLOpDelete, auth.Topic(rt.Topic))
		for _, rp := range rt.Partitions {
			sp := kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition = rp.Partition
			if denial != nil {
				sp.LowWatermark, sp.ErrorCode = -1, errorCode(denial)
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			tp := metadata.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}
			if b, ok := acceptLossTag(rp.UnknownTags); ok {
				res, low, err := s.acceptDamageLoss(tp, b)
				sp.LowWatermark, sp.ErrorCode = low, errorCode(err)
				if res.Refused != "" {
					sp.ErrorCode = kerr.PolicyViolation.Code
				}
				enc, _ := json.Marshal(res) // plain structs: cannot fail
				sp.UnknownTags.Set(AcceptDamageLossTag, enc)
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			low, err := int64(-1), s.mirrorDenial(rt.Topic) // links.go: a mirror keeps the source's offsets
			if err == nil {
				low, err = s.deleteRecords(tp, rp.Offset)
			}
			sp.LowWatermark, sp.ErrorCode = low, errorCode(err)
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

func (s *Server) deleteRecords(tp metadata.TopicPartition, offset int64) (int64, error) {
	p, err := s.leaderPartition(tp)
	if err != nil {
		return -1, err
	}
	if !p.IsLeader() {
		return -1, replica.ErrNotLeader
	}
	hw := p.HighWatermark()
	if offset == -1 {
		offset = hw
	}
	if offset < 0 || offset > hw {
		return -1, replica.ErrOffsetOutOfRange
	}
	return p.Log().DeleteRecordsBefore(offset)
}

// AcceptDamageLossTag is the Runnel tagged field of DeleteRecords' request and
// response partitions (see the top of this file).
const AcceptDamageLossTag = 10_005

// AcceptDamageLoss is AcceptDamageLossTag's request payload. AcceptLoss must be true:
// the operator's explicit choice.
type AcceptDamageLoss struct {
	AcceptLoss bool `json:"accept_loss"`
}

// AcceptDamageLossResult is AcceptDamageLossTag's response payload.
type AcceptDamageLossResult struct {
	// Leader is the node that answered (the partition's leader).
	Leader int32 `json:"leader"`
	// Dropped are the ranges replaced by empty batches, DroppedOffsets their offsets.
	Dropped        []DamagedRange `json:"dropped,omitempty"`
	DroppedOffsets int64          `json:"dropped_offsets"`
	// Refused says why nothing was dropped (an intact copy exists), "" otherwise.
	Refused string `json:"refused,omitempty"`
	// Message says what else the operator should know (nothing to drop here, damaged
	// followers that repair themselves, an error).
	Message string `json:"message,omitempty"`
}

func acceptLossTag(tags kmsg.Tags) ([]byte, bool) {
	var out []byte
	found := false
	tags.Each(func(tag uint32, b []byte) {
		if tag == AcceptDamageLossTag {
			out, found = b, true
		}
	})
	return out, found
}

// acceptDamageLoss carries out AcceptDamageLossTag for tp on its leader. It returns
// the result, the log start offset and the error to answer with.
func (s *Server) acceptDamageLoss(tp metadata.TopicPartition, payload []byte) (AcceptDamageLossResult, int64, error) {
	res := AcceptDamageLossResult{Leader: int32(s.cfg.NodeID)}
	var req AcceptDamageLoss
	if err := json.Unmarshal(payload, &req); err != nil || !req.AcceptLoss {
		res.Message = fmt.Sprintf("the accept-loss request (tag %d) must be {\"accept_loss\":true}", AcceptDamageLossTag)
		return res, -1, kerr.InvalidRequest
	}
	p, err := s.leaderPartition(tp)
	if err != nil {
		return res, -1, err
	}
	if !p.IsLeader() {
		return res, -1, replica.ErrNotLeader
	}
	l := p.Log()
	var first int64 = -1
	for _, d := range l.Damaged() {
		if d.Offsets() > 0 && (first < 0 || d.FirstOffset < first) {
			first = d.FirstOffset
		}
	}
	im := s.leadership.Image()
	others := im.DamageOf(tp)
	if first < 0 {
		res.Message = fmt.Sprintf("the leader's copy (node %d) has no damaged offsets: nothing to drop", s.cfg.NodeID)
		if len(others) > 0 {
			var ids []string
			for id := range others {
				ids = append(ids, fmt.Sprint(id))
			}
			slices.Sort(ids)
			res.Message += fmt.Sprintf("; the damaged replicas on nodes %s repair themselves from it", strings.Join(ids, ", "))
		}
		return res, l.LogStartOffset(), nil
	}
	st := p.State()
	for _, id := range st.Replicas {
		if id == metadata.NodeID(s.cfg.NodeID) || len(others[id]) > 0 {
			continue
		}
		if slices.Contains(st.ISR, id) {
			res.Refused = fmt.Sprintf("node %d is in sync and reports no damage: the controller moves the leadership to it and this copy is repaired from it, losing nothing", id)
			break
		}
		lag, known := st.FollowerLag[id]
		if b, ok := im.Brokers[id]; known && ok && !b.Fenced && st.LogEndOffset-lag > first {
			res.Refused = fmt.Sprintf("node %d is up, reports no damage and holds offsets up to %d, past the first damaged offset %d: it catches up, takes the leadership over and this copy is repaired from it, losing nothing",
				id, st.LogEndOffset-lag-1, first)
			break
		}
	}
	if res.Refused != "" {
		return res, l.LogStartOffset(), nil
	}
	before := l.Damaged()
	dropped, err := l.DropDamaged()
	res.DroppedOffsets = dropped
	for _, d := range before {
		if d.Offsets() > 0 {
			res.Dropped = append(res.Dropped, DamagedRange{FirstOffset: d.FirstOffset, LastOffset: d.LastOffset, Offsets: d.Offsets(),
				File: d.Segment, Position: d.Position, Bytes: d.Length, Quarantine: d.Quarantine, Reason: d.Reason})
		}
	}
	if err != nil {
		res.Message = err.Error()
		return res, l.LogStartOffset(), err
	}
	s.logger.Warn("accepted the loss of a partition's damaged ranges (runnel topic repair --accept-loss)",
		"topic", tp.Topic, "partition", tp.Partition, "offsets_dropped", dropped, "ranges", len(res.Dropped))
	return res, l.LogStartOffset(), nil
}
