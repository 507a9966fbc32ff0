package kafka

import (
	"fmt"
	"time"
)

// Admission: what a request must hold, and wait for, to be read and handled. The
// connection's client quota throttle comes first (waitUnmuted, quota.go), then a
// request slot (queued.max.requests) and the request's bytes of
// queued.max.request.bytes, held until its response is queued (conn.handle). A
// connection that goes quiet for connections.max.idle.ms is closed (renewIdle).

// admitRequest checks a frame's size against socket.request.max.bytes, admits it
// (admit) and reads, parses and gates it (preauth). It returns a nil pending and a nil
// error when the server is closing.
func (c *conn) admitRequest(fr *frameReader, size int32) (*pending, error) {
	s := c.s
	if maxBytes := s.cfg.Broker.SocketRequestMaxBytes; size < 8 || (maxBytes > 0 && size > maxBytes) {
		return nil, fmt.Errorf("request frame of %d bytes is outside [8, socket.request.max.bytes=%d]", size, maxBytes)
	}
	if !s.admit(int64(size)) {
		return nil, nil
	}
	frame, err := fr.frame(size)
	if err != nil {
		s.releaseAdmission(int64(size))
		return nil, err
	}
	p, err := c.parse(frame)
	if err == nil {
		err = c.gateRequest(p.req.key)
	}
	if err != nil {
		s.releaseAdmission(int64(size))
		return nil, err
	}
	p.size, p.req.frame = int64(size), frame
	return p, nil
}

// admit takes a request slot, then size bytes of the byte budget, waiting for each:
// when the server is saturated the socket stops being read (back-pressure) and memory
// stays bounded. False, holding nothing, when the server is closing.
func (s *Server) admit(size int64) bool {
	select {
	case s.slots <- struct{}{}:
	case <-s.ctx.Done():
		return false
	}
	if !s.bytes.acquire(s.ctx, size) {
		<-s.slots
		return false
	}
	return true
}

// releaseAdmission gives back what admit took for a request of size bytes.
func (s *Server) releaseAdmission(size int64) {
	s.bytes.release(size)
	<-s.slots
}

// oneAtATime reports whether the reader must wait for r's handler before reading the
// next request: before SASL authentication (the handler changes what the next frame
// is: after a v0 SaslHandshake a raw token, not a request), and, as Kafka, on a
// connection a client quota applies to, so that its throttle holds back the requests
// a client pipelines (quota.go). Called before r's handler starts.
func (c *conn) oneAtATime(r *request) bool {
	return !c.authenticated || c.s.quotaLimited(r)
}

// awaitHandled waits for p's handler to finish; false when the server is closing.
func (c *conn) awaitHandled(p *pending) bool {
	select {
	case <-p.done:
		return true
	case <-c.s.ctx.Done():
		return false
	}
}

// renewIdle decides, when a read deadline passed, whether the connection was active
// during the idle period that ended: it read a byte (readSome), read a request, wrote
// a response or has one pending, as Kafka's Selector counts reads and writes alike.
// An active connection gets another period (true); an idle one is closed (false).
func (c *conn) renewIdle(readSome bool) bool {
	r, w := c.reads, c.writes.Load()
	if !readSome && r == c.seenReads && w == c.seenWrites && r <= w {
		return false
	}
	c.seenReads, c.seenWrites = r, w
	c.nc.SetReadDeadline(time.Now().Add(c.idle))
	return true
}
