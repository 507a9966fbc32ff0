package nodenet

import (
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// pipe is one direction of a connection. Readers and writers wait on wake, a channel
// that is closed and replaced on every change, so a blocked goroutine is durably
// blocked for synctest.
type pipe struct {
	mu sync.Mutex // guards every field below
	// buf holds the bytes written and not read yet (at most pipeBuffer).
	buf []byte
	// eof: the writing end closed; the reader reads io.EOF once buf is drained.
	eof bool
	// reset: the connection was reset (a crash); both ends fail at once.
	reset bool
	// gone: the reading end closed; further writes fail with EPIPE.
	gone bool
	// cut: the link is blackholed, so nothing written (bytes, EOF, reset) reaches the
	// reader until it heals. Written by Mem under Mem.mu then mu.
	cut  bool
	wake chan struct{}
}

func newPipe(cut bool) *pipe { return &pipe{cut: cut, wake: make(chan struct{})} }

func (p *pipe) changedLocked() {
	close(p.wake)
	p.wake = make(chan struct{})
}

func (p *pipe) setCut(cut bool) {
	p.mu.Lock()
	p.cut = cut
	p.changedLocked()
	p.mu.Unlock()
}

// conn is one end of a connection: it reads r and writes w.
type conn struct {
	m             *Mem
	local, remote addr
	r, w          *pipe

	closeOnce sync.Once
	closed    chan struct{} // closed by Close or by a crash of the local host
	crashed   bool          // set before closed is closed, by resetLocked
	rd, wd    deadline
}

func newConn(m *Mem, local, remote addr, r, w *pipe) *conn {
	return &conn{m: m, local: local, remote: remote, r: r, w: w, closed: make(chan struct{}),
		rd: newDeadline(), wd: newDeadline()}
}

func (c *conn) opErr(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Source: c.local.tcp(), Addr: c.remote.tcp(), Err: err}
}

// localErr is the error of an operation on a closed or crashed end.
func (c *conn) localErr(op string) error {
	if c.crashed {
		return c.opErr(op, ErrCrashed)
	}
	return c.opErr(op, net.ErrClosed)
}

func (c *conn) Read(b []byte) (int, error) {
	p := c.r
	for {
		select {
		case <-c.closed:
			return 0, c.localErr("read")
		case <-c.rd.wait():
			return 0, c.opErr("read", os.ErrDeadlineExceeded)
		default:
		}
		p.mu.Lock()
		if !p.cut {
			switch {
			case p.reset:
				p.mu.Unlock()
				return 0, c.opErr("read", errReset)
			case len(p.buf) > 0:
				n := copy(b, p.buf)
				p.buf = p.buf[n:]
				p.changedLocked() // room for the writer
				p.mu.Unlock()
				return n, nil
			case p.eof:
				p.mu.Unlock()
				return 0, io.EOF
			case len(b) == 0:
				p.mu.Unlock()
				return 0, nil
			}
		}
		wake := p.wake
		p.mu.Unlock()
		select {
		case <-wake:
		case <-c.closed:
		case <-c.rd.wait():
		}
	}
}

func (c *conn) Write(b []byte) (int, error) {
	p := c.w
	written := 0
	for {
		select {
		case <-c.closed:
			return written, c.localErr("write")
		case <-c.wd.wait():
			return written, c.opErr("write", os.ErrDeadlineExceeded)
		default:
		}
		p.mu.Lock()
		switch {
		case p.reset && !p.cut:
			p.mu.Unlock()
			return written, c.opErr("write", os.NewSyscallError("write", syscall.ECONNRESET))
		case p.gone && !p.cut:
			p.mu.Unlock()
			return written, c.opErr("write", os.NewSyscallError("write", syscall.EPIPE))
		}
		if room := pipeBuffer - len(p.buf); room > 0 {
			n := min(room, len(b)-written)
			p.buf = append(p.buf, b[written:written+n]...)
			written += n
			p.changedLocked()
		}
		if written == len(b) {
			p.mu.Unlock()
			return written, nil
		}
		wake := p.wake
		p.mu.Unlock()
		select {
		case <-wake:
		case <-c.closed:
		case <-c.wd.wait():
		}
	}
}

// Close is a graceful close: the peer reads what was sent, then io.EOF, and its
// writes fail with EPIPE.
func (c *conn) Close() error {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	if _, ok := c.m.conns[c]; !ok {
		return c.opErr("close", net.ErrClosed)
	}
	delete(c.m.conns, c)
	delete(c.m.pipes, c.r) // nobody reads it any more; c.w stays until the peer's end goes
	c.closeOnce.Do(func() { close(c.closed) })
	c.w.mu.Lock()
	c.w.eof = true
	c.w.changedLocked()
	c.w.mu.Unlock()
	c.r.mu.Lock()
	c.r.gone, c.r.buf = true, nil
	c.r.changedLocked()
	c.r.mu.Unlock()
	return nil
}

// resetLocked resets the connection from this end (a crash of its host): this end's
// operations fail with ErrCrashed, the peer's with ECONNRESET. Called with Mem.mu held.
func (c *conn) resetLocked() {
	delete(c.m.conns, c)
	delete(c.m.pipes, c.r)
	c.closeOnce.Do(func() {
		c.crashed = true
		close(c.closed)
	})
	for _, p := range []*pipe{c.r, c.w} {
		p.mu.Lock()
		p.reset = true
		p.changedLocked()
		p.mu.Unlock()
	}
}

// PeerClosed reports whether the other end has closed or reset the connection and
// the link has carried that here: what a non-blocking peek on a TCP socket finds
// (liveness.Prober asks it of its watches).
func (c *conn) PeerClosed() bool {
	p := c.r
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.cut && (p.reset || p.eof)
}

func (c *conn) LocalAddr() net.Addr  { return c.local.tcp() }
func (c *conn) RemoteAddr() net.Addr { return c.remote.tcp() }

func (c *conn) SetDeadline(t time.Time) error {
	c.rd.set(t)
	c.wd.set(t)
	return nil
}

func (c *conn) SetReadDeadline(t time.Time) error  { c.rd.set(t); return nil }
func (c *conn) SetWriteDeadline(t time.Time) error { c.wd.set(t); return nil }

// deadline is a channel closed when the deadline passes, on the clock of the
// goroutine that set it (a synctest bubble's fake clock inside a bubble). As in
// net.Pipe, a new deadline after one passed replaces the channel.
type deadline struct {
	mu    sync.Mutex // guards timer and ch
	timer *time.Timer
	ch    chan struct{}
}

func newDeadline() deadline { return deadline{ch: make(chan struct{})} }

func (d *deadline) set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer != nil && !d.timer.Stop() {
		<-d.ch // the timer fired (or is firing): wait until it closed ch
	}
	d.timer = nil
	select {
	case <-d.ch:
		d.ch = make(chan struct{})
	default:
	}
	if t.IsZero() {
		return
	}
	dur := time.Until(t)
	if dur <= 0 {
		close(d.ch)
		return
	}
	ch := d.ch
	d.timer = time.AfterFunc(dur, func() { close(ch) })
}

func (d *deadline) wait() chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ch
}
