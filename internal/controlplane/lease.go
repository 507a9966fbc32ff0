package controlplane

import (
	"sync/atomic"
	"time"
)

// Lease is this node's right to answer as a partition leader or as a group or
// transaction coordinator: no stale answer from a node that lost its role.
// A heartbeat the active controller answered "unfenced and caught up" (the node had
// applied every record the controller had) grants it until the heartbeat's send time
// plus broker.session.timeout.ms: the controller fences a node only a session timeout
// after the last heartbeat it received, which is later, so while the lease holds, the
// roles in this node's image have not been given to another node by a fence. A fenced,
// shutting-down or unregistered answer revokes it at once. After a pause (SIGSTOP) the
// monotonic clock has run on, so the node refuses until a heartbeat succeeds again,
// and the controller unfences it only once it has applied the record that fenced it.
type Lease struct {
	base time.Time // monotonic reference for until
	// until is the lease's end as nanoseconds since base; 0: no lease.
	until atomic.Int64
}

// NewLease returns a lease that does not hold until a heartbeat grants it.
func NewLease() *Lease { return &Lease{base: time.Now()} }

// Valid reports whether the lease holds now.
func (l *Lease) Valid() bool { return time.Since(l.base) < time.Duration(l.until.Load()) }

// grant extends the lease to sent+d.
func (l *Lease) grant(sent time.Time, d time.Duration) { l.until.Store(int64(sent.Sub(l.base) + d)) }

// revoke ends the lease now.
func (l *Lease) revoke() { l.until.Store(0) }
