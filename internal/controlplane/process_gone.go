package controlplane

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/liveness"
	"github.com/runnel-io/runnel/internal/metadata"
)

// ProcessGone reports whether node b's process is gone (its Kafka listener refuses
// connections), for the controller's fencing and the Metadata hold. Where b has a
// listener without TLS (PLAINTEXT or SASL_PLAINTEXT: ApiVersions is served before any
// login), "alive" also needs an answer to an ApiVersions request, bounded by
// processAnswerTimeout (liveness.Prober.GoneAnswering): a node being killed may still
// complete TCP handshakes for tens of milliseconds after its clients' connections
// were reset, and a client that asks for metadata in that time must not be told
// the dead leader (franz-go would not ask again for 5 s). A node with TLS listeners
// only is checked by the dial alone.
func ProcessGone(ctx context.Context, p *liveness.Prober, b metadata.Broker) bool {
	return ProcessState(ctx, p, b) == liveness.Gone
}

// ProcessState is ProcessGone's probe with its whole verdict: Gone, Answered, or
// Silent when b neither answered nor refused within processAnswerTimeout (paused, cut
// off, overloaded). A node with TLS listeners only is checked by the dial alone, so
// it is never Silent: a dial that does not fail counts as Answered.
func ProcessState(ctx context.Context, p *liveness.Prober, b metadata.Broker) liveness.Verdict {
	addr, plain := probeAddr(b)
	if !plain {
		if p.Gone(ctx, addr) {
			return liveness.Gone
		}
		return liveness.Answered
	}
	ctx, cancel := context.WithTimeout(ctx, processAnswerTimeout)
	defer cancel()
	return p.Answering(ctx, addr, pingAPIVersions)
}

// processAnswerTimeout bounds how long ProcessGone waits for a node that neither
// answers nor refuses (paused, cut off, overloaded): it then says not gone.
const processAnswerTimeout = 250 * time.Millisecond

// probeAddr is the address ProcessGone checks: b's first endpoint without TLS (plain
// true), else its registered (inter-broker) address.
func probeAddr(b metadata.Broker) (addr string, plain bool) {
	for _, e := range b.Endpoints {
		if e.SecurityProtocol == 0 || e.SecurityProtocol == 2 { // PLAINTEXT, SASL_PLAINTEXT
			return net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port))), true
		}
	}
	return b.Addr(), len(b.Endpoints) == 0 // no endpoints listed: the plain default
}

// probeFormatter frames the probe's ApiVersions requests.
var probeFormatter = kmsg.NewRequestFormatter(kmsg.FormatterClientID("runnel-probe"))

// pingAPIVersions sends ApiVersions v0 on c and reads one whole response: any answer
// shows the process running.
func pingAPIVersions(ctx context.Context, c net.Conn) error {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(processAnswerTimeout)
	}
	c.SetDeadline(deadline)
	defer c.SetDeadline(time.Time{})
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 0
	if _, err := c.Write(probeFormatter.AppendRequest(nil, req, 0)); err != nil {
		return err
	}
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > 1<<20 {
		return fmt.Errorf("ApiVersions response of %d bytes", n)
	}
	_, err := io.CopyN(io.Discard, c, int64(n))
	return err
}
