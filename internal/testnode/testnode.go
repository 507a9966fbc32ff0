// Package testnode starts a real single-node Runnel cluster inside a test process:
// the same server the binary runs (internal/server), over real loopback sockets. It is
// for the tests of packages above the server (internal/cli, mirror) that need a real
// broker without the cost of a separate process. It is a shorthand for internal/cluster
// with Options.InProcess and one node.
//
// It is a package of its own, not part of internal/testutil, because it imports
// internal/server (through internal/cluster), whose own tests import testutil:
// testutil importing the server would be an import cycle.
package testnode

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/cluster"
)

// LogTailLines is how many lines of the node's log a failed test prints.
const LogTailLines = cluster.LogTailLines

// Start starts a single-node Runnel cluster (node.id 1, every listener on a free
// loopback port, a fresh data directory) with the extra properties sets (KEY=VALUE),
// and returns its Kafka address. It is internal/cluster's in-process mode
// (Options.InProcess) with one node: the node is stopped when the test ends and, if
// the test failed, the tail of its log is printed.
func Start(t testing.TB, sets ...string) string {
	t.Helper()
	c := cluster.Start(t, cluster.Options{Nodes: 1, InProcess: true, Sets: sets, StartTimeout: 30 * time.Second})
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
