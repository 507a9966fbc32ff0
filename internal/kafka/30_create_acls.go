package kafka

// CreateAcls: v0-3 (KIP-11; v1+ PREFIXED, KIP-290).
//
// A controller operation: every node forwards it to the active controller (KIP-590),
// which validates each ACL as Kafka's AclControlManager (a concrete resource type,
// LITERAL or PREFIXED, a non-empty name, kafka-cluster for the cluster, a Type:Name
// principal, a host, ALLOW or DENY, an operation the resource type supports;
// INVALID_REQUEST naming the ACL otherwise), commits the valid ones in one metadata
// entry and answers once every live node enforces them. An ACL that exists already
// succeeds. The principal must be allowed to ALTER the cluster (else
// CLUSTER_AUTHORIZATION_FAILED for every ACL); without an authorizer every ACL gets
// SECURITY_DISABLED.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/metadata"
)

func init() { regKey(30, 0, 3, handleCreateAcls) }

func handleCreateAcls(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.CreateACLsRequest)
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	errs := make([]error, len(req.Creations))
	acls := make([]metadata.ACL, len(req.Creations))
	for i, c := range req.Creations {
		acls[i] = metadata.ACL{ResourceType: metadata.ACLResourceType(c.ResourceType), ResourceName: c.ResourceName,
			PatternType: metadata.ACLPatternType(c.ResourcePatternType), Principal: c.Principal, Host: c.Host,
			Operation: metadata.ACLOperation(c.Operation), Permission: metadata.ACLPermission(c.PermissionType)}
	}
	err := s.aclAPIAllowed(r, metadata.ACLOpAlter)
	switch {
	case err != nil:
		for i := range errs {
			errs[i] = err
		}
	case len(acls) > 0:
		errs = s.admin.CreateACLs(ctx, acls)
	}
	for i := range req.Creations {
		res := kmsg.NewCreateACLsResponseResult()
		res.ErrorCode, res.ErrorMessage = errorCode(errs[i]), reasonMessage(errs[i])
		if errs[i] != nil {
			s.logger.Info("ACL not created", "acl", acls[i].String(), "principal", r.principal(), "err", errs[i])
		} else {
			s.logger.Info("ACL created", "acl", acls[i].String(), "principal", r.principal())
		}
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}
