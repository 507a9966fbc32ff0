package kafka

// Client quota enforcement, the KIP-219 way. After a request is handled, its bytes
// (produce: the request; consumer fetch: the response) and its handling time are
// recorded against the quotas that apply to its user and client id
// (internal/quota). If a rate is over its bound, the response goes out at once with
// throttle_time_ms set, and the connection is muted: no further request is read from it
// for that long, so a client that ignores the field (librdkafka) is slowed all the same.
// A throttled consumer fetch is answered empty (and its bytes unrecorded), as Kafka
// does. Requests from other nodes (forwarding, controller traffic) and follower
// fetches are never throttled.
//
// The request time counted against request_percentage is the handler's wall time, not
// CPU time (Go has no per-goroutine CPU clock): without the long poll of a fetch (the
// time parked waiting for data) and, for a produce, only up to the end of its append
// (the wait for replication and fsync does not hold the node's resources).

import (
	"context"
	"strings"
	"time"

	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/quota"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// requestQuota is a request's quota state; only its handler goroutine touches it.
type requestQuota struct {
	appendedAt time.Time     // a produce's append phase ended (zero: not yet)
	parked     time.Duration // time a fetch spent waiting for data
	recorded   bool          // the fetch hook already recorded this request
	throttle   time.Duration // the throttle time found so far
	by         quota.Type    // the quota behind throttle
	match      quota.Match
}

func newQuotaManager(cfg Config, m *Metrics) *quota.Manager {
	qc := quota.Config{}
	if cfg.Broker != nil {
		qc.Samples = int(cfg.Broker.QuotaWindowNum)
		qc.Window = time.Duration(cfg.Broker.QuotaWindowSizeSeconds) * time.Second
	}
	if m != nil {
		qc.Metrics = m.quota
	}
	return quota.NewManager(qc)
}

type requestKey struct{}

// withRequest makes r reachable from the handler's ctx (listenerOf).
func withRequest(ctx context.Context, r *request) context.Context {
	return context.WithValue(ctx, requestKey{}, r)
}

// clientQuotas returns the quotas in force for r, nil when none applies (no quota set,
// or a request from another node).
func (s *Server) clientQuotas(r *request) *metadata.ClientQuotas {
	if s.admin == nil || strings.HasPrefix(r.clientID, nodeClientIDPrefix) {
		return nil
	}
	switch r.key {
	case 56, 62, 63, 67: // broker-to-controller APIs
		return nil
	case 1:
		if fetchReplicaID(r.kreq.(*kmsg.FetchRequest)) >= 0 {
			return nil
		}
	}
	return s.leadership.Image().ClientQuotas
}

// quotaLimited reports whether any client quota applies to r's user and client id.
func (s *Server) quotaLimited(r *request) bool {
	q := s.clientQuotas(r)
	return q != nil && s.quotas.Applies(q, r.conn.user, r.clientID)
}

func fetchReplicaID(req *kmsg.FetchRequest) int32 {
	if req.Version >= 15 {
		return req.ReplicaState.ID
	}
	return req.ReplicaID
}

// quotaBefore runs before the handler: a consumer fetch asks for no more than its
// quota lets through in one window (Kafka's getMaxValueInQuotaWindow), so that one
// fetch never needs a throttle longer than the window.
func (s *Server) quotaBefore(r *request) {
	if r.key != kmsg.Fetch.Int16() {
		return
	}
	q := s.clientQuotas(r)
	if q == nil {
		return
	}
	req := r.kreq.(*kmsg.FetchRequest)
	if most, ok := s.quotas.MaxInWindow(q, quota.Fetch, r.conn.user, r.clientID); ok && most < float64(req.MaxBytes) {
		req.MaxBytes = int32(max(most, 1))
	}
}

// requestSeconds is r's handling time so far, as request_percentage counts it.
func (r *request) requestSeconds(now time.Time) float64 {
	end := now
	if r.key == kmsg.Produce.Int16() && !r.quota.appendedAt.IsZero() {
		end = r.quota.appendedAt
	}
	return max(end.Sub(r.received)-r.quota.parked, 0).Seconds()
}

// noteThrottle keeps the longest throttle found for r.
func (r *request) noteThrottle(t quota.Type, res quota.Result) {
	if res.Throttle > r.quota.throttle {
		r.quota.throttle, r.quota.by, r.quota.match = res.Throttle, t, res.Match
	}
}

// throttleFetch is the fetch handler's hook once its response is final: it records the
// response's bytes and the request's time, and when either quota is over its bound it
// empties the response (true: the caller must not commit it to the fetch session).
func (s *Server) throttleFetch(r *request, resp *kmsg.FetchResponse) bool {
	q := s.clientQuotas(r)
	if q == nil {
		return false
	}
	now, user := time.Now(), r.conn.user
	r.quota.recorded = true
	r.noteThrottle(quota.Request, s.quotas.Record(q, quota.Request, user, r.clientID, r.requestSeconds(now), now))
	size := float64(fetchResponseSize(r, resp))
	r.noteThrottle(quota.Fetch, s.quotas.Record(q, quota.Fetch, user, r.clientID, size, now))
	if r.quota.throttle == 0 {
		return false
	}
	s.quotas.Unrecord(q, quota.Fetch, user, r.clientID, size, now)
	resp.Topics = nil
	r.releaseRecords()
	return true
}

// fetchResponseSize estimates the encoded size of resp: its records (spliced ones by
// their file range) and a few dozen bytes per partition.
func fetchResponseSize(r *request, resp *kmsg.FetchResponse) int {
	n := 64
	for _, t := range resp.Topics {
		n += 32 + len(t.Topic)
		for _, p := range t.Partitions {
			n += 48 + len(p.RecordBatches) + 16*len(p.AbortedTransactions)
		}
	}
	for _, sp := range r.splices {
		n += sp.size - len(sp.token)
	}
	return n
}

// quotaAfter records a handled request against its quotas, sets throttle_time_ms on
// its response (nil for acks=0) and mutes the connection when a quota is exceeded.
func (c *conn) quotaAfter(r *request, resp kmsg.Response, size int64) {
	s := c.s
	q := s.clientQuotas(r)
	if q == nil {
		return
	}
	now, user := time.Now(), c.user
	if !r.quota.recorded {
		if r.key == kmsg.Produce.Int16() {
			r.noteThrottle(quota.Produce, s.quotas.Record(q, quota.Produce, user, r.clientID, float64(size), now))
		}
		if r.key != kmsg.Produce.Int16() || resp != nil { // Kafka leaves acks=0 produce out of the request quota
			r.noteThrottle(quota.Request, s.quotas.Record(q, quota.Request, user, r.clientID, r.requestSeconds(now), now))
		}
	}
	d := r.quota.throttle
	if d <= 0 {
		return
	}
	if tr, ok := resp.(kmsg.SetThrottleResponse); ok {
		tr.SetThrottle(int32(min(d.Milliseconds(), 1<<31-1)))
	}
	s.quotas.Throttled(r.quota.by, r.quota.match, d)
	c.mute(now.Add(d))
	s.logger.Debug("client quota exceeded; throttling", "quota", r.quota.by.Key(), "entity", r.quota.match.Entity.String(),
		"user", user, "client_id", r.clientID, "bound", r.quota.match.Bound, "throttle", d, "remote", c.remote)
}

// mute stops the reader from reading another request before until.
func (c *conn) mute(until time.Time) {
	for {
		cur := c.mutedUntil.Load()
		if until.UnixNano() <= cur || c.mutedUntil.CompareAndSwap(cur, until.UnixNano()) {
			return
		}
	}
}

// waitUnmuted waits while the connection is muted; false if the server stops.
func (c *conn) waitUnmuted() bool {
	for {
		d := time.Until(time.Unix(0, c.mutedUntil.Load()))
		if d <= 0 {
			return true
		}
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-c.s.ctx.Done():
			t.Stop()
			return false
		}
	}
}
