package clustertest

import (
	"bytes"
	"sync"
	"testing"
	"time"
)

// StartOne starts a single-node Runnel cluster (node.id 1, every listener on a free
// loopback port, a fresh data directory) inside the test process, with the extra
// properties sets (KEY=VALUE), and returns its Kafka address: Start with
// Options.InProcess and one node, for the tests of the packages above the server (cli,
// share, doctest, kafka's protocol tests, mirror) that need a real broker without the
// cost of a separate process. The node stops when the test ends and, if the test
// failed, the tail of its log is printed.
func StartOne(t testing.TB, sets ...string) string {
	t.Helper()
	c := Start(t, Options{Nodes: 1, InProcess: true, Sets: sets, StartTimeout: 30 * time.Second})
	return c.Node(1).KafkaAddr
}

// LockedBuffer is an io.Writer safe for concurrent writers (a node's log: the server
// writes it from many goroutines), read back whole with String.
type LockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *LockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *LockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
