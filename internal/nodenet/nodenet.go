// Package nodenet is the network a node listens and dials on: OS (the host's TCP stack,
// the default everywhere) or Mem, an in-memory network for tests.
//
// Mem exists for testing/synctest. A synctest bubble advances its fake clock only
// while every goroutine in it is durably blocked, and a goroutine blocked in a real
// socket read is not: with real TCP a whole cluster in a bubble would never see time
// move. Mem's connections block on channels created in the bubble and its deadlines
// are timers of the bubble's clock, so a cluster of in-process nodes on Mem runs in
// virtual time (a 30 s session timeout passes in microseconds of wall time) and
// deterministically.
//
// Mem also models the faults internal/clustertest's process mode makes with network
// namespaces and kill -9: Cut(a, b) blackholes the link between two hosts in both
// directions (bytes in flight and new dials wait, as TCP would retransmit, until Heal),
// and Crash(host) closes every listener and resets every connection of a host, as the
// kernel does for a process that is killed: peers read ECONNRESET and dials to its
// addresses are refused (ECONNREFUSED, so liveness.Refused holds). Pause(host) is
// SIGSTOP as the network sees it: every link of the host blocked both ways with
// nothing reset, until Resume.
//
// The package is a leaf: it imports only the standard library.
package nodenet

import (
	"context"
	"net"
	"time"
)

// Network is where a node listens and dials. Both methods have the signatures of
// net.Listen and net.Dialer.DialContext (so DialContext can be given to
// kgo.Dialer as it is).
type Network interface {
	Listen(network, addr string) (net.Listener, error)
	DialContext(ctx context.Context, network, addr string) (net.Conn, error)
}

// OS is the host's network (net.Listen, net.Dialer). It is what every node uses
// unless a test gives it another Network.
var OS Network = osNetwork{}

// Or returns n, or OS if n is nil: options keep nil as "the default".
func Or(n Network) Network {
	if n == nil {
		return OS
	}
	return n
}

type osNetwork struct{}

func (osNetwork) Listen(network, addr string) (net.Listener, error) { return net.Listen(network, addr) }

func (osNetwork) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

// DialTimeout dials addr on n, giving up after timeout (net.DialTimeout on n).
func DialTimeout(n Network, network, addr string, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return Or(n).DialContext(ctx, network, addr)
}

// Dialer is n's DialContext for kgo.Dialer, bounded by timeout: kgo applies its
// DialTimeout only to its own dialer, so a custom one must bound itself. It is nil
// when n is nil or OS, and kgo.Dialer(nil) keeps kgo's own dialer: a node on the
// host's network dials exactly as it does without this package.
func Dialer(n Network, timeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if n == nil || n == OS {
		return nil
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		return n.DialContext(ctx, network, addr)
	}
}
