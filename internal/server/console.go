package server

import (
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/config"
	"github.com/runnel-io/runnel/internal/console"
	"github.com/runnel-io/runnel/internal/httpd"
	"github.com/runnel-io/runnel/internal/metadata"
)

// The web console's wiring: internal/console over the node (consoleNode).

// console is the web console's handler for the node's HTTP listener (/ and /api/v1/);
// n.close stops its charts' sampler (n.consoleClose).
func (n *Node) console() http.Handler {
	c := console.New(console.Options{Node: consoleNode{n}, Logger: n.logger, Login: n.consoleNeedsLogin(),
		Authorizer: n.consoleAuthorizer()})
	n.consoleClose = c.Close
	return c
}

// consoleLogin is the console's sign-in, nil when no Kafka listener requires SASL.
func (n *Node) consoleLogin() *httpd.Login {
	if !n.consoleNeedsLogin() {
		return nil
	}
	store := auth.ImageStore(func() *metadata.Image {
		if !n.serving.Load() {
			return nil
		}
		return n.leadership.Image()
	})
	return console.NewLogin(store, n.saslMechanisms())
}

// consoleNeedsLogin: a Kafka listener requires SASL, so the console requires a login
// (even a SASL listener without mechanisms, which the config refuses anyway); or a TLS
// listener requires a client certificate and the console is HTTPS, where a browser
// can present one (consoleClientCAs).
func (n *Node) consoleNeedsLogin() bool {
	return slices.ContainsFunc(n.cfg.Listeners, func(l config.Listener) bool {
		return l.IsSASL() || (n.cfg.HTTPTLSCertificate != "" && l.IsTLS() && l.ClientAuth.Value == config.ClientAuthRequired)
	})
}

// consoleClientCAs are the truststores of the TLS listeners that take client
// certificates (ssl.client.auth requested or required): the HTTPS console asks the
// browser for a certificate signed by one of them and signs it in as that
// certificate's principal, as those listeners would.
func (n *Node) consoleClientCAs() []string {
	var out []string
	for _, l := range n.cfg.Listeners {
		if l.IsTLS() && l.ClientAuth.Value != config.ClientAuthNone && l.Truststore.Value != "" && !slices.Contains(out, l.Truststore.Value) {
			out = append(out, l.Truststore.Value)
		}
	}
	return out
}

// saslMechanisms are the mechanisms the node's SASL listeners offer, in a fixed order.
func (n *Node) saslMechanisms() []string {
	out := []string{}
	for _, l := range n.cfg.Listeners {
		if !l.IsSASL() {
			continue
		}
		for _, m := range l.SaslMechanisms {
			m = strings.ToUpper(strings.TrimSpace(m))
			if m != "" && !slices.Contains(out, m) {
				out = append(out, m)
			}
		}
	}
	slices.Sort(out)
	return out
}

// consoleAuthorizer is the node's ACL decision for the console's users, nil with
// ACLs off (authorizer.class.name unset).
func (n *Node) consoleAuthorizer() *auth.Authorizer {
	if n.cfg.AuthorizerClassName == "" {
		return nil
	}
	a, err := auth.NewAuthorizer(n.cfg.SuperUsers, n.cfg.AllowEveryoneIfNoACLFound)
	if err != nil {
		// As the Kafka server: a super.users that failed here anyway (it is
		// validated at start-up) denies rather than opens.
		a, _ = auth.NewAuthorizer("", false)
	}
	return a
}

// consoleNode implements console.Node over a node.
type consoleNode struct{ n *Node }

func (c consoleNode) ID() int32        { return c.n.cfg.NodeID }
func (c consoleNode) Serving() bool    { return c.n.serving.Load() }
func (c consoleNode) Ready() bool      { return c.n.ready.Load() }
func (c consoleNode) ReadyErr() error  { return c.n.readyErr() }
func (c consoleNode) LeaseValid() bool { return c.n.lease.Valid() }

func (c consoleNode) Image() *metadata.Image { return c.n.leadership.Image() }

func (c consoleNode) ControllerID() int32 { return int32(c.n.admin.ControllerID()) }

func (c consoleNode) MinISR(im *metadata.Image, t *metadata.Topic) int32 {
	return c.n.resolveTopic(im, t).MinISR
}

func (c consoleNode) LeaderOffsets(tp metadata.TopicPartition) (console.LocalOffsets, bool) {
	p, err := c.n.replicas.Partition(tp)
	if err != nil || !p.IsLeader() || !c.n.lease.Valid() {
		return console.LocalOffsets{}, false
	}
	st := p.State()
	return console.LocalOffsets{LogStart: st.LogStartOffset, HighWatermark: st.HighWatermark, LogEnd: st.LogEndOffset}, true
}

// TopicBytesOut reads n.kafka, set before n.ready is stored and kept until the
// node closes.
func (c consoleNode) TopicBytesOut() map[string]float64 {
	if !c.n.ready.Load() {
		return nil
	}
	return c.n.kafka.TopicBytesOut()
}

func (c consoleNode) ReassignmentBytesRemaining(tp metadata.TopicPartition) (int64, bool) {
	p, err := c.n.replicas.Partition(tp)
	if err != nil || !p.IsLeader() {
		return 0, false
	}
	return p.ReassignmentBytesRemaining()
}

// KafkaClient is the node's inter-broker listener: its bound address, with a wildcard
// host (a listener on 0.0.0.0 or [::]) made loopback, and n.peerClient's options, so
// the console's clients connect as another node does (a plaintext client could not
// read a secured node). The listener is bound late in start-up and closed first at
// shutdown: n.ready, stored after kafkaAddr is set and cleared before the listener
// closes, guards the read.
func (c consoleNode) KafkaClient(timeout time.Duration) (string, []kgo.Opt, error) {
	n := c.n
	if !n.ready.Load() {
		return "", nil, fmt.Errorf("node %d does not serve Kafka clients now (starting or stopping): "+
			"its own listener, which the console asks, is not open", n.cfg.NodeID)
	}
	addr := n.kafkaAddr.String()
	if host, port, err := net.SplitHostPort(addr); err == nil {
		if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
			addr = net.JoinHostPort("127.0.0.1", port)
		}
	}
	return addr, n.peerClient(timeout), nil
}

// ownKafkaAdmin is an admin client of the node's own listener, as the console's; the
// caller closes it.
func (n *Node) ownKafkaAdmin() (*kadm.Client, error) {
	seed, opts, err := consoleNode{n}.KafkaClient(2 * time.Second)
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.ClientID(fmt.Sprintf("runnel-console-%d", n.cfg.NodeID)), kgo.SeedBrokers(seed)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("client of node %d's own listener %s: %w", n.cfg.NodeID, seed, err)
	}
	return kadm.NewClient(cl), nil
}
