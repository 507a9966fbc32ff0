package controlplane

// ACLs: CreateAcls and DeleteAcls run on the active controller (forwarded there from
// any other node, KIP-590) and answer once every live node serves the change, so that
// an ACL is enforced on whichever node a client talks to when the call returns.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/metadata"
)

// CreateACLs implements kafka's aclAdmin (30_create_acls.go).
func (a *Admin) CreateACLs(ctx context.Context, acls []metadata.ACL) []error {
	errs := a.ctrl.CreateACLs(ctx, acls)
	if len(errs) > 0 && mayForward(ctx, errs[0]) {
		errs = a.ch.createACLs(ctx, acls)
		a.settleFor(ctx, func(im *metadata.Image) bool {
			for i, acl := range acls {
				if errs[i] == nil && !im.ACLs.Has(acl) {
					return false
				}
			}
			return true
		})
		return errs
	}
	for i := range errs {
		errs[i] = kafkaError(errs[i])
	}
	if err := a.awaitEveryNode(ctx); err != nil {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = fmt.Errorf("ACL %s: %w", acls[i], err)
			}
		}
	}
	return errs
}

// DeleteACLs implements kafka's aclAdmin (31_delete_acls.go).
func (a *Admin) DeleteACLs(ctx context.Context, filters []auth.Filter) ([][]metadata.ACL, []error) {
	matched, errs := a.ctrl.DeleteACLs(ctx, filters)
	if len(errs) > 0 && mayForward(ctx, errs[0]) {
		matched, errs = a.ch.deleteACLs(ctx, filters)
		a.settleFor(ctx, func(im *metadata.Image) bool {
			for _, acls := range matched {
				for _, acl := range acls {
					if im.ACLs.Has(acl) {
						return false
					}
				}
			}
			return true
		})
		return matched, errs
	}
	for i := range errs {
		errs[i] = kafkaError(errs[i])
	}
	if err := a.awaitEveryNode(ctx); err != nil {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = fmt.Errorf("ACLs matching %s: %w", filters[i], err)
			}
		}
	}
	return matched, errs
}

// createACLs forwards a CreateAcls to the active controller. Its answer has one
// result per creation, in order.
func (ch *Channel) createACLs(ctx context.Context, acls []metadata.ACL) []error {
	errs := make([]error, len(acls))
	err := ch.do(ctx, "forward CreateAcls", func(ctx context.Context) error {
		req := kmsg.NewPtrCreateACLsRequest()
		for _, acl := range acls {
			c := kmsg.NewCreateACLsRequestCreation()
			c.ResourceType, c.ResourceName = kmsg.ACLResourceType(acl.ResourceType), acl.ResourceName
			c.ResourcePatternType = kmsg.ACLResourcePatternType(acl.PatternType)
			c.Principal, c.Host = acl.Principal, acl.Host
			c.Operation, c.PermissionType = kmsg.ACLOperation(acl.Operation), kmsg.ACLPermissionType(acl.Permission)
			req.Creations = append(req.Creations, c)
		}
		resp, err := ch.send(ctx, req)
		if err != nil {
			return err
		}
		results := resp.(*kmsg.CreateACLsResponse).Results
		if len(results) != len(acls) {
			return fmt.Errorf("%w: the controller answered %d results for %d ACLs", kerr.UnknownServerError, len(results), len(acls))
		}
		for i, res := range results {
			errs[i] = answerError(res.ErrorCode, res.ErrorMessage)
		}
		if allNotController(errs) {
			return kerr.NotController
		}
		return nil
	})
	fillErrors(errs, err)
	return errs
}

// deleteACLs forwards a DeleteAcls to the active controller. Its answer has one
// result per filter, in order, each with the ACLs it removed.
func (ch *Channel) deleteACLs(ctx context.Context, filters []auth.Filter) ([][]metadata.ACL, []error) {
	matched := make([][]metadata.ACL, len(filters))
	errs := make([]error, len(filters))
	err := ch.do(ctx, "forward DeleteAcls", func(ctx context.Context) error {
		req := kmsg.NewPtrDeleteACLsRequest()
		for _, f := range filters {
			rf := kmsg.NewDeleteACLsRequestFilter()
			rf.ResourceType, rf.ResourceName = kmsg.ACLResourceType(f.ResourceType), f.ResourceName
			rf.ResourcePatternType = kmsg.ACLResourcePatternType(f.PatternType)
			rf.Principal, rf.Host = f.Principal, f.Host
			rf.Operation, rf.PermissionType = kmsg.ACLOperation(f.Operation), kmsg.ACLPermissionType(f.Permission)
			req.Filters = append(req.Filters, rf)
		}
		resp, err := ch.send(ctx, req)
		if err != nil {
			return err
		}
		results := resp.(*kmsg.DeleteACLsResponse).Results
		if len(results) != len(filters) {
			return fmt.Errorf("%w: the controller answered %d results for %d ACL filters", kerr.UnknownServerError, len(results), len(filters))
		}
		for i, res := range results {
			errs[i], matched[i] = answerError(res.ErrorCode, res.ErrorMessage), nil
			for _, m := range res.MatchingACLs {
				matched[i] = append(matched[i], metadata.ACL{ResourceType: metadata.ACLResourceType(m.ResourceType),
					ResourceName: m.ResourceName, PatternType: metadata.ACLPatternType(m.ResourcePatternType),
					Principal: m.Principal, Host: m.Host, Operation: metadata.ACLOperation(m.Operation),
					Permission: metadata.ACLPermission(m.PermissionType)})
			}
		}
		if allNotController(errs) {
			return kerr.NotController
		}
		return nil
	})
	fillErrors(errs, err)
	return matched, errs
}
