package kafka

import (
	"encoding/binary"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/runnel-io/runnel/internal/config"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// idleServer serves Kafka on loopback with connections.max.idle.ms set to idle.
func idleServer(t *testing.T, idle time.Duration) string {
	t.Helper()
	cfg := config.Default()
	if err := cfg.Set("connections.max.idle.ms", strconv.FormatInt(idle.Milliseconds(), 10)); err != nil {
		t.Fatal(err)
	}
	s := NewServer(Config{Broker: cfg}, nil, nil, NewMetrics(prometheus.NewRegistry()))
	addr, err := s.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve()
	t.Cleanup(func() { s.Close() })
	return addr.String()
}

// apiVersions sends an ApiVersions request on c and reads its response.
func apiVersions(t *testing.T, c net.Conn) {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(0)
	if _, err := c.Write(kmsg.NewRequestFormatter().AppendRequest(nil, req, 1)); err != nil {
		t.Fatalf("writing a request: %v", err)
	}
	var size [4]byte
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(c, size[:]); err != nil {
		t.Fatalf("reading a response: %v", err)
	}
	if _, err := io.CopyN(io.Discard, c, int64(binary.BigEndian.Uint32(size[:]))); err != nil {
		t.Fatalf("reading a response: %v", err)
	}
}

// connections.max.idle.ms: a connection that sends nothing is closed after about that
// long (at most twice it); one that keeps sending requests stays open.
func TestConnectionsMaxIdle(t *testing.T) {
	const idle = 300 * time.Millisecond
	addr := idleServer(t, idle)
	quiet, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer quiet.Close()
	busy, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	start := time.Now()
	closed := make(chan time.Duration, 1)
	go func() {
		quiet.SetReadDeadline(time.Now().Add(10 * time.Second))
		var b [1]byte
		_, err := quiet.Read(b[:])
		if err == io.EOF {
			closed <- time.Since(start)
		}
		close(closed)
	}()
	for time.Since(start) < 4*idle {
		apiVersions(t, busy) // a request every idle/3 keeps it open
		time.Sleep(idle / 3)
	}
	d, ok := <-closed
	switch {
	case !ok:
		t.Fatal("the idle connection was not closed by the server")
	case d < idle-50*time.Millisecond || d > 2*idle+time.Second: // start is taken after the accept
		t.Errorf("the idle connection was closed after %v, want between %v and twice that", d, idle)
	}
	apiVersions(t, busy)
}
