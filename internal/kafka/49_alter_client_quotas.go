package kafka

// AlterClientQuotas: v0-1 (KIP-546).
//
// A controller operation: every node forwards it to the active controller (KIP-590),
// which validates each entry (known keys for user and client-id entities, byte rates
// whole and positive; INVALID_REQUEST naming the entity and key otherwise), commits the
// valid ones in one metadata entry, and answers once every live node serves them, so
// that a quota is enforced everywhere when this returns. ValidateOnly checks only.
// Entities: user, client-id, or both; a null name is the default (<default>). The ip
// entity (connection_creation_rate) is not supported: INVALID_REQUEST.

import (
	"context"
	"fmt"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(49, 0, 1, handleAlterClientQuotas) }

func handleAlterClientQuotas(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.AlterClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	errs := make([]error, len(req.Entries))
	var alts []metadata.QuotaAlteration
	var at []int // index in req.Entries of each of alts
	for i, e := range req.Entries {
		alt, err := quotaAlteration(e)
		if errs[i] = err; err == nil {
			alts = append(alts, alt)
			at = append(at, i)
		}
	}
	// With ACLs on, as Kafka: ALTER_CONFIGS on the cluster, else every entry answers
	// CLUSTER_AUTHORIZATION_FAILED.
	if err := s.authorize(r, metadata.ACLOpAlterConfigs, auth.Cluster); err != nil {
		for i := range errs {
			errs[i] = err
		}
		alts = nil
	}
	if len(alts) > 0 {
		for j, err := range s.admin.AlterClientQuotas(ctx, alts, req.ValidateOnly) {
			errs[at[j]] = err
		}
	}
	for i, e := range req.Entries {
		re := kmsg.NewAlterClientQuotasResponseEntry()
		for _, c := range e.Entity {
			rc := kmsg.NewAlterClientQuotasResponseEntryEntity()
			rc.Type, rc.Name = c.Type, c.Name
			re.Entity = append(re.Entity, rc)
		}
		re.ErrorCode, re.ErrorMessage = errorCode(errs[i]), reasonMessage(errs[i])
		if errs[i] != nil {
			s.logger.Info("client quota change refused", "entity", entityText(e.Entity), "err", errs[i])
		}
		resp.Entries = append(resp.Entries, re)
	}
	return resp, nil
}

func quotaAlteration(e kmsg.AlterClientQuotasRequestEntry) (metadata.QuotaAlteration, error) {
	ent, err := quotaEntity(e.Entity)
	if err != nil {
		return metadata.QuotaAlteration{}, err
	}
	alt := metadata.QuotaAlteration{Entity: ent, Set: map[string]*float64{}}
	for _, op := range e.Ops {
		if _, dup := alt.Set[op.Key]; dup {
			return metadata.QuotaAlteration{}, fmt.Errorf("%w: %s: quota key %q named twice", kerr.InvalidRequest, ent, op.Key)
		}
		if op.Remove {
			alt.Set[op.Key] = nil
		} else {
			v := op.Value
			alt.Set[op.Key] = &v
		}
	}
	return alt, nil
}

// quotaEntity turns the request's components into an entity: user and client-id, each
// at most once, a null name being the default.
func quotaEntity(cs []kmsg.AlterClientQuotasRequestEntryEntity) (metadata.QuotaEntity, error) {
	var e metadata.QuotaEntity
	for _, c := range cs {
		n := metadata.QuotaDefault()
		if c.Name != nil {
			n = metadata.QuotaNamed(*c.Name)
		}
		var slot *metadata.QuotaName
		switch c.Type {
		case metadata.QuotaEntityUser:
			slot = &e.User
		case metadata.QuotaEntityClientID:
			slot = &e.ClientID
		case "ip":
			return e, fmt.Errorf("%w: ip quotas (connection_creation_rate) are not supported", kerr.InvalidRequest)
		default:
			return e, fmt.Errorf("%w: unknown quota entity type %q (want user or client-id)", kerr.InvalidRequest, c.Type)
		}
		if slot.Set {
			return e, fmt.Errorf("%w: quota entity type %q named twice", kerr.InvalidRequest, c.Type)
		}
		*slot = n
	}
	if !e.User.Set && !e.ClientID.Set {
		return e, fmt.Errorf("%w: a quota entity needs a user, a client-id or both", kerr.InvalidRequest)
	}
	return e, nil
}

func entityText(cs []kmsg.AlterClientQuotasRequestEntryEntity) string {
	if e, err := quotaEntity(cs); err == nil {
		return e.String()
	}
	return fmt.Sprint(cs)
}
