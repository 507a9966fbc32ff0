package kafka

// ListGroups: v0-5.
//
// The groups this node coordinates. v4+ filters by state (case-insensitive, KIP-518);
// v5+ filters by type (case-insensitive): "classic" or "consumer" (KIP-848; protocol
// type "consumer" too, states Empty, Assigning, Reconciling, Stable), or "share"
// (KIP-932; protocol type "share", states Empty, Stable: the share groups whose
// membership this coordinator holds, see internal/share doc.go). While a
// __consumer_offsets partition is loading the answer is COORDINATOR_LOAD_IN_PROGRESS
// with no groups, as in Kafka.

import (
	"context"
	"slices"
	"strings"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(16, 0, 5, handleListGroups) }

func handleListGroups(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.ListGroupsRequest)
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	gc := s.groupCoordinator()
	if gc == nil {
		return resp, nil // no coordinator: no groups
	}
	groups, err := gc.ListGroups(req.StatesFilter)
	if err != nil {
		resp.ErrorCode = groupErrorCode(err)
		return resp, nil
	}
	groups = s.withShareGroups(groups, req.StatesFilter)
	// With ACLs on, as Kafka: DESCRIBE on the cluster lists every group, else only
	// the groups the principal may DESCRIBE.
	all := s.allowedQuiet(r, metadata.ACLOpDescribe, auth.Cluster)
	for _, g := range groups {
		if len(req.TypesFilter) > 0 && !slices.ContainsFunc(req.TypesFilter, func(t string) bool { return strings.EqualFold(t, g.Type) }) {
			continue
		}
		if !all && !s.allowedQuiet(r, metadata.ACLOpDescribe, auth.Group(g.GroupID)) {
			continue
		}
		rg := kmsg.NewListGroupsResponseGroup()
		rg.Group, rg.ProtocolType, rg.GroupState, rg.GroupType = g.GroupID, g.ProtocolType, g.State, g.Type
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}
