package metadata

// Client quotas (Kafka KIP-13, KIP-55, KIP-546): rates set on users, client ids, their
// defaults and the combinations of a user with a client id, kept in the image as
// Kafka's KRaft keeps them (ClientQuotaRecord). Which quota applies to a connection is
// decided in internal/quota; this file only holds them.

import (
	"fmt"
	"maps"
	"math"
	"net/url"
	"strings"
)

// ClientQuotaType sets or removes one quota key of one entity (Kafka's
// ClientQuotaRecord): Record.ClientQuota.
const ClientQuotaType RecordType = "client_quota"

// Quota entity types and keys, as Kafka names them.
const (
	QuotaEntityUser     = "user"
	QuotaEntityClientID = "client-id"

	ProducerByteRate  = "producer_byte_rate"
	ConsumerByteRate  = "consumer_byte_rate"
	RequestPercentage = "request_percentage"
)

// QuotaName is one component of a quota entity: absent (the entity has no such
// component), the default (Kafka's <default>, a null name on the wire) or a name.
// The empty name is a name: a client may send an empty client id.
type QuotaName struct {
	Set     bool   `json:"set,omitempty"`
	Default bool   `json:"default,omitempty"`
	Name    string `json:"name,omitempty"`
}

// QuotaNamed is the component for name; QuotaDefault the <default> component.
func QuotaNamed(name string) QuotaName { return QuotaName{Set: true, Name: name} }

// QuotaDefault is the <default> component.
func QuotaDefault() QuotaName { return QuotaName{Set: true, Default: true} }

// String is the component as kafka-configs.sh prints it: the name, or <default>.
func (n QuotaName) String() string {
	if n.Default {
		return "<default>"
	}
	return n.Name
}

// QuotaEntity is who a quota applies to: a user, a client id, or a user with a client
// id (each of them possibly the default). It is comparable, and a map key.
type QuotaEntity struct {
	User     QuotaName
	ClientID QuotaName
}

// String reads like Kafka's entity names: `user=alice, client-id=<default>`.
func (e QuotaEntity) String() string {
	var parts []string
	if e.User.Set {
		parts = append(parts, "user="+e.User.String())
	}
	if e.ClientID.Set {
		parts = append(parts, "client-id="+e.ClientID.String())
	}
	return strings.Join(parts, ", ")
}

// MarshalText encodes the entity for JSON map keys: `user=alice&client-id=` with names
// query-escaped and the default written as a bare key (`user&client-id=x`), so no name
// can collide with the default.
func (e QuotaEntity) MarshalText() ([]byte, error) {
	var parts []string
	add := func(k string, n QuotaName) {
		switch {
		case !n.Set:
		case n.Default:
			parts = append(parts, k)
		default:
			parts = append(parts, k+"="+url.QueryEscape(n.Name))
		}
	}
	add(QuotaEntityUser, e.User)
	add(QuotaEntityClientID, e.ClientID)
	return []byte(strings.Join(parts, "&")), nil
}

// UnmarshalText parses what MarshalText wrote.
func (e *QuotaEntity) UnmarshalText(b []byte) error {
	*e = QuotaEntity{}
	for _, part := range strings.Split(string(b), "&") {
		k, v, named := strings.Cut(part, "=")
		n := QuotaDefault()
		if named {
			name, err := url.QueryUnescape(v)
			if err != nil {
				return fmt.Errorf("quota entity %q: %w", b, err)
			}
			n = QuotaNamed(name)
		}
		switch k {
		case QuotaEntityUser:
			e.User = n
		case QuotaEntityClientID:
			e.ClientID = n
		default:
			return fmt.Errorf("quota entity %q: unknown entity type %q", b, k)
		}
	}
	return nil
}

// ClientQuotaChange is the ClientQuotaType payload: Key of Entity becomes Value, or is
// removed when Value is nil.
type ClientQuotaChange struct {
	Entity QuotaEntity `json:"entity"`
	Key    string      `json:"key"`
	Value  *float64    `json:"value,omitempty"`
}

// ClientQuotas are every quota set, by entity and key. Immutable like the Image: a
// change makes a new one, so a reader may compare pointers to see whether anything
// changed.
type ClientQuotas struct {
	Entities map[QuotaEntity]map[string]float64 `json:"entities"`
}

// Get returns the value of key for e.
func (q *ClientQuotas) Get(e QuotaEntity, key string) (float64, bool) {
	if q == nil {
		return 0, false
	}
	v, ok := q.Entities[e][key]
	return v, ok
}

// applyClientQuota returns q after ch (q itself when nothing changes).
func applyClientQuota(q *ClientQuotas, ch *ClientQuotaChange) *ClientQuotas {
	if ch == nil || ch.Key == "" || (!ch.Entity.User.Set && !ch.Entity.ClientID.Set) {
		return q
	}
	old, had := q.Get(ch.Entity, ch.Key)
	if ch.Value == nil && !had || ch.Value != nil && had && old == *ch.Value {
		return q
	}
	n := &ClientQuotas{Entities: map[QuotaEntity]map[string]float64{}}
	if q != nil {
		n.Entities = maps.Clone(q.Entities)
	}
	vals := maps.Clone(n.Entities[ch.Entity])
	if vals == nil {
		vals = map[string]float64{}
	}
	if ch.Value == nil {
		delete(vals, ch.Key)
	} else {
		vals[ch.Key] = *ch.Value
	}
	if len(vals) == 0 {
		delete(n.Entities, ch.Entity)
	} else {
		n.Entities[ch.Entity] = vals
	}
	return n
}

// ValidateQuota checks one quota value, with an error naming the key: the keys Kafka
// has for users and client ids, byte rates as whole numbers of bytes per second, all
// of them positive (a rate of 0 would throttle for ever).
func ValidateQuota(key string, value float64) error {
	switch key {
	case ProducerByteRate, ConsumerByteRate:
		if value != math.Trunc(value) || value > math.MaxInt64 {
			return fmt.Errorf("%s=%v: must be a whole number of bytes per second", key, value)
		}
	case RequestPercentage:
	default:
		return fmt.Errorf("unknown quota key %q (want %s, %s or %s)", key, ProducerByteRate, ConsumerByteRate, RequestPercentage)
	}
	if !(value > 0) || math.IsInf(value, 0) {
		return fmt.Errorf("%s=%v: must be above 0", key, value)
	}
	return nil
}
