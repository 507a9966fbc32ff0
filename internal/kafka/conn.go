package kafka

import (
	"bufio"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/quota"
	"github.com/runnel-io/runnel/internal/vfs"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxInFlightPerConn bounds the responses a connection may have pending; past it the
// reader waits for the writer, which is also back-pressure on the client.
const maxInFlightPerConn = 64

// request is one decoded request and the slot its response goes into.
type request struct {
	key, version  int16
	correlationID int32
	clientID      string
	kreq          kmsg.Request
	// arrived is when the request's first bytes were read; received when its frame
	// was read whole (after waiting for a request slot and the byte budget).
	arrived, received time.Time
	conn              *conn
	// turn is the request's place in its connection's order (pipeline.go).
	turn *turn
	// frame is the request frame, from the buffer pool. Produce and fetch frames go
	// back to it once the handler is done (their handlers finish all work that reads
	// the request before returning); others are left to the collector, as a handler
	// may hand parts of its request to a goroutine that outlives it.
	frame []byte
	// pooled are pool buffers the response refers to (records read for a fetch); they
	// go back once the response is encoded.
	pooled [][]byte
	// splices are the fetch response's partitions sent from their segment files
	// (sendfile.go).
	splices []*splice
	// quota is what client quotas know of the request (quota.go).
	quota requestQuota
}

// releaseRecords drops what a fetch response's records refer to: the buffers in
// r.pooled go back to the pool (nothing may refer to them after) and the spliced file
// ranges are forgotten.
func (r *request) releaseRecords() {
	for _, b := range r.pooled {
		putBuf(b)
	}
	r.pooled = r.pooled[:0]
	r.splices = r.splices[:0]
}

// releaseFrame gives back the request frame when the API's handler is known to have
// dropped every reference into it by the time it returns (see frame).
func (r *request) releaseFrame() {
	if r.frame != nil && (r.key == kmsg.Produce.Int16() || r.key == kmsg.Fetch.Int16()) {
		putBuf(r.frame)
	}
	r.frame = nil
}

// appendDone ends a produce request's turn once its batches are appended: the
// connection's next request may take effect (pipeline.go). Idempotent; only the
// request's handler goroutine calls it.
func (r *request) appendDone() {
	if r.quota.appendedAt.IsZero() {
		r.quota.appendedAt = time.Now()
	}
	r.turn.end()
}

// pending is a response slot: the writer waits on done in request order.
type pending struct {
	req  *request
	done chan struct{}
	// buf is the encoded response frame; nil means no response (acks=0).
	buf []byte
	// parts, when set, are what to write instead of buf: pieces of buf and file
	// ranges (a fetch response with spliced records, sendfile.go).
	parts []outPart
	// closeAfter closes the connection once the slot is reached.
	closeAfter bool
	// size is the request frame's size, held against queued.max.request.bytes.
	size int64
	// ready is when the response was ready (produce only: its respond stage).
	ready time.Time
}

type conn struct {
	s  *Server
	nc net.Conn // the TLS connection over the socket on a TLS listener
	// listener is the listener the connection was accepted on.
	listener *listener
	// raw is the TCP socket for sendfile; nil for other connections (TLS among them:
	// its records are encrypted in the process, so fetches are copied).
	raw    syscall.RawConn
	remote string
	queue  chan *pending
	// order gives each request read its turn (pipeline.go); only the reader touches it.
	order connOrder
	// sawRequest is set once a request frame was read; only the reader touches it.
	sawRequest bool
	// user is the principal's name client quotas and ACLs apply to:
	// quota.AnonymousUser until authentication sets the authenticated one (a SASL
	// login, else a TLS client certificate's subject, as CN=alice). Written before the
	// connection's first request is served or, on a SASL listener, by the
	// authentication's handler, which the reader waits for (sasl.go).
	user string
	// authenticated is false on a SASL listener until SASL authentication succeeded;
	// until then only ApiVersions, SaslHandshake and SaslAuthenticate are served, one
	// at a time. Written by the SaslAuthenticate handler while the reader waits for it.
	authenticated bool
	// sasl is the authentication in progress on a SASL listener (sasl.go).
	sasl saslState
	// mutedUntil (Unix ns) is when a client quota's throttle ends: the reader reads no
	// request before it (quota.go).
	mutedUntil atomic.Int64

	// idle is connections.max.idle.ms (<= 0: never closed for idleness). The reader
	// closes a connection that for that long read no byte, wrote no response and had
	// none pending (as Kafka's Selector, which counts reads and writes alike).
	idle time.Duration
	// reads counts the requests read (reader only), writes the responses done
	// (written, or dropped for acks=0) by the writer; reads - writes are pending.
	reads  int64
	writes atomic.Int64
	// seenReads and seenWrites are reads and writes when the idle deadline was last
	// set (reader only).
	seenReads, seenWrites int64
}

// errIdle closes a connection idle for connections.max.idle.ms.
var errIdle = errors.New("idle for connections.max.idle.ms")

func newConn(s *Server, nc net.Conn, l *listener) *conn {
	c := &conn{s: s, nc: nc, listener: l, remote: nc.RemoteAddr().String(), queue: make(chan *pending, maxInFlightPerConn),
		user: quota.AnonymousUser, authenticated: !l.cfg.IsSASL(),
		idle: time.Duration(s.cfg.Broker.ConnectionsMaxIdleMs) * time.Millisecond}
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
		if raw, err := tc.SyscallConn(); err == nil && l.tls == nil {
			c.raw = raw
		}
	}
	if l.tls != nil {
		c.nc = tls.Server(nc, l.tls)
	}
	return c
}

// serve runs the reader on this goroutine and the writer on another; it returns when
// both are done.
func (c *conn) serve() {
	s := c.s
	s.metrics.connections.Inc()
	defer s.metrics.connections.Dec()
	writerDone := make(chan struct{})
	err := c.handshake()
	if err == nil {
		go func() {
			defer close(writerDone)
			c.writeLoop()
		}()
		err = c.readLoop()
	} else {
		close(writerDone)
	}
	if errors.Is(err, errIdle) {
		s.logger.Debug("closing idle connection", "remote", c.remote, "idle", c.idle)
	} else if errors.Is(err, auth.ErrAuthFailed) {
		// A failed v0 login, logged where it failed (saslStep).
	} else if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && s.ctx.Err() == nil &&
		(c.sawRequest || !errors.Is(err, syscall.ECONNRESET)) {
		// A connection reset before it sent anything is another node's liveness probe
		// (internal/liveness), not worth a line.
		s.logger.Info("closing connection", "listener", c.listener.cfg.Name, "remote", c.remote, "user", c.user, "err", err)
	}
	close(c.queue)
	<-writerDone
	c.nc.Close()
}

// readLoop reads the connection's requests in order and starts each one's handler.
// A request is read as a frame (frameReader), admitted (conn_admit.go: the client
// quota throttle, a request slot, the byte budget) and, before SASL authentication,
// gated (conn_preauth.go).
func (c *conn) readLoop() error {
	fr := newFrameReader(c)
	for {
		size, err := fr.size()
		if err != nil {
			return err
		}
		c.sawRequest = true
		if !c.waitUnmuted() {
			return nil
		}
		arrived := time.Now() // after the mute: a client quota's throttle is not the node's latency
		consumed, err := c.gateFrame(fr, size)
		if err != nil {
			return err
		}
		if consumed {
			continue
		}
		p, err := c.admitRequest(fr, size)
		if p == nil {
			return err // nil: the server is closing
		}
		p.req.arrived = arrived
		p.req.turn = c.order.next()
		wait := c.oneAtATime(p.req)
		select {
		case c.queue <- p:
		case <-c.s.ctx.Done():
			c.s.releaseAdmission(p.size)
			return nil
		}
		c.reads++
		go c.handle(p)
		if wait && !c.awaitHandled(p) {
			return nil
		}
	}
}

// parse decodes the request header and body. Unknown keys and undecodable bodies close
// the connection (the client is not speaking Kafka); known keys at versions we do not
// implement are answered with UNSUPPORTED_VERSION in handle.
func (c *conn) parse(frame []byte) (*pending, error) {
	r := &request{received: time.Now(), conn: c}
	r.key = int16(binary.BigEndian.Uint16(frame[0:]))
	r.version = int16(binary.BigEndian.Uint16(frame[2:]))
	r.correlationID = int32(binary.BigEndian.Uint32(frame[4:]))
	rest := frame[8:]
	if len(rest) < 2 {
		return nil, errors.New("request header truncated before client id")
	}
	idLen := int(int16(binary.BigEndian.Uint16(rest)))
	rest = rest[2:]
	if idLen > 0 {
		if len(rest) < idLen {
			return nil, errors.New("request header truncated in client id")
		}
		r.clientID = string(rest[:idLen])
		rest = rest[idLen:]
	}
	r.kreq = kmsg.RequestForKey(r.key)
	if r.kreq == nil {
		return nil, fmt.Errorf("unknown API key %d", r.key)
	}
	p := &pending{req: r, done: make(chan struct{})}
	if r.version < 0 || r.version > r.kreq.MaxVersion() {
		return p, nil // answered as unsupported
	}
	r.kreq.SetVersion(r.version)
	if r.kreq.IsFlexible() {
		tr := &tagReader{b: rest}
		kmsg.SkipTags(tr)
		if tr.bad {
			return nil, fmt.Errorf("%s v%d: malformed request header tags", kmsg.NameForKey(r.key), r.version)
		}
		rest = tr.b
	}
	if reg, ok := handlers[r.key]; ok && r.version >= reg.min && r.version <= reg.max {
		if err := r.kreq.ReadFrom(rest); err != nil {
			return nil, fmt.Errorf("%s v%d: malformed request: %w", kmsg.NameForKey(r.key), r.version, err)
		}
	}
	return p, nil
}

// handle runs the request's handler and fills its response slot.
func (c *conn) handle(p *pending) {
	s := c.s
	defer s.releaseAdmission(p.size)
	defer close(p.done)
	r := p.req
	defer r.releaseFrame()
	defer r.releaseRecords()
	defer r.turn.end()
	name := kmsg.NameForKey(r.key)
	reg, ok := handlers[r.key]
	var resp kmsg.Response
	var err error
	if !ok || r.version < reg.min || r.version > reg.max {
		resp, err = unsupportedVersion(r)
	} else if r.takeTurn(s.ctx, reg) != nil {
		// The server is closing: the request takes no effect and the connection closes.
		p.closeAfter = true
		return
	} else {
		s.quotaBefore(r)
		resp, err = reg.fn(withRequest(withClientID(s.ctx, r.clientID), r), s, r)
		if errors.Is(err, errCloseAfterResponse) {
			p.closeAfter, err = true, nil
		}
	}
	s.metrics.observe(name, time.Since(r.received), err)
	if err != nil {
		s.logger.Warn("request failed; closing connection", "api", name, "version", r.version,
			"client_id", r.clientID, "listener", c.listener.cfg.Name, "remote", c.remote, "err", err)
		p.closeAfter = true
		return
	}
	c.quotaAfter(r, resp, p.size)
	if resp == nil {
		return
	}
	p.buf = encodeResponse(r, resp)
	if r.key == kmsg.Produce.Int16() {
		p.ready = time.Now() // the respond stage starts
	}
	if len(r.splices) > 0 {
		fr := resp.(*kmsg.FetchResponse)
		parts, err := splicePlan(p.buf, spliceOrder(fr, r.splices), fr.IsFlexible())
		if err != nil {
			s.logger.Error("fetch response cannot be sent; closing connection", "remote", c.remote, "err", err)
			p.closeAfter = true
			putBuf(p.buf)
			p.buf = nil
			return
		}
		p.parts = parts
	}
}

// responseSizeHint is a capacity for the encoded response: for a fetch, its record
// bytes plus room for the per-partition fields, so that encoding copies the records
// once instead of again at every growth of the buffer.
func responseSizeHint(resp kmsg.Response) int {
	fr, ok := resp.(*kmsg.FetchResponse)
	if !ok {
		return 256
	}
	n := 256
	for _, t := range fr.Topics {
		n += 64 + len(t.Topic)
		for _, p := range t.Partitions {
			n += 128 + len(p.RecordBatches) + 24*len(p.AbortedTransactions)
		}
	}
	return n
}

func encodeResponse(r *request, resp kmsg.Response) []byte {
	v := r.version
	// An ApiVersions request above the versions we serve (kmsg may know newer ones, as
	// v5 that franz-go sends first) is answered at v0, which the client parses with the
	// error code first and then retries at our maximum (KIP-511).
	if r.key == kmsg.ApiVersions.Int16() && v > handlers[r.key].max {
		v = 0
	}
	resp.SetVersion(v)
	buf := getBuf(responseSizeHint(resp))[:8]
	binary.BigEndian.PutUint32(buf[4:], uint32(r.correlationID))
	// ApiVersions always answers with response header v0, so that a client that sent a
	// version we do not know can still read the error (KIP-511).
	if resp.IsFlexible() && r.key != kmsg.ApiVersions.Int16() {
		buf = append(buf, 0)
	}
	buf = resp.AppendTo(buf)
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	return buf
}

// unsupportedVersion answers a request at a version (or of a key) we do not implement.
// ApiVersions gets a v0 response listing what we do support; other keys get their
// response with UNSUPPORTED_VERSION in its top-level error code where it has one.
func unsupportedVersion(r *request) (kmsg.Response, error) {
	if r.key == kmsg.ApiVersions.Int16() {
		resp := apiVersionsResponse()
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		return resp, nil
	}
	if r.version < 0 || r.version > r.kreq.MaxVersion() {
		return nil, fmt.Errorf("%s v%d is newer than this server can decode", kmsg.NameForKey(r.key), r.version)
	}
	resp := r.kreq.ResponseKind()
	if f := reflect.ValueOf(resp).Elem().FieldByName("ErrorCode"); f.IsValid() && f.CanSet() {
		f.SetInt(int64(kerr.UnsupportedVersion.Code))
	}
	return resp, nil
}

// writeLoop writes responses in request order. It flushes before waiting on a response
// that is not ready and when nothing else is queued, so a burst of responses costs one
// syscall and no response waits behind a slow one in the buffer.
func (c *conn) writeLoop() {
	bw := bufio.NewWriterSize(c.nc, 64<<10)
	broken := false
	fail := func() {
		broken = true
		c.nc.Close()
	}
	for p := range c.queue {
		select {
		case <-p.done:
		default:
			if !broken && bw.Buffered() > 0 && bw.Flush() != nil {
				fail()
			}
			<-p.done
		}
		if broken {
			continue
		}
		if p.buf != nil {
			n, err := c.write(bw, p)
			// bufio copies p.buf or writes it through before returning: it is free.
			putBuf(p.buf)
			p.buf, p.parts = nil, nil
			if err != nil {
				c.s.logger.Debug("closing connection: writing a response failed", "remote", c.remote,
					"api", kmsg.NameForKey(p.req.key), "err", err)
				fail()
				continue
			}
			c.s.metrics.bytesOut.Add(float64(n))
		}
		if p.closeAfter {
			bw.Flush()
			fail()
			continue
		}
		if len(c.queue) == 0 && bw.Flush() != nil {
			fail()
		}
		if !p.ready.IsZero() {
			// Written to the socket, or buffered behind the next queued response,
			// which is flushed before the loop waits on anything.
			c.s.metrics.produceRecorder().observe(StageRespond, time.Since(p.ready))
		}
		c.writes.Add(1) // after the write: a response being written is pending
	}
	if !broken {
		bw.Flush()
	}
}

// write writes p's response: its frame, or its pieces with the file ranges sent with
// sendfile (after flushing what is buffered before them). It returns the bytes sent.
func (c *conn) write(bw *bufio.Writer, p *pending) (int, error) {
	if p.parts == nil {
		return bw.Write(p.buf)
	}
	n := 0
	for _, part := range p.parts {
		if part.sp == nil {
			w, err := bw.Write(part.b)
			n += w
			if err != nil {
				return n, err
			}
			continue
		}
		if err := bw.Flush(); err != nil {
			return n, err
		}
		handled, err := vfs.SendFile(c.raw, part.sp.file, part.sp.pos, part.sp.size)
		if !handled {
			err = errors.New("sendfile unavailable for a spliced fetch response")
		}
		if err != nil {
			return n, fmt.Errorf("sending %d bytes at %d of %s: %w", part.sp.size, part.sp.pos, part.sp.file.Name(), err)
		}
		n += part.sp.size
	}
	return n, nil
}

// tagReader implements kmsg.TagReader over the request header's tagged fields.
type tagReader struct {
	b   []byte
	bad bool
}

func (t *tagReader) Uvarint() uint32 {
	v, n := binary.Uvarint(t.b)
	if n <= 0 {
		t.bad = true
		t.b = nil
		return 0
	}
	t.b = t.b[n:]
	return uint32(v)
}

func (t *tagReader) Span(n int) []byte {
	if n < 0 || n > len(t.b) {
		t.bad = true
		t.b = nil
		return nil
	}
	s := t.b[:n]
	t.b = t.b[n:]
	return s
}

func (t *tagReader) Ok() bool { return !t.bad }
