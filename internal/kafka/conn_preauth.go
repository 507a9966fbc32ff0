package kafka

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The pre-authentication gate: on a SASL listener, until SASL authentication succeeded
// (conn.authenticated), a frame is at most saslMaxReceiveSize bytes, only ApiVersions,
// SaslHandshake and SaslAuthenticate are served, one at a time (oneAtATime), and after
// a v0 SaslHandshake the frames are bare tokens, served on the reader (rawSaslToken).

// gateFrame checks a frame before authentication from its size prefix alone, and
// serves it when it is a v0 handshake's raw token (consumed: the frame is read and
// answered). After authentication it lets every frame through.
func (c *conn) gateFrame(fr *frameReader, size int32) (consumed bool, err error) {
	if c.authenticated {
		return false, nil
	}
	if err := c.checkUnauthenticatedFrame(size); err != nil {
		return false, err
	}
	if !c.sasl.rawTokens {
		return false, nil
	}
	return true, c.rawSaslToken(fr.br, size)
}

// servedBeforeAuthentication reports whether an unauthenticated connection of a SASL
// listener may send a request of API key key.
func servedBeforeAuthentication(key int16) bool {
	switch key {
	case kmsg.ApiVersions.Int16(), kmsg.SASLHandshake.Int16(), kmsg.SASLAuthenticate.Int16():
		return true
	}
	return false
}

// gateRequest refuses, before authentication, a request of an API other than the
// three that authenticate; the connection is then closed.
func (c *conn) gateRequest(key int16) error {
	if c.authenticated || servedBeforeAuthentication(key) {
		return nil
	}
	return fmt.Errorf("%s before SASL authentication on listener %s (%s): only ApiVersions, SaslHandshake and SaslAuthenticate are served before",
		kmsg.NameForKey(key), c.listener.cfg.Name, c.listener.cfg.Protocol)
}
