package kafka

// DeleteGroups: v0-3.
//
// Deletes empty groups: their metadata and committed offsets are tombstoned in
// __consumer_offsets. NON_EMPTY_GROUP while a group has members, GROUP_ID_NOT_FOUND for
// an unknown group, NOT_COORDINATOR when another node coordinates it. An empty share
// group loses its membership and its share-partition state (tombstoned in
// __share_group_state, share.go deleteShareGroup).

import (
	"context"
	"errors"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/group"
	"github.com/runnel-io/runnel/internal/metadata"
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
		err := s.authorize(r, metadata.ACLOpDelete, auth.Group(id))
		switch {
		case err != nil:
		case gc == nil:
			err = errNoCoordinator
		case s.isShareGroup(id):
			err = s.deleteShareGroup(ctx, id)
		default:
			err = gc.DeleteGroup(ctx, id)
			if errors.Is(err, group.ErrGroupIDNotFound) {
				_, err = s.deleteShareGroupState(ctx, id, err)
			}
		}
		rg.ErrorCode = groupErrorCode(err)
		if req.Version >= 3 {
			rg.ErrorMessage = errorMessage(err)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}
