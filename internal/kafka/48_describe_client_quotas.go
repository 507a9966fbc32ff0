package kafka

// DescribeClientQuotas: v0-1 (KIP-546).
//
// Served by every node from its metadata image. Each component filters on one entity
// type: EXACT (0) a name, DEFAULT (1) the default entity, ANY (2) any name or the
// default. Strict: the entity has no component of a type the filter does not name;
// otherwise it may. No component and not strict: every entity. A type named twice, an
// EXACT without a name or a DEFAULT/ANY with one is INVALID_REQUEST. Entities are
// listed in their order (user, then client-id), values by key.

import (
	"context"
	"fmt"
	"slices"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(48, 0, 1, handleDescribeClientQuotas) }

func handleDescribeClientQuotas(_ context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.DescribeClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	// With ACLs on, as Kafka: DESCRIBE_CONFIGS on the cluster.
	if err := s.authorize(r, metadata.ACLOpDescribeConfigs, auth.Cluster); err != nil {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), reasonMessage(err)
		return resp, nil
	}
	if err := checkQuotaFilter(req.Components); err != nil {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), reasonMessage(err)
		return resp, nil
	}
	q := s.leadership.Image().ClientQuotas
	if q == nil {
		return resp, nil
	}
	var ents []metadata.QuotaEntity
	for e := range q.Entities {
		if quotaFilterMatches(req.Components, req.Strict, e) {
			ents = append(ents, e)
		}
	}
	slices.SortFunc(ents, func(a, b metadata.QuotaEntity) int {
		ta, _ := a.MarshalText()
		tb, _ := b.MarshalText()
		return slices.Compare(ta, tb)
	})
	for _, e := range ents {
		resp.Entries = append(resp.Entries, describeQuotaEntry(e, q.Entities[e]))
	}
	return resp, nil
}

func checkQuotaFilter(cs []kmsg.DescribeClientQuotasRequestComponent) error {
	seen := map[string]bool{}
	for _, c := range cs {
		if seen[c.EntityType] {
			return fmt.Errorf("%w: entity type %q named twice in the filter", kerr.InvalidRequest, c.EntityType)
		}
		seen[c.EntityType] = true
		switch c.EntityType {
		case metadata.QuotaEntityUser, metadata.QuotaEntityClientID, "ip":
		default:
			return fmt.Errorf("%w: unknown quota entity type %q (want user or client-id)", kerr.InvalidRequest, c.EntityType)
		}
		switch c.MatchType {
		case kmsg.QuotasMatchTypeExact:
			if c.Match == nil {
				return fmt.Errorf("%w: %s: an exact match needs a name", kerr.InvalidRequest, c.EntityType)
			}
		case kmsg.QuotasMatchTypeDefault, kmsg.QuotasMatchTypeAny:
			if c.Match != nil {
				return fmt.Errorf("%w: %s: match type %s takes no name", kerr.InvalidRequest, c.EntityType, c.MatchType)
			}
		default:
			return fmt.Errorf("%w: %s: unknown match type %d", kerr.InvalidRequest, c.EntityType, c.MatchType)
		}
	}
	return nil
}

func quotaFilterMatches(cs []kmsg.DescribeClientQuotasRequestComponent, strict bool, e metadata.QuotaEntity) bool {
	named := map[string]bool{}
	for _, c := range cs {
		named[c.EntityType] = true
		var n metadata.QuotaName
		switch c.EntityType {
		case metadata.QuotaEntityUser:
			n = e.User
		case metadata.QuotaEntityClientID:
			n = e.ClientID
		}
		if !n.Set {
			return false
		}
		switch c.MatchType {
		case kmsg.QuotasMatchTypeExact:
			if n.Default || n.Name != *c.Match {
				return false
			}
		case kmsg.QuotasMatchTypeDefault:
			if !n.Default {
				return false
			}
		}
	}
	if strict {
		return (!e.User.Set || named[metadata.QuotaEntityUser]) && (!e.ClientID.Set || named[metadata.QuotaEntityClientID])
	}
	return true
}

func describeQuotaEntry(e metadata.QuotaEntity, vals map[string]float64) kmsg.DescribeClientQuotasResponseEntry {
	re := kmsg.NewDescribeClientQuotasResponseEntry()
	add := func(typ string, n metadata.QuotaName) {
		if !n.Set {
			return
		}
		c := kmsg.NewDescribeClientQuotasResponseEntryEntity()
		c.Type = typ
		if !n.Default {
			c.Name = kmsg.StringPtr(n.Name)
		}
		re.Entity = append(re.Entity, c)
	}
	add(metadata.QuotaEntityUser, e.User)
	add(metadata.QuotaEntityClientID, e.ClientID)
	keys := make([]string, 0, len(vals))
	for k := range vals {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := kmsg.NewDescribeClientQuotasResponseEntryValue()
		v.Key, v.Value = k, vals[k]
		re.Values = append(re.Values, v)
	}
	return re
}
