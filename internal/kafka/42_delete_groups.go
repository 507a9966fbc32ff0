package kafka

// DeleteGroups: v0-3.
//
// Deletes empty groups: their metadata and committed offsets are tombstoned in
// __consumer_offsets. NON_EMPTY_GROUP while a group has members, GROUP_ID_NOT_FOUND for
// an unknown group, NOT_COORDINATOR when another node coordinates it.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(42, 0, 3, handleDeleteGroups) }

func handleDeleteGroups(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.DeleteGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	gc := s.groupCoordinator()
	for _, id := range req.Groups {
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group = id
		err := errNoCoordinator
		if gc != nil {
			err = gc.DeleteGroup(ctx, id)
		}
		rg.ErrorCode = groupErrorCode(err)
		if req.Version >= 3 {
			rg.ErrorMessage = errorMessage(err)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}
