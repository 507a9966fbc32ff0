package quota

import (
	"math"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/metadata"
)

func quotas(t *testing.T, set map[metadata.QuotaEntity]float64, key string) *metadata.ClientQuotas {
	t.Helper()
	im := metadata.Empty()
	for e, v := range set {
		im = im.Apply(metadata.Record{Type: metadata.ClientQuotaType,
			ClientQuota: &metadata.ClientQuotaChange{Entity: e, Key: key, Value: &v}}, im.Offset+1)
	}
	return im.ClientQuotas
}

// TestResolvePrecedence removes the quotas one level at a time, most specific first,
// and checks that each time the next level in Kafka's order applies, with the tags the
// rate is shared under.
func TestResolvePrecedence(t *testing.T) {
	u, du := metadata.QuotaNamed("alice"), metadata.QuotaDefault()
	c, dc := metadata.QuotaNamed("app"), metadata.QuotaDefault()
	both, userOnly, clientOnly := Tags{"alice", "app"}, Tags{User: "alice"}, Tags{ClientID: "app"}
	levels := []struct {
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
	// Entities that never apply to alice/app: other names.
	noise := map[metadata.QuotaEntity]float64{
		{User: metadata.QuotaNamed("bob")}:                                      1,
		{ClientID: metadata.QuotaNamed("other")}:                                1,
		{User: u, ClientID: metadata.QuotaNamed("other")}:                       1,
		{User: metadata.QuotaNamed("bob"), ClientID: c}:                         1,
		{User: metadata.QuotaNamed("Alice"), ClientID: metadata.QuotaDefault()}: 1,
	}
	for i := range levels {
		set := map[metadata.QuotaEntity]float64{}
		for e, v := range noise {
			set[e] = v
		}
		for j, l := range levels[i:] {
			set[l.e] = float64(100 * (i + j + 1))
		}
		m, ok := Resolve(quotas(t, set, metadata.ProducerByteRate), Produce, "alice", "app")
		want := levels[i]
		if !ok || m.Entity != want.e || m.Tags != want.tags || m.Bound != float64(100*(i+1)) {
			t.Errorf("levels %d..: got %+v (%v), want entity %s tags %+v bound %d", i+1, m, ok, want.e, want.tags, 100*(i+1))
		}
	}
	if m, ok := Resolve(quotas(t, noise, metadata.ProducerByteRate), Produce, "alice", "app"); ok {
		t.Errorf("only other entities set: got %+v", m)
	}
	// Per key: a user's consumer quota does not hide a client id's producer quota.
	q := quotas(t, map[metadata.QuotaEntity]float64{{ClientID: c}: 5}, metadata.ProducerByteRate)
	if m, ok := Resolve(q, Fetch, "alice", "app"); ok {
		t.Errorf("fetch quota from a producer_byte_rate: %+v", m)
	}
	// Unauthenticated clients are user ANONYMOUS.
	q = quotas(t, map[metadata.QuotaEntity]float64{{User: metadata.QuotaNamed(AnonymousUser)}: 7}, metadata.RequestPercentage)
	if m, ok := Resolve(q, Request, AnonymousUser, "any"); !ok || m.Bound != 7 || m.Tags != (Tags{User: AnonymousUser}) {
		t.Errorf("ANONYMOUS: %+v %v", m, ok)
	}
}

// TestRateConverges drives a rate as a client that sends as fast as it may: it sends a
// request, and sends the next one when its throttle time is over. Over a long run it
// moves the bound, and its first burst is the bound over n-1 windows.
func TestRateConverges(t *testing.T) {
	const bound, req = 1e6, 64 << 10
	for _, n := range []int{2, 11} {
		m := NewManager(Config{Samples: n, Window: time.Second})
		q := quotas(t, map[metadata.QuotaEntity]float64{{ClientID: metadata.QuotaNamed("p")}: bound}, metadata.ProducerByteRate)
		start := time.Unix(1000, 0)
		now, sent, firstThrottle := start, 0.0, -1.0
		for now.Sub(start) < 100*time.Second {
			res := m.Record(q, Produce, AnonymousUser, "p", req, now)
			sent += req
			if res.Throttle > 0 && firstThrottle < 0 {
				firstThrottle = sent
			}
			now = now.Add(time.Millisecond + res.Throttle) // 1 ms per request when not throttled
		}
		got := sent / now.Sub(start).Seconds()
		if math.Abs(got-bound)/bound > 0.05 {
			t.Errorf("n=%d: %.0f bytes/s over 100 s, want %.0f within 5%%", n, got, float64(bound))
		}
		if burst := bound * float64(n-1); firstThrottle < burst || firstThrottle > burst*1.02+req { // plus the ~150 ms the burst took
			t.Errorf("n=%d: first throttle after %.0f bytes, want the bound over %d windows (%.0f)", n, firstThrottle, n-1, burst)
		}
	}
}

func TestUnrecordAndMaxInWindow(t *testing.T) {
	m := NewManager(Config{})
	q := quotas(t, map[metadata.QuotaEntity]float64{{User: metadata.QuotaDefault()}: 1000}, metadata.ConsumerByteRate)
	now := time.Unix(1000, 0)
	if max, ok := m.MaxInWindow(q, Fetch, "u", "c"); !ok || max != 10_000 {
		t.Fatalf("MaxInWindow = %v %v, want 10000 (1000 B/s over 10 windows)", max, ok)
	}
	if r := m.Record(q, Fetch, "u", "c", 20_000, now); r.Throttle != 10*time.Second {
		t.Fatalf("20000 B against 1000 B/s over 10 s: throttle %v, want 10s", r.Throttle)
	}
	m.Unrecord(q, Fetch, "u", "c", 20_000, now)
	if r := m.Record(q, Fetch, "u", "c", 100, now); r.Throttle != 0 || !r.Limited {
		t.Fatalf("after Unrecord: %+v", r)
	}
}
