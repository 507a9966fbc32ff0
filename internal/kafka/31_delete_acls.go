package kafka

// DeleteAcls: v0-3 (KIP-11; v1+ pattern types, KIP-290).
//
// A controller operation like CreateAcls: forwarded to the active controller, which
// removes every ACL each filter matches (Kafka's AclBindingFilter, as DescribeAcls:
// MATCH removes every ACL that applies to the named resource, ANY those of any pattern
// with exactly that name) in one metadata entry, and answers, per filter, the ACLs it
// removed once every live node has applied the removal. A filter with a code this
// node does not know is INVALID_REQUEST. The principal must be allowed to ALTER the
// cluster (else CLUSTER_AUTHORIZATION_FAILED per filter); without an authorizer:
// SECURITY_DISABLED.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/metadata"
)

func init() { regKey(31, 0, 3, handleDeleteAcls) }

func handleDeleteAcls(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.DeleteACLsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	filters := make([]auth.Filter, len(req.Filters))
	for i, f := range req.Filters {
		filters[i] = auth.Filter{ResourceType: metadata.ACLResourceType(f.ResourceType), ResourceName: f.ResourceName,
			PatternType: metadata.ACLPatternType(f.ResourcePatternType), Principal: f.Principal, Host: f.Host,
			Operation: metadata.ACLOperation(f.Operation), Permission: metadata.ACLPermission(f.PermissionType)}
	}
	matched := make([][]metadata.ACL, len(filters))
	errs := make([]error, len(filters))
	err := s.aclAPIAllowed(r, metadata.ACLOpAlter)
	switch {
	case err != nil:
		for i := range errs {
			errs[i] = err
		}
	case len(filters) > 0:
		matched, errs = s.admin.DeleteACLs(ctx, filters)
	}
	for i := range filters {
		res := kmsg.NewDeleteACLsResponseResult()
		res.ErrorCode, res.ErrorMessage = errorCode(errs[i]), reasonMessage(errs[i])
		for _, a := range matched[i] {
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ResourceType, m.ResourceName = kmsg.ACLResourceType(a.ResourceType), a.ResourceName
			m.ResourcePatternType = kmsg.ACLResourcePatternType(a.PatternType)
			m.Principal, m.Host = a.Principal, a.Host
			m.Operation, m.PermissionType = kmsg.ACLOperation(a.Operation), kmsg.ACLPermissionType(a.Permission)
			res.MatchingACLs = append(res.MatchingACLs, m)
		}
		if errs[i] != nil {
			s.logger.Info("ACLs not deleted", "filter", filters[i].String(), "principal", r.principal(), "err", errs[i])
		} else if len(matched[i]) > 0 {
			s.logger.Info("ACLs deleted", "filter", filters[i].String(), "principal", r.principal(), "deleted", len(matched[i]))
		}
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}
