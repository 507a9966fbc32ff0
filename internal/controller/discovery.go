package controller

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/nodenet"
)

// Controller discovery shares the Raft listener. A node outside the quorum knows only
// the voters' Raft addresses (--controllers), yet must send BrokerRegistration to the
// active controller's Kafka listener. It connects to a voter's Raft port and sends
// discoveryByte; the voter answers one JSON line (discoveryAnswer) and closes. Every
// Raft connection starts with an RPC type byte, 0 to 4 in hashicorp/raft, so the
// first byte tells the two apart.
const (
	discoveryByte = 0xD1
	// sniffTimeout bounds the wait for a new connection's first byte.
	sniffTimeout = 10 * time.Second
	// discoveryTimeout bounds one question to one voter.
	discoveryTimeout = time.Second
)

// discoveryAnswer is a voter's view of the active controller.
type discoveryAnswer struct {
	// Leader is the active controller's node id, -1 if unknown.
	Leader metadata.NodeID `json:"leader"`
	// Host and Port are its advertised Kafka listener; Port is 0 if it has not
	// registered yet.
	Host string `json:"host,omitempty"`
	Port int32  `json:"port,omitempty"`
}

// ControllerAddr returns the active controller's node id and Kafka address (its
// advertised host:port): from this node's image when it knows them, else by asking
// every voter's Raft listener. ErrNotController means nobody knows yet; retry.
func (c *Controller) ControllerAddr(ctx context.Context) (metadata.NodeID, string, error) {
	if a := c.localAnswer(); a.Port != 0 {
		return a.Leader, net.JoinHostPort(a.Host, strconv.Itoa(int(a.Port))), nil
	}
	for _, v := range c.cfg.Voters {
		if v.ID == c.cfg.NodeID {
			continue
		}
		a, err := askVoterOn(ctx, c.Network(), v.Addr)
		if err != nil {
			c.log.Debug("controller discovery failed", "voter", v.ID, "addr", v.Addr, "err", err)
			continue
		}
		if a.Leader >= 0 && a.Port != 0 {
			return a.Leader, net.JoinHostPort(a.Host, strconv.Itoa(int(a.Port))), nil
		}
	}
	return -1, "", fmt.Errorf("%w: the active controller or its Kafka address is not known yet", ErrNotController)
}

// localAnswer is this node's view: the Raft leader and its registration.
func (c *Controller) localAnswer() discoveryAnswer {
	id, ok := c.LeaderID()
	if !ok {
		return discoveryAnswer{Leader: -1}
	}
	b := c.Image().Brokers[id]
	return discoveryAnswer{Leader: id, Host: b.Host, Port: b.Port}
}

// answerDiscovery serves one discovery connection (the first byte already read).
func (c *Controller) answerDiscovery(conn net.Conn) {
	defer conn.Close()
	conn.SetWriteDeadline(time.Now().Add(discoveryTimeout))
	a := discoveryAnswer{Leader: -1} // Raft not started yet: no leader known
	select {
	case <-c.raftSet:
		a = c.localAnswer()
	default:
	}
	json.NewEncoder(conn).Encode(a)
}

// askVoter asks the voter at addr who the active controller is.
// It dials on the host's TCP stack; askVoterOn takes the network (Controller.Network).
func askVoter(ctx context.Context, addr string) (discoveryAnswer, error) {
	return askVoterOn(ctx, nodenet.OS, addr)
}

// askVoterOn is askVoter dialing on network.
func askVoterOn(ctx context.Context, network nodenet.Network, addr string) (discoveryAnswer, error) {
	ctx, cancel := context.WithTimeout(ctx, discoveryTimeout)
	defer cancel()
	conn, err := network.DialContext(ctx, "tcp", addr)
	if err != nil {
		return discoveryAnswer{}, err
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	conn.SetDeadline(deadline)
	if _, err := conn.Write([]byte{discoveryByte}); err != nil {
		return discoveryAnswer{}, err
	}
	var a discoveryAnswer
	if err := json.NewDecoder(bufio.NewReader(conn)).Decode(&a); err != nil {
		return discoveryAnswer{}, fmt.Errorf("controller discovery answer from %s: %w", addr, err)
	}
	return a, nil
}

// muxLayer is a raft.StreamLayer over one TCP listener that hands discovery
// connections to serve and every other connection to Raft. Each accepted connection
// is sniffed on its own goroutine so a slow client cannot stall Raft's Accept.
type muxLayer struct {
	ln        net.Listener
	network   nodenet.Network // Dial's network (the listener's)
	advertise net.Addr
	serve     func(net.Conn)
	conns     chan net.Conn // sniffed Raft connections, for Accept
	done      chan struct{} // closed by Close
	closeOnce sync.Once
	wg        sync.WaitGroup // the accept loop and the sniffers

	mu       sync.Mutex            // guards sniffing
	sniffing map[net.Conn]struct{} // connections whose first byte is awaited; Close closes them
}

var _ raft.StreamLayer = (*muxLayer)(nil)

func newMuxLayer(ln net.Listener, advertise net.Addr, serve func(net.Conn), network nodenet.Network) *muxLayer {
	m := &muxLayer{ln: ln, network: network, advertise: advertise, serve: serve, conns: make(chan net.Conn),
		done: make(chan struct{}), sniffing: map[net.Conn]struct{}{}}
	m.wg.Add(1)
	go m.acceptLoop()
	return m
}

func (m *muxLayer) acceptLoop() {
	defer m.wg.Done()
	for {
		conn, err := m.ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return // closed
		}
		m.mu.Lock()
		select {
		case <-m.done:
			m.mu.Unlock()
			conn.Close()
			return
		default:
		}
		m.sniffing[conn] = struct{}{}
		m.wg.Add(1)
		m.mu.Unlock()
		go m.sniff(conn)
	}
}

// sniff reads conn's first byte and routes it.
func (m *muxLayer) sniff(conn net.Conn) {
	defer m.wg.Done()
	var b [1]byte
	conn.SetReadDeadline(time.Now().Add(sniffTimeout))
	_, err := conn.Read(b[:])
	conn.SetReadDeadline(time.Time{})
	m.mu.Lock()
	delete(m.sniffing, conn)
	m.mu.Unlock()
	switch {
	case err != nil:
		conn.Close()
	case b[0] == discoveryByte:
		m.serve(conn)
	default:
		select {
		case m.conns <- &prefixConn{Conn: conn, first: b[0], pending: true}:
		case <-m.done:
			conn.Close()
		}
	}
}

// Accept implements net.Listener for Raft.
func (m *muxLayer) Accept() (net.Conn, error) {
	select {
	case c := <-m.conns:
		return c, nil
	case <-m.done:
		return nil, net.ErrClosed
	}
}

// Close stops accepting, closes connections still being sniffed and waits for the
// goroutines. Raft's transport calls it once on shutdown.
func (m *muxLayer) Close() error {
	var err error
	m.closeOnce.Do(func() {
		m.mu.Lock()
		close(m.done)
		for c := range m.sniffing {
			c.Close()
		}
		m.mu.Unlock()
		err = m.ln.Close()
		m.wg.Wait()
	})
	return err
}

// Addr is the advertised address (what Raft tells its peers).
func (m *muxLayer) Addr() net.Addr { return m.advertise }

// Dial implements raft.StreamLayer.
func (m *muxLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return nodenet.DialTimeout(m.network, "tcp", string(addr), timeout)
}

// prefixConn gives back the byte sniff read before the rest of the stream.
type prefixConn struct {
	net.Conn
	first   byte
	pending bool // first has not been read yet; only Raft's reader goroutine reads
}

func (p *prefixConn) Read(b []byte) (int, error) {
	if p.pending && len(b) > 0 {
		b[0] = p.first
		p.pending = false
		return 1, nil
	}
	return p.Conn.Read(b)
}
