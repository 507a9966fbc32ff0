package kafka

// SaslAuthenticate: v0-2 (KIP-152). Carries the SASL tokens after a v1 SaslHandshake:
// each request's bytes go to the mechanism's exchange (internal/auth) and its reply
// comes back in the response. Once the exchange is done the connection is
// authenticated as its user: conn.user, the principal User:<name> of client quotas and
// ACLs. A failed exchange (unknown user, wrong password, a malformed message) answers
// SASL_AUTHENTICATION_FAILED with a message naming the user and mechanism, is logged
// with the remote address (never the password), and closes the connection, as Kafka.
// SaslAuthenticate before a handshake, after a v0 handshake (whose tokens are raw
// frames) or once authenticated answers ILLEGAL_SASL_STATE. SessionLifetimeMs (v1+) is
// 0: Runnel does not expire sessions nor re-authenticate (KIP-368 is left out).
//
// rawSaslToken serves the same exchange for the v0 handshake's bare tokens.

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(36, 0, 2, handleSaslAuthenticate) }

// errCloseAfterResponse, returned by a handler with its response, sends the response
// and then closes the connection (a failed authentication).
var errCloseAfterResponse = errors.New("close the connection after the response")

func handleSaslAuthenticate(_ context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.SASLAuthenticateRequest)
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	c := r.conn
	if c.authenticated || c.sasl.exchange == nil || c.sasl.rawTokens {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		msg := "SaslAuthenticate without a SaslHandshake v1 before it on this connection"
		if c.authenticated {
			msg = "SaslAuthenticate on a connection already authenticated (re-authentication is not supported)"
		}
		resp.ErrorMessage = &msg
		if c.authenticated {
			return resp, nil
		}
		return resp, errCloseAfterResponse
	}
	reply, err := c.saslStep(req.SASLAuthBytes)
	if err != nil {
		msg := err.Error()
		resp.ErrorCode, resp.ErrorMessage = kerr.SaslAuthenticationFailed.Code, &msg
		return resp, errCloseAfterResponse
	}
	resp.SASLAuthBytes = reply
	return resp, nil
}

// saslStep feeds one client token to the connection's exchange. When the exchange
// completes, the connection is authenticated as its user; when it fails, the failure
// is logged (the error names the user and mechanism, never the password) and returned.
func (c *conn) saslStep(token []byte) ([]byte, error) {
	st := &c.sasl
	reply, done, err := st.exchange.Step(token)
	if err != nil {
		c.s.logger.Warn("SASL authentication failed", "mechanism", st.mechanism, "listener", c.listener.cfg.Name,
			"remote", c.remote, "err", err)
		return nil, err
	}
	if done {
		c.user = st.exchange.User()
		c.authenticated = true
		c.s.logger.Debug("SASL authenticated", "user", c.user, "mechanism", st.mechanism,
			"listener", c.listener.cfg.Name, "remote", c.remote)
		c.sasl = saslState{mechanism: st.mechanism}
	}
	return reply, nil
}

// rawSaslToken serves one bare token frame of size bytes after a v0 SaslHandshake:
// the exchange's reply goes back as a bare size-prefixed frame, and a failure closes
// the connection without an answer (v0 has no way to carry an error). It runs on the
// reader goroutine; before authentication nothing else is pending on the connection.
func (c *conn) rawSaslToken(br *bufio.Reader, size int32) error {
	token := make([]byte, size)
	if err := c.readFull(br, token); err != nil {
		return err
	}
	c.reads++
	reply, err := c.saslStep(token)
	if err != nil {
		return fmt.Errorf("SASL authentication (v0 handshake, raw tokens): %w", err)
	}
	buf := getBuf(4 + len(reply))[:4]
	binary.BigEndian.PutUint32(buf, uint32(len(reply)))
	buf = append(buf, reply...)
	p := &pending{req: &request{key: 36, conn: c, received: time.Now()}, done: make(chan struct{}), buf: buf}
	close(p.done)
	select {
	case c.queue <- p:
		return nil
	case <-c.s.ctx.Done():
		return c.s.ctx.Err()
	}
}
