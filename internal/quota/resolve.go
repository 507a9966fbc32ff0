package quota

import "github.com/runnel-io/runnel/internal/metadata"

// AnonymousUser is the user of every connection that did not authenticate, as Kafka's
// KafkaPrincipal.ANONYMOUS: quotas set on user ANONYMOUS, or on the default user,
// apply to unauthenticated clients.
const AnonymousUser = "ANONYMOUS"

// Type is what a quota limits.
type Type uint8

const (
	// Produce limits the bytes of produce requests per second (producer_byte_rate).
	Produce Type = iota
	// Fetch limits the bytes of consumer fetch responses per second (consumer_byte_rate).
	Fetch
	// Request limits the share of request handling time, in percent of one core, over
	// the window (request_percentage).
	Request
	numTypes
)

// Key is the quota key that sets t.
func (t Type) Key() string {
	return [...]string{metadata.ProducerByteRate, metadata.ConsumerByteRate, metadata.RequestPercentage}[t]
}

// String is Kafka's name of the quota type, the quota label of the metrics.
func (t Type) String() string { return [...]string{"produce", "fetch", "request"}[t] }

// Tags identify a rate: every request with the same Type and Tags is measured against
// one rate (Kafka's quota metric tags). The dimension the matching quota does not name
// is empty: a client-id quota is shared by every user of that client id.
type Tags struct{ User, ClientID string }

// Match is the quota that applies to a request.
type Match struct {
	Bound  float64
	Entity metadata.QuotaEntity // where the bound is set
	Tags   Tags
}

// Resolve finds the quota of type t that applies to user with clientID, in Kafka's
// precedence order (the first entity that sets t's key wins, per key):
//
//	user + client-id, user + default client-id, user,
//	default user + client-id, default user + default client-id, default user,
//	client-id, default client-id.
func Resolve(q *metadata.ClientQuotas, t Type, user, clientID string) (Match, bool) {
	if q == nil || len(q.Entities) == 0 {
		return Match{}, false
	}
	u, du := metadata.QuotaNamed(user), metadata.QuotaDefault()
	c, dc := metadata.QuotaNamed(clientID), metadata.QuotaDefault()
	both, userOnly, clientOnly := Tags{user, clientID}, Tags{User: user}, Tags{ClientID: clientID}
	order := [...]struct {
		e    metadata.QuotaEntity
		tags Tags
	}{
		{metadata.QuotaEntity{User: u, ClientID: c}, both},
		{metadata.QuotaEntity{User: u, ClientID: dc}, both},
		{metadata.QuotaEntity{User: u}, userOnly},
		{metadata.QuotaEntity{User: du, ClientID: c}, both},
		{metadata.QuotaEntity{User: du, ClientID: dc}, both},
		{metadata.QuotaEntity{User: du}, userOnly},
		{metadata.QuotaEntity{ClientID: c}, clientOnly},
		{metadata.QuotaEntity{ClientID: dc}, clientOnly},
	}
	for _, o := range order {
		if v, ok := q.Get(o.e, t.Key()); ok {
			return Match{Bound: v, Entity: o.e, Tags: o.tags}, true
		}
	}
	return Match{}, false
}
