package kafka

// DescribeGroups: v0-6.
//
// State, protocol type and members of each group. While a group is Stable it also
// reports the protocol and each member's metadata and assignment (as Kafka does). An
// unknown group is "Dead" with no error before v6 and GROUP_ID_NOT_FOUND from v6
// (KIP-1043). Authorized operations (v3+ IncludeAuthorizedOperations) are answered for
// each group described without error, as Kafka (authorized_ops.go); not asked, or for
// a group in error, -2147483648. A KIP-848 consumer group is described by
// ConsumerGroupDescribe only: here it answers as Kafka 4, GROUP_ID_NOT_FOUND "Group G is
// not a classic group." (v6+; Dead before). So is a share group (ShareGroupDescribe).

import (
	"context"
	"errors"
	"fmt"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/group"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(15, 0, 6, handleDescribeGroups) }

func handleDescribeGroups(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.DescribeGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	gc := s.groupCoordinator()
	for _, id := range req.Groups {
		rg := kmsg.NewDescribeGroupsResponseGroup()
		rg.Group = id
		if err := s.authorize(r, metadata.ACLOpDescribe, auth.Group(id)); err != nil {
			rg.ErrorCode, rg.ErrorMessage = errorCode(err), errorMessage(err)
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		if gc == nil {
			rg.ErrorCode = groupErrorCode(errNoCoordinator)
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		d, err := gc.DescribeGroup(ctx, id)
		if errors.Is(err, group.ErrGroupIDNotFound) && s.isShareGroup(id) {
			err = group.ErrNotClassicGroup
		}
		switch {
		case errors.Is(err, group.ErrGroupIDNotFound) && req.Version < 6:
			err = nil
		case err != nil && !errors.Is(err, group.ErrGroupIDNotFound):
			rg.ErrorCode = groupErrorCode(err)
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		rg.ErrorCode, rg.ErrorMessage = groupErrorCode(err), errorMessage(err)
		if errors.Is(err, group.ErrNotClassicGroup) {
			msg := fmt.Sprintf("Group %s is not a classic group.", id)
			rg.ErrorMessage = &msg
		}
		rg.State, rg.ProtocolType, rg.Protocol = d.State, d.ProtocolType, d.Protocol
		for _, m := range d.Members {
			rm := kmsg.NewDescribeGroupsResponseGroupMember()
			rm.MemberID, rm.InstanceID, rm.ClientID, rm.ClientHost = m.MemberID, m.InstanceID, m.ClientID, m.ClientHost
			rm.ProtocolMetadata, rm.MemberAssignment = nonNil(m.Metadata), nonNil(m.Assignment)
			rg.Members = append(rg.Members, rm)
		}
		if req.Version >= 3 && req.IncludeAuthorizedOperations && rg.ErrorCode == 0 {
			rg.AuthorizedOperations = s.authorizedOperations(r, auth.Group(id))
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
