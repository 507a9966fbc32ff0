package kafka

// A node serves Kafka on several listeners (config.Broker.Listeners), each with its
// own security protocol: PLAINTEXT, SSL (TLS), SASL_PLAINTEXT and SASL_SSL (SASL
// authentication first, over TCP or TLS). Every connection knows the listener it was
// accepted on, for two reasons: what it must do before it is served (the TLS handshake,
// SASL authentication: conn.go, 17_sasl_handshake.go, 36_sasl_authenticate.go) and the
// addresses it is given. A client gets the brokers' endpoints of the listener it
// connected on, never another listener's (Kafka's rule): Metadata, DescribeCluster and
// FindCoordinator answer with listenerEndpoint.

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/runnel-io/runnel/internal/config"
	"github.com/runnel-io/runnel/internal/metadata"
)

// listener is one bound Kafka listener.
type listener struct {
	cfg config.Listener
	ln  net.Listener
	// tls is the server side of TLS on an SSL or SASL_SSL listener, nil otherwise.
	tls *tls.Config
}

// SecurityProtocolID is Kafka's SecurityProtocol id of protocol p (a config.Protocol
// constant), as BrokerRegistration carries it.
func SecurityProtocolID(p string) int16 {
	switch p {
	case config.ProtocolSSL:
		return 1
	case config.ProtocolSaslPlaintext:
		return 2
	case config.ProtocolSaslSSL:
		return 3
	}
	return 0
}

// ListenAll binds every listener of the node's configuration (Config.Broker.Listeners),
// reading the TLS listeners' PEM files first, and returns the bound addresses in the
// same order (useful with port 0). On error nothing stays bound.
func (s *Server) ListenAll() ([]net.Addr, error) {
	var bound []*listener
	fail := func(err error) ([]net.Addr, error) {
		for _, l := range bound {
			l.ln.Close()
		}
		return nil, err
	}
	for _, lc := range s.cfg.Broker.Listeners {
		l := &listener{cfg: lc}
		if lc.IsTLS() {
			var err error
			if l.tls, err = ServerTLS(lc); err != nil {
				return fail(err)
			}
		}
		ln, err := s.cfg.Listen("tcp", lc.Addr)
		if err != nil {
			return fail(fmt.Errorf("kafka listener %s on %s: %w", lc.Name, lc.Addr, err))
		}
		l.ln = ln
		bound = append(bound, l)
	}
	return s.addListeners(bound), nil
}

// Listen binds one PLAINTEXT listener named PLAINTEXT on addr, whatever the
// configuration's listeners (tests that build a Server alone).
func (s *Server) Listen(addr string) (net.Addr, error) {
	ln, err := s.cfg.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	lc := config.Listener{Name: config.ProtocolPlaintext, Addr: addr, Advertise: addr, Protocol: config.ProtocolPlaintext}
	return s.addListeners([]*listener{{cfg: lc, ln: ln}})[0], nil
}

func (s *Server) addListeners(ls []*listener) []net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	addrs := make([]net.Addr, len(ls))
	for i, l := range ls {
		s.listeners = append(s.listeners, l)
		addrs[i] = l.ln.Addr()
	}
	return addrs
}

// Serve accepts connections on every bound listener until Close, and returns the
// first accept error (nil after Close). Listen or ListenAll must have been called.
func (s *Server) Serve() error {
	s.mu.Lock()
	ls := s.listeners
	s.mu.Unlock()
	if len(ls) == 0 {
		return errors.New("kafka: Serve before Listen")
	}
	errs := make(chan error, len(ls))
	for _, l := range ls {
		go func() { errs <- s.accept(l) }()
	}
	var first error
	for range ls {
		if err := <-errs; err != nil && first == nil {
			first = err
			s.closeListeners() // one listener failed: stop the others rather than half-serve
		}
	}
	return first
}

// accept runs l's accept loop until Close.
func (s *Server) accept(l *listener) error {
	for {
		nc, err := l.ln.Accept()
		if err != nil {
			if s.ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(5 * time.Millisecond)
				continue
			}
			return fmt.Errorf("kafka listener %s on %s: %w", l.cfg.Name, l.ln.Addr(), err)
		}
		c := newConn(s, nc, l)
		s.mu.Lock()
		if s.ctx.Err() != nil {
			s.mu.Unlock()
			nc.Close()
			return nil
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			c.serve()
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
		}()
	}
}

func (s *Server) closeListeners() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range s.listeners {
		l.ln.Close()
	}
}

// listenerOf is the name of the listener the request of ctx arrived on; "" outside a
// request (a handler called directly), which listenerEndpoint takes as the node's
// inter-broker listener.
func listenerOf(ctx context.Context) string {
	if r, ok := ctx.Value(requestKey{}).(*request); ok && r.conn != nil && r.conn.listener != nil {
		return r.conn.listener.cfg.Name
	}
	return ""
}

// listenerEndpoint is b's endpoint for a client connected on the listener of ctx: its
// registered endpoint of that name. ok is false when b has none (a node configured
// with other listeners), and the client must then not be told about b at all.
func (s *Server) listenerEndpoint(ctx context.Context, b metadata.Broker) (host string, port int32, ok bool) {
	name := listenerOf(ctx)
	if name == "" {
		return b.Host, b.Port, true
	}
	e, ok := b.Endpoint(name)
	return e.Host, e.Port, ok
}
