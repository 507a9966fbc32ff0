package clustertest

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// Shared is a cluster shared by every test of one test binary, for suites whose tests
// each use their own topics and groups and would spend most of their time starting
// nodes otherwise (internal/group's and internal/txn's end-to-end tests: one node
// serves some sixty tests). Start's cluster lives as long as the test given to it;
// a Shared one lives from the first test that asks for it to the end of TestMain:
//
//	var shared = cluster.NewShared(cluster.Options{Nodes: 1, InProcess: true})
//
//	func TestMain(m *testing.M) { os.Exit(shared.Main(m)) }
//
//	func TestX(t *testing.T) {
//		c := shared.Get(t) // starts the cluster on first use
//		cl := c.Client(t)
//		...
//	}
//
// The cluster starts lazily, so that a run that selects none of its tests (-run, or
// -short where the tests skip first) starts no node. A failed start fails every test
// that asks, with the same error. Each test that fails is shown the nodes' output
// written while it ran. Main stops the cluster after the last test; a node that exited
// on its own or broke an invariant fails the binary there, with the nodes' output.
//
// Only Options.InProcess and process clusters can be shared: a virtual cluster lives
// in one synctest bubble, which is one test. Faults change what every later test
// sees, so a shared cluster is for tests that inject none; a test that kills or
// restarts nodes starts its own cluster with Start.
//
// The methods of Cluster that take no testing.TB (Node, Kill, ...) report a failure
// by failing the test that started the cluster; a shared cluster has none, so there
// they print the failure and end the calling goroutine (runtime.Goexit, as
// t.FailNow does), which fails the calling test. Prefer the methods that take t.
type Shared struct {
	o Options // immutable

	once sync.Once
	c    *Cluster  // set by once: the cluster, nil if it failed to start
	tb   *binaryTB // set by once if the cluster started
	err  error     // set by once: why the cluster did not start
}

// NewShared returns a cluster of o for a whole test binary, started by the first Get.
func NewShared(o Options) *Shared { return &Shared{o: o} }

// Get returns the shared cluster, starting it on the first call, and arranges for t,
// should it fail, to print what the nodes wrote while it ran. It fails t if the
// cluster could not start.
func (s *Shared) Get(t testing.TB) *Cluster {
	t.Helper()
	s.once.Do(s.start)
	if s.err != nil {
		t.Fatalf("cluster: starting the shared cluster: %v", s.err)
	}
	from := make([]int, len(s.c.nodes))
	for i, n := range s.c.nodes {
		from[i] = len(n.Logs())
	}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for i, n := range s.c.nodes {
			out := n.Logs()
			if from[i] <= len(out) {
				out = out[from[i]:]
			}
			t.Logf("---- node %d's output during %s (last %d lines):\n%s", n.ID, t.Name(), LogTailLines, tail(out, LogTailLines))
		}
	})
	return s.c
}

// start runs Start on a goroutine of its own with a binaryTB, so that a t.Fatal
// inside Start (runtime.Goexit) ends that goroutine only, and its message becomes
// s.err.
func (s *Shared) start() {
	if s.o.Virtual {
		s.err = errors.New("a virtual cluster cannot be shared: it lives in one synctest bubble")
		return
	}
	tb := &binaryTB{name: "shared-cluster"}
	var c *Cluster
	done := make(chan struct{})
	go func() {
		defer close(done)
		c = Start(tb, s.o)
	}()
	<-done
	if c == nil || tb.Failed() {
		// Every test that asks reports this; Stop has nothing left to do.
		s.err = errors.New(tb.report())
		tb.cleanup() // whatever Start had registered: nodes, temporary directories
		return
	}
	s.c, s.tb = c, tb
}

// Main runs the tests (m.Run), then stops the shared cluster if it was started, and
// returns the exit code for os.Exit: m.Run's, or 1 if stopping found a node that had
// exited on its own or broken an invariant. If a test failed, the tail of every
// node's output is printed. Use it from TestMain: os.Exit(shared.Main(m)).
func (s *Shared) Main(m *testing.M) int {
	code := m.Run()
	if err := s.Stop(code != 0); err != nil {
		fmt.Fprintf(os.Stderr, "cluster: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// Stop stops the shared cluster (every node killed, its directories removed) and
// returns what went wrong with the nodes while it ran: a node that exited on its own,
// a broken invariant. With failed (the tests failed) the tail of each node's output
// is printed to stderr. Main calls it; it does nothing before the cluster started,
// and it marks the Shared used, so that a later Get does not start another cluster.
func (s *Shared) Stop(failed bool) error {
	s.once.Do(func() { s.err = errors.New("the shared cluster was stopped before use") })
	if s.tb == nil {
		return nil
	}
	s.tb.mu.Lock()
	s.tb.binaryFailed = failed
	s.tb.mu.Unlock()
	s.tb.cleanup() // Start's cleanups: shutdown (which logs through tb), then the directories
	if msg := s.tb.report(); msg != "" {
		if failed {
			fmt.Fprintln(os.Stderr, msg)
		}
		if s.tb.errored() {
			return errors.New(msg)
		}
	}
	return nil
}

// binaryTB is the testing.TB of a cluster shared by a test binary: it collects
// cleanups (run by cleanup, last registered first, as testing does), makes temporary
// directories, and records what Start and the cluster's shutdown report. The methods
// of testing.TB it does not define are never called by this package; the embedded
// nil TB (which also supplies testing.TB's private method) panics if one is.
type binaryTB struct {
	testing.TB
	name string // immutable

	mu       sync.Mutex
	cleanups []func()
	logs     []string // Logf's and Errorf's lines, in order
	// failed is set by Errorf and Fatal; binaryFailed says the tests failed, so that
	// the cluster's shutdown prints the nodes' output (it asks Failed).
	failed, binaryFailed bool
}

func (b *binaryTB) Helper()      {}
func (b *binaryTB) Name() string { return b.name }

func (b *binaryTB) Cleanup(f func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cleanups = append(b.cleanups, f)
}

func (b *binaryTB) TempDir() string {
	dir, err := os.MkdirTemp("", "runnel-shared-cluster-")
	if err != nil {
		b.Fatalf("TempDir: %v", err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func (b *binaryTB) Logf(format string, args ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.logs = append(b.logs, fmt.Sprintf(format, args...))
}

func (b *binaryTB) Errorf(format string, args ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.logs = append(b.logs, fmt.Sprintf(format, args...))
	b.failed = true
}

func (b *binaryTB) Error(args ...any) { b.Errorf("%s", fmt.Sprint(args...)) }

// Fatalf records the failure and ends the calling goroutine, as t.Fatalf does. Once
// the cluster is up the caller is a test's goroutine (a method of Cluster without a
// testing.TB): the message goes to stderr too, as the test fails without it.
func (b *binaryTB) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	b.Errorf("%s", msg)
	fmt.Fprintf(os.Stderr, "cluster (shared): %s\n", msg)
	runtime.Goexit()
}

func (b *binaryTB) Fatal(args ...any) { b.Fatalf("%s", fmt.Sprint(args...)) }

func (b *binaryTB) Failed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.failed || b.binaryFailed
}

func (b *binaryTB) errored() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.failed
}

// report is every line logged so far.
func (b *binaryTB) report() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.logs, "\n")
}

// cleanup runs and forgets the registered cleanups, last first.
func (b *binaryTB) cleanup() {
	b.mu.Lock()
	fs := b.cleanups
	b.cleanups = nil
	b.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}
