package kafka

import (
	"strings"
	"testing"

	"github.com/runnel-io/runnel/internal/config"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Before SASL authentication only the three APIs that authenticate pass the gate, and
// a frame above saslMaxReceiveSize is refused from its size alone; after it, anything
// passes.
func TestPreAuthGate(t *testing.T) {
	l := &listener{cfg: config.Listener{Name: "CLIENTS", Protocol: "SASL_PLAINTEXT"}}
	c := &conn{listener: l}
	for _, key := range []int16{kmsg.ApiVersions.Int16(), kmsg.SASLHandshake.Int16(), kmsg.SASLAuthenticate.Int16()} {
		if err := c.gateRequest(key); err != nil {
			t.Errorf("%s refused before authentication: %v", kmsg.NameForKey(key), err)
		}
	}
	err := c.gateRequest(kmsg.Produce.Int16())
	if err == nil || !strings.Contains(err.Error(), "Produce before SASL authentication on listener CLIENTS") {
		t.Errorf("Produce before authentication: %v, want a refusal naming the API and the listener", err)
	}
	if _, err := c.gateFrame(nil, saslMaxReceiveSize+1); err == nil {
		t.Errorf("a frame of %d bytes passed before authentication", saslMaxReceiveSize+1)
	}
	if consumed, err := c.gateFrame(nil, 100); consumed || err != nil {
		t.Errorf("a request frame before a v0 handshake: consumed %v, err %v; want it passed on", consumed, err)
	}
	c.authenticated = true
	if err := c.gateRequest(kmsg.Produce.Int16()); err != nil {
		t.Errorf("Produce refused after authentication: %v", err)
	}
	if consumed, err := c.gateFrame(nil, saslMaxReceiveSize+1); consumed || err != nil {
		t.Errorf("a large frame after authentication: consumed %v, err %v; want it passed on", consumed, err)
	}
}
