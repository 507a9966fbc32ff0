package controller

import (
	"context"
	"fmt"
	"sort"

	"github.com/runnel-io/runnel/internal/metadata"
)

// AlterClientQuotas validates each alteration (metadata.ValidateQuota; ErrInvalidRequest
// naming the entity and key) and proposes the valid ones as one entry, unless
// validateOnly. It returns one error per alteration, in order; an alteration that
// changes nothing succeeds without a record.
func (c *Controller) AlterClientQuotas(ctx context.Context, alts []metadata.QuotaAlteration, validateOnly bool) []error {
	errs := make([]error, len(alts))
	err := c.withLeader(ctx, func(im *metadata.Image) error {
		var recs []metadata.Record
		for i, a := range alts {
			if errs[i] = validateQuotaAlteration(a); errs[i] == nil {
				recs = append(recs, clientQuotaRecords(im.ClientQuotas, a)...)
			}
		}
		if validateOnly || len(recs) == 0 {
			return nil
		}
		_, err := c.proposeLocked(ctx, recs)
		return err
	})
	if err != nil {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = err
			}
		}
	}
	return errs
}

func validateQuotaAlteration(a metadata.QuotaAlteration) error {
	if !a.Entity.User.Set && !a.Entity.ClientID.Set {
		return fmt.Errorf("%w: a quota entity needs a user, a client-id or both", ErrInvalidRequest)
	}
	for k, v := range a.Set {
		if v == nil {
			if err := metadata.ValidateQuota(k, 1); err != nil {
				return fmt.Errorf("%w: %s: %w", ErrInvalidRequest, a.Entity, err)
			}
			continue
		}
		if err := metadata.ValidateQuota(k, *v); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrInvalidRequest, a.Entity, err)
		}
	}
	return nil
}

// clientQuotaRecords are the records that apply a to q, one per changed key in key order.
func clientQuotaRecords(q *metadata.ClientQuotas, a metadata.QuotaAlteration) []metadata.Record {
	keys := make([]string, 0, len(a.Set))
	for k := range a.Set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var recs []metadata.Record
	for _, k := range keys {
		v := a.Set[k]
		old, had := q.Get(a.Entity, k)
		if v == nil && !had || v != nil && had && old == *v {
			continue
		}
		recs = append(recs, metadata.Record{Type: metadata.ClientQuotaType,
			ClientQuota: &metadata.ClientQuotaChange{Entity: a.Entity, Key: k, Value: v}})
	}
	return recs
}
