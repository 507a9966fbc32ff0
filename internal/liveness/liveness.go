// Package liveness tells whether a node's process is gone: its Kafka listener refuses
// connections, or a connection to it that was open has been closed by the other end.
// Both are definite answers from the kernels involved (nothing listens on that port,
// which for a registered node means the process died or was killed), unlike a
// timeout, which a paused or cut-off node gives as well as a slow one. The active
// controller uses it to fence a killed node at once instead of after
// broker.session.timeout.ms, and every node uses it to hold a Metadata answer that
// would name a dead leader until the new leader is elected: a client that gets the
// dead leader back (franz-go refreshes at most every 5 s, MetadataMinAge) would stay
// stuck on it for seconds.
package liveness

import (
	"context"
	"errors"
	"net"
	"sync"
	"syscall"
	"time"
)

// Defaults of Prober.
const (
	// DefaultDialTimeout bounds one dial. A refusal comes back in a round trip, so
	// this only limits what a probe of a paused or unreachable node costs.
	DefaultDialTimeout = 200 * time.Millisecond
	// DefaultRefusedTTL is how long a refusal is believed before the next dial, which
	// bounds the dials to a dead node to one per TTL however many callers ask.
	DefaultRefusedTTL = 50 * time.Millisecond
	// DefaultDialEvery is how often a node whose watch is open is dialled anyway. A
	// process that is killed closes its listener (one of its first sockets) before
	// its other connections, the watch among them, may be gone: for a millisecond or
	// so a refused dial is the only sign, and a client that saw its own connection
	// reset asks for metadata within that time.
	DefaultDialEvery = 10 * time.Millisecond
)

// Prober keeps one idle connection (a watch) to each address it was asked about. While
// the watch is open, as a non-blocking peek at it shows, the process is there; when
// the other end has closed it (a process that dies closes its sockets), the Prober
// dials again, and a refusal means the process is gone. So an answer costs one
// non-blocking system call, and a kill is seen as soon as this host's kernel has the
// dead socket's FIN or RST, with no polling. Safe for concurrent use; use New.
type Prober struct {
	dialTimeout time.Duration
	refusedTTL  time.Duration
	dialEvery   time.Duration
	dial        func(ctx context.Context, addr string) (net.Conn, error)
	now         func() time.Time

	mu sync.Mutex
	m  map[string]*target
}

// target is one address's watch or last dial.
type target struct {
	// turn serialises the callers of one address, so that one dial serves them all:
	// holding it is having sent into it. It is a channel, not a sync.Mutex, because
	// its holder may wait on a dial for up to dialTimeout: a waiter blocked on a
	// channel is durably blocked for testing/synctest, so the fake clock can run that
	// timeout out (a goroutine in Mutex.Lock would stop the clock, and the bubble would
	// never move again), and a waiter can give up when its context ends.
	turn    chan struct{}
	watch   net.Conn  // nil: none open
	refused time.Time // when the last dial was refused; zero if it was not
	dialed  time.Time // when the last dial beside an open watch succeeded
}

// New returns a Prober with the default timeout and TTL that dials on the host's
// TCP stack.
func New() *Prober {
	d := &net.Dialer{}
	return NewDialer(d.DialContext)
}

// NewDialer is New dialing with dial (the signature of net.Dialer.DialContext), for a
// node on another network (nodenet.Mem in tests). A connection dial returns that has a
// PeerClosed() bool method (nodenet's do) is asked it instead of peeking at a socket.
func NewDialer(dial func(ctx context.Context, network, addr string) (net.Conn, error)) *Prober {
	return &Prober{dialTimeout: DefaultDialTimeout, refusedTTL: DefaultRefusedTTL, dialEvery: DefaultDialEvery,
		dial: func(ctx context.Context, addr string) (net.Conn, error) { return dial(ctx, "tcp", addr) },
		now:  time.Now, m: map[string]*target{}}
}

// Gone reports whether the process listening at addr is gone: its open watch was
// closed by the other end and a new connection is refused. A dial that times out or
// fails any other way says false: only a refusal proves the process gone.
func (p *Prober) Gone(ctx context.Context, addr string) bool {
	tg := p.target(addr)

	select {
	case tg.turn <- struct{}{}:
	case <-ctx.Done():
		return false // no answer: only a refusal proves the process gone
	}
	defer func() { <-tg.turn }()
	if tg.watch != nil {
		if !open(tg.watch) {
			tg.watch.Close()
			tg.watch = nil
		} else if p.now().Sub(tg.dialed) < p.dialEvery {
			return false
		} else {
			return p.checkListener(ctx, addr, tg)
		}
	}
	refused, err := p.openWatch(ctx, addr, tg)
	if err == nil {
		tg.dialed = p.now()
	}
	return refused
}

// openWatch dials addr for tg's watch (tg.watch nil, tg.turn held), unless a refusal
// within refusedTTL still stands: refused reports a refusal, err any other failure.
func (p *Prober) openWatch(ctx context.Context, addr string, tg *target) (refused bool, err error) {
	if !tg.refused.IsZero() && p.now().Sub(tg.refused) < p.refusedTTL {
		return true, nil
	}
	dctx, cancel := context.WithTimeout(ctx, p.dialTimeout)
	c, err := p.dial(dctx, addr)
	cancel()
	switch {
	case err == nil:
		tg.watch, tg.refused = c, time.Time{}
		return false, nil
	case Refused(err):
		tg.refused = p.now()
		return true, nil
	}
	return false, err
}

// Ping asks the process at the other end of c for an answer, and returns nil once it
// has one, an error if c fails or ctx ends first. It must leave c in a state where it
// can ping again (a whole answer read), or fail.
type Ping func(ctx context.Context, c net.Conn) error

// pingRedialPause spaces the dials of GoneAnswering after a connection that failed.
const pingRedialPause = 2 * time.Millisecond

// Verdict is what Answering found out about a process.
type Verdict int

const (
	// Silent: neither an answer nor a refusal within the time given, as from a paused,
	// cut-off or overloaded node: no proof either way.
	Silent Verdict = iota
	// Answered: the process answered the ping.
	Answered
	// Gone: a dial was refused; the process is gone.
	Gone
)

// String names v for logs.
func (v Verdict) String() string {
	switch v {
	case Answered:
		return "answered"
	case Gone:
		return "gone"
	}
	return "silent"
}

// GoneAnswering is Gone with a stricter idea of alive: the process must answer ping on
// the watch, within ctx (Answering says Gone).
func (p *Prober) GoneAnswering(ctx context.Context, addr string, ping Ping) bool {
	return p.Answering(ctx, addr, ping) == Gone
}

// Answering asks the process at addr for an answer to ping on the watch, within ctx.
// A process that is being killed tears its sockets down one by one, and under load
// that takes tens of milliseconds (seen: a client's connection reset 24 ms before the
// listener stopped accepting), while a kernel still completes handshakes for a
// listener that no process will accept on again: a dial that succeeds is no proof of
// life, an answer is. So a connection that fails (reset or closed by the peer) is
// replaced by a new dial until a dial is refused (Gone), a ping is answered
// (Answered), or ctx ends (Silent: no proof either way, as for a paused node). Use it
// only where the address speaks the protocol ping speaks.
func (p *Prober) Answering(ctx context.Context, addr string, ping Ping) Verdict {
	tg := p.target(addr)
	select {
	case tg.turn <- struct{}{}:
	case <-ctx.Done():
		return Silent
	}
	defer func() { <-tg.turn }()
	for {
		if tg.watch == nil {
			refused, err := p.openWatch(ctx, addr, tg)
			switch {
			case refused:
				return Gone
			case reset(err):
				// The listener was closed while this handshake waited in its queue:
				// the process is on its way out; the next dial tells.
				if !p.pause(ctx) {
					return Silent
				}
				continue
			case err != nil:
				return Silent
			}
		}
		if err := ping(ctx, tg.watch); err == nil {
			tg.dialed = p.now()
			return Answered
		}
		// The watch failed or gave no answer in time: it is out of step either way.
		tg.watch.Close()
		tg.watch = nil
		if !p.pause(ctx) {
			return Silent
		}
	}
}

// pause waits pingRedialPause, or reports false if ctx ends first.
func (p *Prober) pause(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(pingRedialPause):
		return true
	}
}

// reset reports whether err is a connection reset or aborted by the peer.
func reset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNABORTED)
}

// target returns addr's target, made on first use.
func (p *Prober) target(addr string) *target {
	p.mu.Lock()
	defer p.mu.Unlock()
	tg := p.m[addr]
	if tg == nil {
		tg = &target{turn: make(chan struct{}, 1)}
		p.m[addr] = tg
	}
	return tg
}

// checkListener dials tg's address beside its open watch: a refusal closes the watch
// and says gone; anything else says alive. The extra connection is reset, not closed,
// so that frequent checks leave no TIME_WAIT sockets behind.
func (p *Prober) checkListener(ctx context.Context, addr string, tg *target) bool {
	dctx, cancel := context.WithTimeout(ctx, p.dialTimeout)
	c, err := p.dial(dctx, addr)
	cancel()
	if Refused(err) {
		tg.watch.Close()
		tg.watch, tg.refused = nil, p.now()
		return true
	}
	if err == nil {
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetLinger(0)
		}
		c.Close()
		tg.dialed = p.now()
	}
	return false
}

// Close closes every watch.
func (p *Prober) Close() {
	p.mu.Lock()
	targets := p.m
	p.m = map[string]*target{}
	p.mu.Unlock()
	// Each turn is waited for without p.mu held: its holder may be in a dial, and
	// Gone takes p.mu first.
	for _, tg := range targets {
		tg.turn <- struct{}{}
		if tg.watch != nil {
			tg.watch.Close()
		}
		<-tg.turn
	}
}

// Refused reports whether err is a refused connection.
func Refused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

// open reports whether c is still open at the other end: a non-blocking peek finds
// no end of stream and no reset. The watch never sends a request, so nothing is ever
// there to read; a peer that closes (its process exited) shows as a 0-byte read.
func open(c net.Conn) bool {
	if pc, ok := c.(interface{ PeerClosed() bool }); ok {
		return !pc.PeerClosed()
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	alive := true
	var buf [1]byte
	err = rc.Read(func(fd uintptr) bool {
		n, _, rerr := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case errors.Is(rerr, syscall.EAGAIN), errors.Is(rerr, syscall.EINTR):
		case rerr != nil, n == 0:
			alive = false
		}
		return true // never wait for readiness
	})
	return err == nil && alive
}
