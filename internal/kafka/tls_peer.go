package kafka

// The client side of the connections one node opens to another's Kafka listener:
// follower fetches (replica.Fetcher), the controller channel and KIP-590 forwarding
// (controlplane.Channel), transaction markers and KIP-890 checks
// (controlplane.TxnPeers), and the balancer's disk polls. They all dial the other
// node's registered inter-broker endpoint (metadata.Broker.Host and Port) and speak
// that listener's protocol: TLS verified against its truststore, with this node's
// own certificate for a listener that asks for one, and a SASL login as
// inter.broker.sasl.username with sasl.mechanism.inter.broker.protocol.

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/config"
	"github.com/runnel-io/runnel/internal/nodenet"
)

// PeerClient gives the kgo options a client to another node's inter-broker listener
// takes on top of its own: its dialer (the node's network, TLS), bounded by
// dialTimeout since kgo bounds only its own dialer, and its SASL login.
type PeerClient func(dialTimeout time.Duration) []kgo.Opt

// NewPeerClient builds the PeerClient of a node with configuration b that dials on
// network (nil: the host's). It reads the PEM files of a TLS inter-broker listener,
// so it fails, naming the property, where the listener itself would.
func NewPeerClient(b *config.Broker, network nodenet.Network) (PeerClient, error) {
	tlsCfg, err := PeerTLS(b)
	if err != nil {
		return nil, err
	}
	var mech sasl.Mechanism
	if l := b.InterBroker(); l.IsSASL() {
		if mech, err = peerMechanism(b.SaslMechanismInterBrokerProtocol, b.InterBrokerSaslUsername, b.InterBrokerSaslPassword); err != nil {
			return nil, err
		}
	}
	return func(dialTimeout time.Duration) []kgo.Opt {
		opts := []kgo.Opt{kgo.Dialer(peerDialer(network, tlsCfg, dialTimeout))}
		if mech != nil {
			opts = append(opts, kgo.SASL(mech))
		}
		return opts
	}, nil
}

// peerMechanism is franz-go's client side of mechanism for user and password.
func peerMechanism(mechanism, user, password string) (sasl.Mechanism, error) {
	switch mechanism {
	case auth.MechanismPlain:
		return plain.Auth{User: user, Pass: password}.AsMechanism(), nil
	case auth.MechanismScramSHA256:
		return scram.Auth{User: user, Pass: password}.AsSha256Mechanism(), nil
	case auth.MechanismScramSHA512:
		return scram.Auth{User: user, Pass: password}.AsSha512Mechanism(), nil
	}
	return nil, &config.Error{Key: "sasl.mechanism.inter.broker.protocol", Value: mechanism, Reason: "is not a SASL mechanism Runnel speaks"}
}

// peerDialer dials on network, then runs the TLS handshake when tlsCfg is set (its
// ServerName the dialled host, which the other node's certificate must name). nil
// without TLS on the host's network keeps kgo's own dialer.
func peerDialer(network nodenet.Network, tlsCfg *tls.Config, timeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if tlsCfg == nil {
		return nodenet.Dialer(network, timeout)
	}
	n := nodenet.Or(network)
	return func(ctx context.Context, netw, addr string) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		nc, err := n.DialContext(ctx, netw, addr)
		if err != nil {
			return nil, err
		}
		cfg := tlsCfg.Clone()
		if host, _, err := net.SplitHostPort(addr); err == nil {
			cfg.ServerName = host
		}
		tc := tls.Client(nc, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, fmt.Errorf("TLS handshake with %s: %w", addr, err)
		}
		return tc, nil
	}
}
