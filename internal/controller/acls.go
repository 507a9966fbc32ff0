package controller

// ACLs (Kafka's AclControlManager): CreateAcls and DeleteAcls are controller
// operations, so that every node applies the same ACLs in the same order from the
// metadata log. Both return once the change is applied on this node; the caller
// (controlplane) then waits for every live node.

import (
	"context"
	"fmt"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/metadata"
)

// CreateACLs validates each ACL (auth.ValidateACL; ErrInvalidRequest naming the ACL)
// and commits the valid ones that do not exist yet as one entry. It returns one error
// per ACL, in order; creating an ACL that exists succeeds without a record, as Kafka.
func (c *Controller) CreateACLs(ctx context.Context, acls []metadata.ACL) []error {
	errs := make([]error, len(acls))
	err := c.withLeader(ctx, func(im *metadata.Image) error {
		var recs []metadata.Record
		seen := map[metadata.ACL]bool{}
		for i, a := range acls {
			if err := auth.ValidateACL(a); err != nil {
				errs[i] = fmt.Errorf("%w: %w", ErrInvalidRequest, err)
				continue
			}
			if seen[a] || im.ACLs.Has(a) {
				continue
			}
			seen[a] = true
			recs = append(recs, metadata.Record{Type: metadata.ACLType, ACL: &metadata.ACLChange{ACL: a}})
		}
		if len(recs) == 0 {
			return nil
		}
		_, err := c.proposeLocked(ctx, recs)
		return err
	})
	fillNil(errs, err)
	return errs
}

// DeleteACLs removes every ACL each filter matches (auth.Filter.Matches), all in one
// entry. It returns, per filter in order, the ACLs it matched (an ACL two filters
// match is reported by both and removed once) or the error that refused the filter
// (ErrInvalidRequest for an UNKNOWN field).
func (c *Controller) DeleteACLs(ctx context.Context, filters []auth.Filter) ([][]metadata.ACL, []error) {
	matched := make([][]metadata.ACL, len(filters))
	errs := make([]error, len(filters))
	err := c.withLeader(ctx, func(im *metadata.Image) error {
		var recs []metadata.Record
		removed := map[metadata.ACL]bool{}
		for i, f := range filters {
			if err := auth.ValidateFilter(f); err != nil {
				errs[i] = fmt.Errorf("%w: %w", ErrInvalidRequest, err)
				continue
			}
			matched[i] = auth.Select(im.ACLs.All(), f)
			for _, a := range matched[i] {
				if !removed[a] {
					removed[a] = true
					recs = append(recs, metadata.Record{Type: metadata.ACLType, ACL: &metadata.ACLChange{ACL: a, Remove: true}})
				}
			}
		}
		if len(recs) == 0 {
			return nil
		}
		_, err := c.proposeLocked(ctx, recs)
		return err
	})
	if err != nil {
		for i := range matched {
			matched[i] = nil
		}
	}
	fillNil(errs, err)
	return matched, errs
}

// fillNil sets every nil error of errs to err.
func fillNil(errs []error, err error) {
	if err == nil {
		return
	}
	for i := range errs {
		if errs[i] == nil {
			errs[i] = err
		}
	}
}
