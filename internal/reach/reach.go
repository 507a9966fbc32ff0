// Package reach tells whether a node's process is gone: a TCP connect to its Kafka
// listener is refused. A refusal is a definite answer (the kernel of the node's host
// says nothing listens on that port, which for a registered node means the process
// died or was killed), unlike a timeout, which a paused or cut-off node gives as well
// as a slow one. The active controller uses it to fence a killed node at once instead
// of after broker.session.timeout.ms, and every node uses it to hold a Metadata answer
// that would name a dead leader until the new leader is elected: a client that gets
// the dead leader back (franz-go refreshes at most every 5 s, MetadataMinAge) would
// stay stuck on it for seconds.
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
	// DefaultDialTimeout bounds one probe. A refusal comes back in a round trip, so
	// this only limits what a probe of a paused or unreachable node costs.
	DefaultDialTimeout = 200 * time.Millisecond
	// DefaultTTL is how long a probe's answer is reused. It bounds the probes sent to
	// a node to one per TTL however many Metadata requests ask, at the price of
	// trusting an "alive" answer that long.
	DefaultTTL = 100 * time.Millisecond
)

// Prober probes addresses and caches the answers for TTL. The zero value is not
// usable; use New. Safe for concurrent use.
type Prober struct {
	ttl  time.Duration
	dial func(ctx context.Context, addr string) (net.Conn, error)
	now  func() time.Time

	mu sync.Mutex
	m  map[string]*probe
}

// probe is one address's last answer, or the one in flight (done open).
type probe struct {
	at   time.Time
	gone bool
	done chan struct{}
}

// New returns a Prober with the default timeout and TTL.
func New() *Prober {
	d := &net.Dialer{Timeout: DefaultDialTimeout}
	return &Prober{ttl: DefaultTTL, dial: func(ctx context.Context, addr string) (net.Conn, error) {
		return d.DialContext(ctx, "tcp", addr)
	}, now: time.Now, m: map[string]*probe{}}
}

// Gone reports whether a connection to addr is refused. A probe that times out, or
// fails any other way, or succeeds, says false: only a refusal proves the process
// gone. Concurrent callers for one address share one probe; its answer is reused for
// the TTL.
func (p *Prober) Gone(ctx context.Context, addr string) bool {
	p.mu.Lock()
	pr := p.m[addr]
	if pr != nil {
		select {
		case <-pr.done:
			if p.now().Sub(pr.at) < p.ttl {
				p.mu.Unlock()
				return pr.gone
			}
			pr = nil
		default:
		}
	}
	if pr == nil {
		pr = &probe{done: make(chan struct{})}
		p.m[addr] = pr
		go p.run(addr, pr)
	}
	p.mu.Unlock()
	select {
	case <-pr.done:
		return pr.gone
	case <-ctx.Done():
		return false
	}
}

// Forget drops the cached answer for addr, so that the next Gone probes again.
func (p *Prober) Forget(addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pr := p.m[addr]; pr != nil {
		select {
		case <-pr.done:
			delete(p.m, addr)
		default:
		}
	}
}

func (p *Prober) run(addr string, pr *probe) {
	ctx, cancel := context.WithTimeout(context.Background(), DefaultDialTimeout)
	defer cancel()
	c, err := p.dial(ctx, addr)
	if err == nil {
		// A plain close (the node sees EOF and says nothing). It leaves a TIME_WAIT
		// socket here, which the TTL bounds to one per address per TTL.
		c.Close()
	}
	p.mu.Lock()
	pr.gone, pr.at = Refused(err), p.now()
	close(pr.done)
	p.mu.Unlock()
}

// Refused reports whether err is a refused connection.
func Refused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }
