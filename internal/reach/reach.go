// Package reach tells whether a node's process is gone: its Kafka listener refuses
// connections, or a connection to it that was open has been closed by the other end.
// Both are definite answers from the kernels involved (nothing listens on that port,
// which for a registered node means the process died or was killed), unlike a
// timeout, which a paused or cut-off node gives as well as a slow one. The active
// controller uses it to fence a killed node at once instead of after
// broker.session.timeout.ms, and every node uses it to hold a Metadata answer that
// would name a dead leader until the new leader is elected: a client that gets the
// dead leader back (franz-go refreshes at most every 5 s, MetadataMinAge) would stay
// stuck on it for seconds.
package reach

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
// node on another network (vnet.Mem in tests). A connection dial returns that has a
// PeerClosed() bool method (vnet's do) is asked it instead of peeking at a socket.
func NewDialer(dial func(ctx context.Context, network, addr string) (net.Conn, error)) *Prober {
	return &Prober{dialTimeout: DefaultDialTimeout, refusedTTL: DefaultRefusedTTL, dialEvery: DefaultDialEvery,
		dial: func(ctx context.Context, addr string) (net.Conn, error) { return dial(ctx, "tcp", addr) },
		now:  time.Now, m: map[string]*target{}}
}

// Gone reports whether the process listening at addr is gone: its open watch was
// closed by the other end and a new connection is refused. A dial that times out or
// fails any other way says false: only a refusal proves the process gone.
func (p *Prober) Gone(ctx context.Context, addr string) bool {
	p.mu.Lock()
	tg := p.m[addr]
	if tg == nil {
		tg = &target{turn: make(chan struct{}, 1)}
		p.m[addr] = tg
	}
	p.mu.Unlock()

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
	if !tg.refused.IsZero() && p.now().Sub(tg.refused) < p.refusedTTL {
		return true
	}
	dctx, cancel := context.WithTimeout(ctx, p.dialTimeout)
	c, err := p.dial(dctx, addr)
	cancel()
	switch {
	case err == nil:
		tg.watch, tg.refused, tg.dialed = c, time.Time{}, p.now()
		return false
	case Refused(err):
		tg.refused = p.now()
		return true
	}
	return false
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
