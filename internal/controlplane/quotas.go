package controlplane

// Client quotas: AlterClientQuotas runs on the active controller (forwarded there from
// any other node, KIP-590) and answers once every live node serves the change, so that
// the quota is enforced on whichever node a client talks to.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/metadata"
)

func (a *Admin) AlterClientQuotas(ctx context.Context, alts []metadata.QuotaAlteration, validateOnly bool) []error {
	return a.run(ctx, change{
		local:        func() []error { return a.ctrl.AlterClientQuotas(ctx, alts, validateOnly) },
		forward:      func() []error { return a.ch.alterClientQuotas(ctx, alts, validateOnly) },
		applied:      allApplied(len(alts), func(im *metadata.Image, i int) bool { return quotasApplied(im.ClientQuotas, alts[i]) }),
		item:         func(i int) string { return "client quotas of " + alts[i].Entity.String() },
		validateOnly: validateOnly,
	})
}

// quotasApplied reports whether q reflects alt.
func quotasApplied(q *metadata.ClientQuotas, alt metadata.QuotaAlteration) bool {
	for k, v := range alt.Set {
		got, ok := q.Get(alt.Entity, k)
		if v == nil && ok || v != nil && (!ok || got != *v) {
			return false
		}
	}
	return true
}

// alterClientQuotas forwards an AlterClientQuotas to the active controller.
func (ch *Channel) alterClientQuotas(ctx context.Context, alts []metadata.QuotaAlteration, validateOnly bool) []error {
	errs := make([]error, len(alts))
	err := ch.do(ctx, "forward AlterClientQuotas", func(ctx context.Context) error {
		req := kmsg.NewPtrAlterClientQuotasRequest()
		req.ValidateOnly = validateOnly
		names := make([]string, len(alts))
		for i, alt := range alts {
			req.Entries = append(req.Entries, quotaEntry(alt))
			names[i] = alt.Entity.String()
		}
		resp, err := ch.send(ctx, req)
		if err != nil {
			return err
		}
		answers := map[string]error{}
		for _, e := range resp.(*kmsg.AlterClientQuotasResponse).Entries {
			answers[entryEntity(e.Entity).String()] = answerError(e.ErrorCode, e.ErrorMessage)
		}
		return matchAnswers(errs, names, answers, func(n string) string { return "quota entity " + n })
	})
	fillErrors(errs, err)
	return errs
}

func quotaEntry(alt metadata.QuotaAlteration) kmsg.AlterClientQuotasRequestEntry {
	e := kmsg.NewAlterClientQuotasRequestEntry()
	add := func(typ string, n metadata.QuotaName) {
		if !n.Set {
			return
		}
		c := kmsg.NewAlterClientQuotasRequestEntryEntity()
		c.Type = typ
		if !n.Default {
			c.Name = kmsg.StringPtr(n.Name)
		}
		e.Entity = append(e.Entity, c)
	}
	add(metadata.QuotaEntityUser, alt.Entity.User)
	add(metadata.QuotaEntityClientID, alt.Entity.ClientID)
	for k, v := range alt.Set {
		op := kmsg.NewAlterClientQuotasRequestEntryOp()
		op.Key, op.Remove = k, v == nil
		if v != nil {
			op.Value = *v
		}
		e.Ops = append(e.Ops, op)
	}
	return e
}

// entryEntity reads an answer's entity back (unknown types are left out).
func entryEntity(cs []kmsg.AlterClientQuotasResponseEntryEntity) metadata.QuotaEntity {
	var e metadata.QuotaEntity
	for _, c := range cs {
		n := metadata.QuotaDefault()
		if c.Name != nil {
			n = metadata.QuotaNamed(*c.Name)
		}
		switch c.Type {
		case metadata.QuotaEntityUser:
			e.User = n
		case metadata.QuotaEntityClientID:
			e.ClientID = n
		}
	}
	return e
}
