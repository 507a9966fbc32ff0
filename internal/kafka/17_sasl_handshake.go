package kafka

// SaslHandshake: v0-1. The client names its SASL mechanism; the answer lists the
// mechanisms this listener offers (sasl.enabled.mechanisms, or its
// listener.name.<name>.sasl.enabled.mechanisms). A mechanism not offered is answered
// UNSUPPORTED_SASL_MECHANISM and the connection closed, as Kafka does. After a v1
// handshake the tokens travel in SaslAuthenticate requests (36_sasl_authenticate.go);
// after a v0 one, as old clients (kafka-python before 2.1) send it, they travel as bare
// size-prefixed frames without a request header (rawSaslToken).
//
// A SASL listener's connection is unauthenticated until its exchange succeeds: it is
// then served only ApiVersions, SaslHandshake and SaslAuthenticate, one request at a
// time, in frames of at most saslMaxReceiveSize; any other request closes it, as
// Kafka's SaslServerAuthenticator does. Off a SASL listener, or once authenticated,
// SaslHandshake answers ILLEGAL_SASL_STATE (Runnel does not re-authenticate, KIP-368).

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/auth"
)

func init() { regKey(17, 0, 1, handleSaslHandshake) }

// saslMaxReceiveSize bounds a frame read before authentication: Kafka's default
// sasl.server.max.receive.size, so an unauthenticated client cannot make the node
// buffer a socket.request.max.bytes frame.
const saslMaxReceiveSize = 512 << 10

// saslState is a SASL listener's connection's authentication in progress. Written by
// the SaslHandshake and SaslAuthenticate handlers and by the reader (rawSaslToken), one
// at a time: before authentication the reader waits for each request's handler.
type saslState struct {
	// mechanism is the one the handshake chose, "" before it.
	mechanism string
	// exchange is the server side of the authentication, nil before the handshake.
	exchange auth.Exchange
	// rawTokens says a v0 handshake chose the mechanism: the client's next frames are
	// bare tokens, not requests.
	rawTokens bool
}

// checkUnauthenticatedFrame refuses a frame above saslMaxReceiveSize before
// authentication.
func (c *conn) checkUnauthenticatedFrame(size int32) error {
	if size < 0 || size > saslMaxReceiveSize {
		return fmt.Errorf("frame of %d bytes before SASL authentication on listener %s (at most %d)",
			size, c.listener.cfg.Name, saslMaxReceiveSize)
	}
	return nil
}

func handleSaslHandshake(_ context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.SASLHandshakeRequest)
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	c := r.conn
	if !c.listener.cfg.IsSASL() || c.authenticated || c.sasl.exchange != nil {
		// Kafka answers so on a listener without SASL and after the handshake.
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return resp, nil
	}
	offered := c.listener.cfg.SaslMechanisms
	resp.SupportedMechanisms = offered
	if !slices.Contains(offered, req.Mechanism) {
		s.logger.Info("SASL handshake with a mechanism not offered; closing connection", "mechanism", req.Mechanism,
			"offered", strings.Join(offered, ","), "listener", c.listener.cfg.Name, "remote", c.remote)
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		return resp, errCloseAfterResponse
	}
	ex, err := s.newSaslExchange(req.Mechanism)
	if err != nil {
		return nil, fmt.Errorf("SASL mechanism %s on listener %s: %w", req.Mechanism, c.listener.cfg.Name, err)
	}
	c.sasl = saslState{mechanism: req.Mechanism, exchange: ex, rawTokens: req.Version == 0}
	return resp, nil
}

// newSaslExchange starts the server side of an authentication against the SCRAM
// credentials of the metadata this node has applied.
func (s *Server) newSaslExchange(mechanism string) (auth.Exchange, error) {
	return auth.NewExchange(mechanism, auth.ImageStore(s.leadership.Image))
}
