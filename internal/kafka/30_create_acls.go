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
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/metadata"
)

func init() { regKey(30, 0, 3, handleCreateAcls) }

// aclAdmin is the controller side of CreateAcls and DeleteAcls. It is not part of
// Admin: the node's Admin (controlplane.Admin) implements it, and a node whose Admin
// does not answers UNKNOWN_SERVER_ERROR.
type aclAdmin interface {
	// CreateACLs creates each ACL (one error each, in order) and returns once every
	// live node enforces them.
	CreateACLs(ctx context.Context, acls []metadata.ACL) []error
	// DeleteACLs removes what each filter matches and returns, per filter, the ACLs it
	// matched or the error that refused it, once every live node applied the removal.
	DeleteACLs(ctx context.Context, filters []auth.Filter) ([][]metadata.ACL, []error)
}

func (s *Server) aclAdmin() (aclAdmin, error) {
	if a, ok := s.admin.(aclAdmin); ok {
		return a, nil
	}
	return nil, fmt.Errorf("%w: node %d cannot change ACLs", kerr.UnknownServerError, s.cfg.NodeID)
}

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
	var admin aclAdmin
	if err == nil {
		admin, err = s.aclAdmin()
	}
	switch {
	case err != nil:
		for i := range errs {
			errs[i] = err
		}
	case len(acls) > 0:
		errs = admin.CreateACLs(ctx, acls)
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
