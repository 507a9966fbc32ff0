package kafka

// DescribeAcls: v0-3 (KIP-11; v1+ pattern types, KIP-290).
//
// Served by every node from the ACLs of its metadata image, to a principal allowed to
// DESCRIBE the cluster (else CLUSTER_AUTHORIZATION_FAILED). The filter is Kafka's
// AclBindingFilter (auth.Filter): ANY / null fields match everything; pattern type
// MATCH lists the ACLs that apply to the named resource (v0 filters are LITERAL). A
// field with a code this node does not know is INVALID_REQUEST. Without an authorizer
// (authorizer.class.name unset) the answer is SECURITY_DISABLED, as Kafka's. ACLs are
// grouped by resource pattern, in the image's order (resource type, pattern, name).

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/metadata"
)

func init() { regKey(29, 0, 3, handleDescribeAcls) }

func handleDescribeAcls(_ context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.DescribeACLsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	f := auth.Filter{ResourceType: metadata.ACLResourceType(req.ResourceType), ResourceName: req.ResourceName,
		PatternType: metadata.ACLPatternType(req.ResourcePatternType), Principal: req.Principal, Host: req.Host,
		Operation: metadata.ACLOperation(req.Operation), Permission: metadata.ACLPermission(req.PermissionType)}
	err := s.aclAPIAllowed(r, metadata.ACLOpDescribe)
	if err == nil {
		if err = auth.ValidateFilter(f); err != nil {
			err = fmt.Errorf("%w: %w", kerr.InvalidRequest, err)
		}
	}
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), reasonMessage(err)
		return resp, nil
	}
	var cur *kmsg.DescribeACLsResponseResource
	for _, a := range auth.Select(s.leadership.Image().ACLs.All(), f) {
		if cur == nil || int8(cur.ResourceType) != int8(a.ResourceType) || cur.ResourceName != a.ResourceName ||
			int8(cur.ResourcePatternType) != int8(a.PatternType) {
			res := kmsg.NewDescribeACLsResponseResource()
			res.ResourceType, res.ResourceName = kmsg.ACLResourceType(a.ResourceType), a.ResourceName
			res.ResourcePatternType = kmsg.ACLResourcePatternType(a.PatternType)
			resp.Resources = append(resp.Resources, res)
			cur = &resp.Resources[len(resp.Resources)-1]
		}
		e := kmsg.NewDescribeACLsResponseResourceACL()
		e.Principal, e.Host = a.Principal, a.Host
		e.Operation, e.PermissionType = kmsg.ACLOperation(a.Operation), kmsg.ACLPermissionType(a.Permission)
		cur.ACLs = append(cur.ACLs, e)
	}
	return resp, nil
}

// aclAPIAllowed is the check of the ACL APIs: SECURITY_DISABLED without an authorizer,
// else op (DESCRIBE to list, ALTER to change) on the cluster.
func (s *Server) aclAPIAllowed(r *request, op metadata.ACLOperation) error {
	if s.authz == nil {
		return fmt.Errorf("%w: no authorizer is configured on node %d (set authorizer.class.name)", kerr.SecurityDisabled, s.cfg.NodeID)
	}
	return s.authorize(r, op, auth.Cluster)
}
