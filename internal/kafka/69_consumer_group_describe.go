package kafka

// ConsumerGroupDescribe: v0-1 (KIP-848).
//
// Each consumer group's state (Empty, Assigning, Reconciling, Stable), group epoch,
// assignment epoch and assignor, and per member its epoch, subscription, current
// assignment and target assignment (topics by id and name). A group that does not
// exist or is a classic group answers GROUP_ID_NOT_FOUND, as Kafka. v1: MemberType
// (1: the member speaks the consumer protocol, 0: a classic member of a consumer
// group, group/migration.go). Authorized operations as DescribeGroups (authorized_ops.go).

import (
	"context"
	"errors"
	"fmt"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/group"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(69, 0, 1, handleConsumerGroupDescribe) }

func handleConsumerGroupDescribe(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.ConsumerGroupDescribeRequest)
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	gc := s.groupCoordinator()
	im := s.leadership.Image()
	for _, id := range req.Groups {
		rg := kmsg.NewConsumerGroupDescribeResponseGroup()
		rg.Group = id
		err := s.authorize(r, metadata.ACLOpDescribe, auth.Group(id))
		var d group.ConsumerGroupDescription
		switch {
		case err != nil:
		case gc == nil:
			err = errNoCoordinator
		default:
			d, err = gc.DescribeConsumerGroup(ctx, id)
		}
		if err != nil {
			rg.ErrorCode = groupErrorCode(err)
			if errors.Is(err, group.ErrGroupIDNotFound) {
				msg := fmt.Sprintf("Group %s not found.", id)
				rg.ErrorMessage = &msg
			} else {
				// A denial names principal, host, operation and group (authorize.go).
				rg.ErrorMessage = reasonMessage(err)
			}
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		rg.State, rg.Epoch, rg.AssignmentEpoch, rg.AssignorName = d.State, d.GroupEpoch, d.AssignmentEpoch, d.Assignor
		for _, m := range d.Members {
			rm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
			rm.MemberID, rm.InstanceID, rm.RackID, rm.MemberEpoch = m.MemberID, m.InstanceID, m.RackID, m.MemberEpoch
			rm.ClientID, rm.ClientHost = m.ClientID, m.ClientHost
			rm.SubscribedTopics, rm.SubscribedTopicRegex = m.SubscribedTopicNames, m.SubscribedTopicRegex
			if rm.SubscribedTopics == nil {
				rm.SubscribedTopics = []string{}
			}
			rm.Assignment, rm.TargetAssignment = describedAssignment(im, m.Assignment), describedAssignment(im, m.TargetAssignment)
			rm.MemberType = 1 // consumer
			if m.Classic {
				rm.MemberType = 0 // classic
			}
			rg.Members = append(rg.Members, rm)
		}
		if req.IncludeAuthorizedOperations {
			rg.AuthorizedOperations = s.authorizedOperations(r, auth.Group(id))
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}

// describedAssignment names each topic of tps (empty when the topic is gone).
func describedAssignment(im *metadata.Image, tps []group.TopicPartitions) kmsg.Assignment {
	a := kmsg.NewAssignment()
	a.TopicPartitions = []kmsg.AssignmentTopicPartition{}
	for _, tp := range tps {
		t := kmsg.NewAssignmentTopicPartition()
		t.TopicID, t.Partitions = tp.TopicID, tp.Partitions
		if topic := im.TopicByID(tp.TopicID); topic != nil {
			t.Topic = topic.Name
		}
		a.TopicPartitions = append(a.TopicPartitions, t)
	}
	return a
}
