package controlplane

// ACLs: CreateAcls and DeleteAcls run on the active controller (forwarded there from
// any other node, KIP-590) and answer once every live node serves the change, so that
// an ACL is enforced on whichever node a client talks to when the call returns.

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/metadata"
)

// CreateACLs is kafka.Admin's (30_create_acls.go).
func (a *Admin) CreateACLs(ctx context.Context, acls []metadata.ACL) []error {
	return a.run(ctx, change{
		local:   func() []error { return a.ctrl.CreateACLs(ctx, acls) },
		forward: func() []error { return a.ch.createACLs(ctx, acls) },
		applied: allApplied(len(acls), func(im *metadata.Image, i int) bool { return im.ACLs.Has(acls[i]) }),
		item:    func(i int) string { return "ACL " + acls[i].String() },
	})
}

// DeleteACLs is kafka.Admin's (31_delete_acls.go).
func (a *Admin) DeleteACLs(ctx context.Context, filters []auth.Filter) ([][]metadata.ACL, []error) {
	var matched [][]metadata.ACL
	errs := a.run(ctx, change{
		local: func() (errs []error) {
			matched, errs = a.ctrl.DeleteACLs(ctx, filters)
			return errs
		},
		forward: func() (errs []error) {
			matched, errs = a.ch.deleteACLs(ctx, filters)
			return errs
		},
		applied: allApplied(len(filters), func(im *metadata.Image, i int) bool {
			return !slices.ContainsFunc(matched[i], im.ACLs.Has)
		}),
		item: func(i int) string { return "ACLs matching " + filters[i].String() },
	})
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
