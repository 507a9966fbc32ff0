package kafka

import "context"

// Per-connection order.
//
// Kafka processes one request of a connection at a time: the broker stops reading a
// socket when it has read a request and reads on only once that request's response is
// sent. So requests a client pipelines on one connection take effect in the order it
// sent them, and clients depend on it: asynchronous offset commits (the last one sent
// is the one that stays), a producer's batches, a group join followed by its sync,
// admin requests in sequence.
//
// Runnel reads ahead (up to maxInFlightPerConn requests) and runs each request on its
// own goroutine, so it keeps the order explicitly: a connOrder hands every request a
// turn, and a request's effect starts only once the previous request's turn has ended.
// For most APIs the turn is the whole handler: the next request starts when this one's
// handler has returned, which is Kafka's order exactly. Two APIs end their turn early,
// at the point after which nothing they do can be observed by a later request of the
// connection out of order (registered with regKeyOverlapping):
//
//   - Produce ends its turn once its batches are appended (offsets assigned, in the
//     order the connection sent them). What it still waits for, the flush and, with
//     acks=all, the ISR's acknowledgement, changes no state a later request reads: the
//     records become visible to readers only at the high watermark, as they would to
//     any other connection, and a failed replication is answered on this request.
//   - Fetch ends its turn once it has taken its fetch session (the session's epoch
//     moves in request order) and read once. Its long poll (MaxWaitMillis, up to
//     seconds) then waits for data without holding back the connection: a consumer
//     whose heartbeats, metadata or commits share the fetch's connection (KafkaJS,
//     some librdkafka setups) is not delayed behind it. A fetch has no effect beyond
//     its session, so a later request cannot observe the overlap, except that a fetch
//     still waiting may return records a later produce of the same connection
//     appended, which Kafka could not: a read that happens later than in Kafka, never
//     a write that happens out of order.
//
// Responses are written in request order whatever the turns (writeLoop), as Kafka.

// connOrder gives out a connection's turns. Only the connection's reader calls next,
// in the order the requests were read.
type connOrder struct {
	last chan struct{} // ended when the latest request's turn ends; nil before the first
}

// next returns the turn of the request read after all earlier ones.
func (o *connOrder) next() *turn {
	t := &turn{prev: o.last, ended: make(chan struct{})}
	o.last = t.ended
	return t
}

// takeTurn waits for r's turn, unless its API takes its turn itself.
func (r *request) takeTurn(ctx context.Context, reg registration) error {
	if reg.overlapping {
		return nil
	}
	return r.turn.wait(ctx)
}

// turn is one request's place in its connection's order: it may take effect once prev
// is closed, and closes ended when later requests may take effect. A nil *turn (a
// request not read from a connection, as in handler tests) is always its turn.
type turn struct {
	prev  <-chan struct{} // nil for the connection's first request
	ended chan struct{}   // nil once end has run
}

// wait blocks until every earlier request of the connection has ended its turn, or
// until ctx ends (the request is then answered with an error and takes no effect).
func (t *turn) wait(ctx context.Context) error {
	if t == nil || t.prev == nil {
		return nil
	}
	select {
	case <-t.prev:
		t.prev = nil
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// end lets the next request of the connection take effect. Idempotent; called by the
// request's handler goroutine only. It must run on every path, also when the request
// failed or its handler panicked, or the connection stalls: conn.handle defers it.
func (t *turn) end() {
	if t != nil && t.ended != nil {
		close(t.ended)
		t.ended = nil
	}
}
