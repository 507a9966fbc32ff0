package nodenet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"syscall"
)

// Mem is an in-memory network of named hosts (IPv4 literals, such as 10.0.0.1).
// Host(ip) is the Network one host listens and dials on. Make it with NewMem inside
// the synctest bubble that will use it: its channels and timers then belong to the
// bubble. Safe for concurrent use.
//
// Each connection is two buffered pipes of at most pipeBuffer bytes in flight, so a
// writer blocks only when its peer has stopped reading, as with a TCP window.
type Mem struct {
	mu sync.Mutex // guards every field below, and each pipe's cut flag (taken before a pipe's mu)
	// listeners by "ip:port".
	listeners map[string]*listener
	// conns are the open endpoints (both ends of every connection).
	conns map[*conn]struct{}
	// pipes are the directions of connections whose reading end is still open, each
	// with the hosts it carries bytes from and to: a pipe whose writer has closed or
	// crashed while the link was blocked must still deliver that (EOF, a reset) when
	// the link unblocks.
	pipes map[*pipe][2]string
	// cut holds the blackholed links, each as its two hosts in sorted order.
	cut map[[2]string]bool
	// paused holds the hosts whose process is stopped (SIGSTOP): every link of the
	// host is blocked both ways, as if cut, until Resume, but dials to it connect.
	paused map[string]bool
	// down holds the crashed hosts: they can neither listen nor dial until Up.
	down map[string]bool
	// ports is the next ephemeral port per host.
	ports map[string]int
	// changed is closed (and replaced) whenever a link is healed or a host comes
	// up, waking the dials that wait on a cut link.
	changed chan struct{}
}

// pipeBuffer bounds the bytes in flight in one direction of a connection.
const pipeBuffer = 1 << 20

// firstEphemeralPort is the first port given to a dialing end or to Listen on port 0.
const firstEphemeralPort = 32768

// NewMem returns an empty network, with every link up.
func NewMem() *Mem {
	return &Mem{listeners: map[string]*listener{}, conns: map[*conn]struct{}{}, pipes: map[*pipe][2]string{},
		cut: map[[2]string]bool{}, paused: map[string]bool{}, down: map[string]bool{}, ports: map[string]int{},
		changed: make(chan struct{})}
}

// Host returns the Network of the host with address ip: its dials come from ip, and
// it listens on ip (a listen address with no host or 0.0.0.0 means ip).
func (m *Mem) Host(ip string) Network { return hostNet{m: m, ip: ip} }

type hostNet struct {
	m  *Mem
	ip string
}

func (h hostNet) Listen(network, addr string) (net.Listener, error) {
	return h.m.listen(h.ip, network, addr)
}

func (h hostNet) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return h.m.dial(ctx, h.ip, network, addr)
}

func link(a, b string) [2]string {
	if b < a {
		a, b = b, a
	}
	return [2]string{a, b}
}

// Cut blackholes the link between hosts a and b in both directions: the bytes their
// connections send wait, and their new dials wait, until Heal. Neither side is told.
func (m *Mem) Cut(a, b string) { m.setCut(a, b, true) }

// Heal restores the link between a and b; what waited on it flows again.
func (m *Mem) Heal(a, b string) { m.setCut(a, b, false) }

// HealAll restores every link.
func (m *Mem) HealAll() {
	m.mu.Lock()
	var links [][2]string
	for l := range m.cut {
		links = append(links, l)
	}
	m.mu.Unlock()
	for _, l := range links {
		m.Heal(l[0], l[1])
	}
}

// IsCut reports whether the link between a and b is cut.
func (m *Mem) IsCut(a, b string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cut[link(a, b)]
}

func (m *Mem) setCut(a, b string, cut bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := link(a, b)
	if m.cut[l] == cut {
		return
	}
	if cut {
		m.cut[l] = true
	} else {
		delete(m.cut, l)
		m.wakeDialsLocked()
	}
	m.reblockLocked(func(from, to string) bool { return link(from, to) == l })
}

// blockedLocked reports whether nothing flows from host a to host b: their link is
// cut, or either host is paused.
func (m *Mem) blockedLocked(a, b string) bool {
	return m.cut[link(a, b)] || m.paused[a] || m.paused[b]
}

// reblockLocked sets the blocked state of every pipe between hosts that match.
func (m *Mem) reblockLocked(match func(from, to string) bool) {
	for p, hosts := range m.pipes {
		if match(hosts[0], hosts[1]) {
			p.setCut(m.blockedLocked(hosts[0], hosts[1]))
		}
	}
}

// Pause is what SIGSTOP does to host's process, as far as a network can tell: the
// process answers nothing and sends nothing, yet keeps every socket. Every link of
// the host is blocked both ways, as if cut (bytes wait on either side, in order,
// within the pipe buffer: the kernel's socket buffers), without resetting or closing
// anything; dials from the host wait, and dials to it connect (the kernel completes
// the handshake for a stopped process) but carry nothing. Resume lets everything
// through again. The host's own goroutines are not stopped: a paused node's timers
// still fire and it can still touch its disk, which a stopped process cannot (see
// internal/clustertest's virtual mode).
func (m *Mem) Pause(host string) { m.setPaused(host, true) }

// Resume is SIGCONT for a host that Pause stopped: what waited flows.
func (m *Mem) Resume(host string) { m.setPaused(host, false) }

// IsPaused reports whether host is paused.
func (m *Mem) IsPaused(host string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.paused[host]
}

func (m *Mem) setPaused(host string, paused bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.paused[host] == paused {
		return
	}
	if paused {
		m.paused[host] = true
	} else {
		delete(m.paused, host)
		m.wakeDialsLocked()
	}
	m.reblockLocked(func(from, to string) bool { return from == host || to == host })
}

func (m *Mem) wakeDialsLocked() {
	close(m.changed)
	m.changed = make(chan struct{})
}

// Crash is what the kernel does when host's process is killed: its listeners close
// (dials to them are refused), its connections are reset (peers read ECONNRESET once
// the link carries it), and its own blocked reads and writes return net.ErrClosed.
// The host can neither listen nor dial until Up.
func (m *Mem) Crash(host string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.down[host] = true
	// A stopped process can be killed: the kernel resets its sockets all the same.
	if m.paused[host] {
		delete(m.paused, host)
		m.wakeDialsLocked()
		defer m.reblockLocked(func(from, to string) bool { return from == host || to == host })
	}
	for addr, l := range m.listeners {
		if l.addr.host == host {
			l.closeLocked()
			delete(m.listeners, addr)
		}
	}
	for c := range m.conns {
		if c.local.host == host {
			c.resetLocked()
		}
	}
}

// Up lets a crashed host listen and dial again (its process restarted).
func (m *Mem) Up(host string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.down, host)
	m.wakeDialsLocked()
}

// addr is a host and port; tcp() gives the *net.TCPAddr callers see.
type addr struct {
	host string
	port int
}

func (a addr) String() string { return net.JoinHostPort(a.host, fmt.Sprint(a.port)) }

func (a addr) tcp() *net.TCPAddr {
	ip, _ := netip.ParseAddr(a.host)
	return net.TCPAddrFromAddrPort(netip.AddrPortFrom(ip, uint16(a.port)))
}

// parse splits "ip:port"; self replaces an empty or unspecified host.
func parse(s, self string) (addr, error) {
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		host, port, err2 := net.SplitHostPort(s)
		if err2 != nil || host != "" {
			return addr{}, fmt.Errorf("nodenet: address %q: want ip:port", s)
		}
		if ap, err = netip.ParseAddrPort("0.0.0.0:" + port); err != nil {
			return addr{}, fmt.Errorf("nodenet: address %q: %w", s, err)
		}
	}
	host := ap.Addr().String()
	if ap.Addr().IsUnspecified() && self != "" {
		host = self
	}
	return addr{host: host, port: int(ap.Port())}, nil
}

func (m *Mem) ephemeralLocked(host string) int {
	p := m.ports[host]
	if p == 0 {
		p = firstEphemeralPort
	}
	for m.listeners[addr{host, p}.String()] != nil {
		p++
	}
	m.ports[host] = p + 1
	return p
}

func (m *Mem) listen(self, network, s string) (net.Listener, error) {
	a, err := parse(s, self)
	if err != nil {
		return nil, err
	}
	opErr := func(errno syscall.Errno) error {
		return &net.OpError{Op: "listen", Net: network, Addr: a.tcp(), Err: os.NewSyscallError("bind", errno)}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case a.host != self:
		return nil, opErr(syscall.EADDRNOTAVAIL)
	case m.down[self]:
		return nil, opErr(syscall.ENETDOWN)
	}
	if a.port == 0 {
		a.port = m.ephemeralLocked(self)
	}
	if m.listeners[a.String()] != nil {
		return nil, opErr(syscall.EADDRINUSE)
	}
	l := &listener{m: m, addr: a, backlog: make(chan *conn, listenBacklog), closed: make(chan struct{})}
	m.listeners[a.String()] = l
	return l, nil
}

// listenBacklog is how many connections a listener holds before Accept; a dial past
// it is refused, as a full SYN queue would drop it.
const listenBacklog = 128

func (m *Mem) dial(ctx context.Context, self, network, s string) (net.Conn, error) {
	to, err := parse(s, "")
	if err != nil {
		return nil, err
	}
	for {
		opErr := func(err error) error {
			return &net.OpError{Op: "dial", Net: network, Addr: to.tcp(), Err: err}
		}
		m.mu.Lock()
		if m.down[self] {
			m.mu.Unlock()
			return nil, opErr(os.NewSyscallError("connect", syscall.ENETUNREACH))
		}
		if m.cut[link(self, to.host)] || m.paused[self] {
			// A blackholed SYN, or a stopped process that cannot dial: wait for the
			// link or the process, or for the caller to give up.
			wait := m.changed
			m.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, opErr(ctx.Err())
			}
		}
		l := m.listeners[to.String()]
		if l == nil || len(l.backlog) == cap(l.backlog) {
			m.mu.Unlock()
			return nil, opErr(os.NewSyscallError("connect", syscall.ECONNREFUSED))
		}
		from := addr{host: self, port: m.ephemeralLocked(self)}
		client, server := m.pairLocked(from, to)
		l.backlog <- server // never blocks: checked above, under m.mu
		m.mu.Unlock()
		return client, nil
	}
}

// pairLocked makes both ends of a connection from → to.
func (m *Mem) pairLocked(from, to addr) (client, server *conn) {
	blocked := m.blockedLocked(from.host, to.host)
	up, down := newPipe(blocked), newPipe(blocked)
	client = newConn(m, from, to, down, up)
	server = newConn(m, to, from, up, down)
	m.conns[client] = struct{}{}
	m.conns[server] = struct{}{}
	m.pipes[up] = [2]string{from.host, to.host}
	m.pipes[down] = [2]string{to.host, from.host}
	return client, server
}

type listener struct {
	m       *Mem
	addr    addr
	backlog chan *conn
	closed  chan struct{} // closed by closeLocked

	once sync.Once
}

func (l *listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.backlog:
		return c, nil
	case <-l.closed:
		return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.addr.tcp(), Err: net.ErrClosed}
	}
}

func (l *listener) Close() error {
	l.m.mu.Lock()
	defer l.m.mu.Unlock()
	if l.m.listeners[l.addr.String()] == l {
		delete(l.m.listeners, l.addr.String())
	}
	l.closeLocked()
	return nil
}

// closeLocked closes l and resets the connections nobody accepted.
func (l *listener) closeLocked() {
	l.once.Do(func() { close(l.closed) })
	for {
		select {
		case c := <-l.backlog:
			c.resetLocked()
		default:
			return
		}
	}
}

func (l *listener) Addr() net.Addr { return l.addr.tcp() }

// errReset is what a peer of a crashed or reset connection reads.
var errReset = os.NewSyscallError("read", syscall.ECONNRESET)

// ErrCrashed is what a crashed host's own connections return: the process is gone.
var ErrCrashed = errors.New("nodenet: host crashed")
