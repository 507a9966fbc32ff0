package clustertest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/nodenet"
	"github.com/runnel-io/runnel/internal/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Options configure Start. The zero value of a field gives its default.
type Options struct {
	// Nodes is the number of nodes (default 3). Every node is a metadata voter.
	Nodes int
	// Sets are extra --set KEY=VALUE properties given to every node.
	Sets []string
	// NodeSets, if set, gives node id's own extra properties (KEY=VALUE, after Sets):
	// what differs between nodes, such as broker.rack.
	NodeSets func(id int32) []string
	// BinPath is the runnel binary; "" takes $RUNNEL_CLUSTER_BIN, else builds
	// cmd/runnel from this checkout once per test binary (Main removes it afterwards).
	BinPath string
	// StartTimeout bounds how long Start and Restart wait for /readyz (default 60s).
	StartTimeout time.Duration
	// Netns runs every node in a network namespace of its own, so that Partition and
	// Isolate can cut nodes apart (see netns.go). Node i listens on 10.213.X.i (X
	// random per cluster) on the ports NetnsKafkaPort, NetnsControllerPort and
	// NetnsHTTPPort; the test process reaches every node through a bridge. It needs
	// iproute2 and root (CAP_NET_ADMIN, CAP_SYS_ADMIN); Start skips the test where
	// namespaces cannot be created.
	Netns bool
	// Virtual runs every node in the test process, on an in-memory network, instead
	// of as a process (see virtual.go): inside testing/synctest.Test the cluster then
	// runs in virtual time. BinPath and Netns are ignored with it.
	Virtual bool
	// InProcess runs every node in the test process on the host's loopback (Kafka and
	// HTTP on ports the nodes pick, kept across restarts): the in-process nodes of
	// Virtual on real sockets, for tests that need real clients of their own (a CLI,
	// a mirror). Kill is then Stop without the controlled shutdown (the node's sockets
	// close as a killed process's do); Partition and Heal need Netns or Virtual.
	InProcess bool
	// Prepare, if set, runs for every node after its directories and addresses are
	// chosen and before it first starts (for example to mount a small filesystem on
	// its DataDir). An error fails the test.
	Prepare func(n *Node) error
}

// FastFailureDetection are properties that make a cluster notice a dead node within
// seconds: a 3 s broker session, 500 ms heartbeats, and followers leaving the ISR after
// 3 s behind. Tests append them to Options.Sets.
var FastFailureDetection = []string{
	"broker.session.timeout.ms=3000",
	"broker.heartbeat.interval.ms=500",
	"replica.lag.time.max.ms=3000",
}

// LogTailLines is how many lines of each node's output a failed test prints.
const LogTailLines = 200

// LogDirEnv names an environment variable: when set, a failed test also keeps the
// whole output of each node under that directory.
const LogDirEnv = "RUNNEL_CLUSTER_LOGDIR"

// Cluster is N runnel server processes on loopback ports, or in network namespaces
// (Options.Netns), or N in-process nodes (Options.Virtual, Options.InProcess). Methods that take no testing.TB fail the test that started the
// cluster.
type Cluster struct {
	t     testing.TB  // immutable: the test that started the cluster
	opts  Options     // immutable
	nodes []*Node     // nodes[i-1] has node id i; only AddNode appends, from the test goroutine
	net   *network    // immutable: nil unless Options.Netns
	virt  *virtualNet // immutable: nil unless Options.Virtual

	mu     sync.Mutex    // guards probes and cutOff
	probes []*kgo.Client // probes[i-1] talks to node i only (see probe)
	// cutOff holds the nodes that Partition left in touch with less than a majority.
	cutOff map[int32]bool
}

// Start runs o.Nodes nodes on free loopback ports, all of them voters, each with its
// own data directory under t.TempDir(), and waits until every node answers /readyz.
// When the test ends every node is killed; if the test failed, the tail of each node's
// output is printed, and a node that had exited without being told to fails the test.
func Start(t testing.TB, o Options) *Cluster {
	t.Helper()
	if o.Nodes <= 0 {
		o.Nodes = 3
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 60 * time.Second
	}
	c := &Cluster{t: t, opts: o}
	if o.Virtual || o.InProcess {
		c.startVirtual(t)
		return c
	}
	if o.Netns {
		// Registered before shutdown, so removed after the nodes are killed.
		c.net = newNetwork(t, o.Nodes)
	}
	bin := binary(t, o)
	// The temporary directory before the shutdown hook: cleanups run last-in first-out,
	// and shutdown prints the nodes' logs from it.
	root := t.TempDir()
	t.Cleanup(c.shutdown)
	for attempt := 1; ; attempt++ {
		dir := root
		if attempt > 1 {
			dir = filepath.Join(root, fmt.Sprintf("attempt-%d", attempt))
		}
		c.nodes = makeNodes(t, dir, bin, o, c.net)
		c.probes = make([]*kgo.Client, o.Nodes)
		if o.Prepare != nil {
			for _, n := range c.nodes {
				if err := o.Prepare(n); err != nil {
					t.Fatalf("preparing node %d: %v", n.ID, err)
				}
			}
		}
		if attempt == 1 {
			c.watchDeadline(t)
		}
		err := c.launchAll(time.Now().Add(o.StartTimeout))
		if err == nil {
			return c
		}
		// Free ports are picked before the nodes bind them, and another test process
		// may take one in between. The voters' addresses are in every node's
		// arguments, so the whole cluster starts again on new ports.
		if attempt < 3 && !o.Netns && c.portTaken() {
			t.Logf("cluster: a port was taken before a node could bind it (%v); starting again on other ports", err)
			for _, n := range c.nodes {
				n.kill()
			}
			continue
		}
		t.Fatal(err)
	}
}

// startVirtual is Start with Options.Virtual (nodes in this process on a new
// in-memory network) or Options.InProcess (on the host's loopback).
func (c *Cluster) startVirtual(t testing.TB) {
	t.Helper()
	root := t.TempDir()
	t.Cleanup(c.shutdown)
	var nodes []*Node
	var err error
	if c.opts.Virtual {
		c.virt = &virtualNet{mem: nodenet.NewMem()}
		nodes, err = newVirtualNodes(root, c.opts, c.virt.mem)
	} else {
		nodes, err = newInProcessNodes(t, root, c.opts)
	}
	if err != nil {
		t.Fatal(err)
	}
	c.nodes, c.probes = nodes, make([]*kgo.Client, len(nodes))
	if c.opts.Prepare != nil {
		for _, n := range c.nodes {
			if err := c.opts.Prepare(n); err != nil {
				t.Fatalf("preparing node %d: %v", n.ID, err)
			}
		}
	}
	if err := c.launchVirtual(); err != nil {
		t.Fatal(err)
	}
}

// launchAll starts every node and waits until each is ready or the deadline passes.
func (c *Cluster) launchAll(deadline time.Time) error {
	for _, n := range c.nodes {
		if err := n.launch(); err != nil {
			return err
		}
	}
	for _, n := range c.nodes {
		if err := n.waitReady(deadline); err != nil {
			return err
		}
	}
	return nil
}

// portTaken reports whether a node failed to bind one of its listeners.
func (c *Cluster) portTaken() bool {
	for _, n := range c.nodes {
		if strings.Contains(n.Logs(), "address already in use") {
			return true
		}
	}
	return false
}

// makeNodes chooses the addresses and directories of every node and builds their
// arguments: free loopback ports, or fixed ports in the node's namespace of w.
func makeNodes(t testing.TB, root, bin string, o Options, w *network) []*Node {
	nodes := make([]*Node, o.Nodes)
	var voters []string
	for i := range nodes {
		id := int32(i + 1)
		dir := filepath.Join(root, fmt.Sprintf("node-%d", id))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		nodes[i] = &Node{ID: id, DataDir: filepath.Join(dir, "data"), LogPath: filepath.Join(dir, "server.log"), bin: bin}
		if w != nil {
			nodes[i].KafkaAddr, nodes[i].ControllerAddr, nodes[i].HTTPAddr =
				w.hostPort(id, NetnsKafkaPort), w.hostPort(id, NetnsControllerPort), w.hostPort(id, NetnsHTTPPort)
			nodes[i].ipPath, nodes[i].Netns = w.ip, w.namespace(id)
		} else {
			nodes[i].KafkaAddr, nodes[i].ControllerAddr, nodes[i].HTTPAddr = freeAddr(t), freeAddr(t), freeAddr(t)
		}
		voters = append(voters, fmt.Sprintf("%d@%s", id, nodes[i].ControllerAddr))
	}
	for _, n := range nodes {
		n.args = []string{"server", "--node-id", fmt.Sprint(n.ID), "--data-dir", n.DataDir,
			"--listen", n.KafkaAddr, "--controller-listen", n.ControllerAddr, "--http-listen", n.HTTPAddr,
			"--controllers", strings.Join(voters, ",")}
		for _, s := range o.Sets {
			n.args = append(n.args, "--set", s)
		}
		if o.NodeSets != nil {
			for _, s := range o.NodeSets(n.ID) {
				n.args = append(n.args, "--set", s)
			}
		}
	}
	return nodes
}

// freeAddr returns 127.0.0.1:PORT for a port that was free a moment ago. The nodes
// must know each other's controller addresses before they start, so port 0 will not do.
func freeAddr(t testing.TB) string { return testutil.FreeAddr(t) }

// watchDeadline kills every node (and removes their network) shortly before the test
// binary's -timeout, which panics without running any cleanup.
func (c *Cluster) watchDeadline(t testing.TB) {
	if c.opts.Virtual || c.opts.InProcess {
		return // in-process nodes die with the test binary
	}
	d, ok := t.(interface{ Deadline() (time.Time, bool) })
	if !ok {
		return
	}
	deadline, ok := d.Deadline()
	if !ok {
		return
	}
	timer := time.AfterFunc(time.Until(deadline)-2*time.Second, func() {
		for _, n := range c.nodes {
			n.kill()
		}
		if c.net != nil {
			c.net.remove()
		}
	})
	t.Cleanup(func() { timer.Stop() })
}

// shutdown kills every node and closes the probes; on failure it prints the logs.
func (c *Cluster) shutdown() {
	for _, n := range c.nodes {
		if msg := n.unexpectedExit(); msg != "" {
			c.t.Errorf("%s", msg)
		}
	}
	if c.opts.Virtual || c.opts.InProcess {
		c.shutdownVirtual()
	}
	// What each node logged before the teardown: its kill's own lines (an in-process
	// abort's expected write errors, hundreds of them) would fill a failed test's tail.
	before := make([]int, len(c.nodes))
	if c.t.Failed() {
		for i, n := range c.nodes {
			before[i] = len(n.Logs())
		}
	}
	for _, n := range c.nodes {
		n.kill()
	}
	c.mu.Lock()
	for _, p := range c.probes {
		if p != nil {
			p.Close()
		}
	}
	c.mu.Unlock()
	for _, n := range c.nodes {
		if i := strings.Index(n.Logs(), invariantViolated); i >= 0 {
			line, _, _ := strings.Cut(n.Logs()[i:], "\n")
			c.t.Errorf("node %d broke an invariant: %s", n.ID, line)
		}
	}
	if c.t.Failed() {
		for i, n := range c.nodes {
			kept := n.keepLog(c.t.Name())
			logs, upTo := n.Logs(), ""
			if before[i] > 0 && before[i] <= len(logs) {
				logs, upTo = logs[:before[i]], " before the test's teardown"
			}
			c.t.Logf("---- last %d lines of node %d%s (whole output: %q):\n%s", LogTailLines, n.ID, upTo, kept, tail(logs, LogTailLines))
		}
	}
}

// invariantViolated starts the panic of a failed check of internal/invariants.
const invariantViolated = "invariant violated: "

// Bootstrap returns the Kafka addresses of every node, comma-separated.
func (c *Cluster) Bootstrap() string { return strings.Join(c.addrs(), ",") }

func (c *Cluster) addrs() []string {
	var out []string
	for _, n := range c.nodes {
		out = append(out, n.KafkaAddr)
	}
	return out
}

// AddNode starts one more node, with the next id, that joins the running cluster as a
// broker: --controllers names the original voters only, so it joins the metadata
// quorum as a non-voter (as a Kafka broker joins a KRaft cluster), and waits until it
// is ready. With Options.Netns the network grows by one namespace, and the node
// listens there on the fixed ports; no cut made before by Partition or Isolate
// concerns it. It grows the node list: call it from the test's goroutine while no
// other goroutine uses the cluster's methods. Not with Options.Virtual or InProcess.
func (c *Cluster) AddNode(t testing.TB) *Node {
	t.Helper()
	if c.nodes[0].virt != nil {
		t.Fatal("cluster: AddNode does not support Options.Virtual or InProcess")
	}
	first := c.nodes[0]
	id := int32(len(c.nodes) + 1)
	root := filepath.Dir(filepath.Dir(first.DataDir))
	dir := filepath.Join(root, fmt.Sprintf("node-%d", id))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	n := &Node{ID: id, DataDir: filepath.Join(dir, "data"), LogPath: filepath.Join(dir, "server.log"), bin: first.bin}
	if c.net != nil {
		got, err := c.net.addNode()
		if err != nil {
			t.Fatalf("cluster: a namespace for node %d: %v", id, err)
		}
		if got != id {
			// The namespaces are made with the nodes, one each, in id order.
			t.Fatalf("cluster: the network made namespace %d for node %d", got, id)
		}
		n.KafkaAddr, n.ControllerAddr, n.HTTPAddr =
			c.net.hostPort(id, NetnsKafkaPort), c.net.hostPort(id, NetnsControllerPort), c.net.hostPort(id, NetnsHTTPPort)
		n.ipPath, n.Netns = c.net.ip, c.net.namespace(id)
	} else {
		n.KafkaAddr, n.ControllerAddr, n.HTTPAddr = freeAddr(t), freeAddr(t), freeAddr(t)
	}
	n.args = []string{"server", "--node-id", fmt.Sprint(id), "--data-dir", n.DataDir,
		"--listen", n.KafkaAddr, "--controller-listen", n.ControllerAddr, "--http-listen", n.HTTPAddr}
	for i := 0; i+1 < len(first.args); i++ {
		if a := first.args[i]; a == "--controllers" {
			n.args = append(n.args, a, first.args[i+1])
		}
	}
	for _, s := range c.opts.Sets {
		n.args = append(n.args, "--set", s)
	}
	if c.opts.NodeSets != nil {
		for _, s := range c.opts.NodeSets(id) {
			n.args = append(n.args, "--set", s)
		}
	}
	if c.opts.Prepare != nil {
		if err := c.opts.Prepare(n); err != nil {
			t.Fatalf("preparing node %d: %v", id, err)
		}
	}
	if err := n.launch(); err != nil {
		t.Fatalf("starting node %d: %v", id, err)
	}
	// In the node list (and so killed by shutdown and printed on failure) before the
	// wait, which may fail the test.
	c.nodes = append(c.nodes, n)
	c.mu.Lock()
	c.probes = append(c.probes, nil)
	c.mu.Unlock()
	if err := n.waitReady(time.Now().Add(c.opts.StartTimeout)); err != nil {
		t.Fatalf("node %d joining: %v", id, err)
	}
	return n
}

// Size is the number of nodes, those AddNode added included (also once stopped).
func (c *Cluster) Size() int { return len(c.nodes) }

// Node returns the node with id i (1-based).
func (c *Cluster) Node(i int) *Node {
	if i < 1 || i > len(c.nodes) {
		c.t.Fatalf("no node %d in a cluster of %d", i, len(c.nodes))
	}
	return c.nodes[i-1]
}

// Kill sends SIGKILL to node i, as a crash, and waits until the process is gone.
func (c *Cluster) Kill(i int) { c.Node(i).kill() }

// Stop sends SIGTERM to node i (a controlled shutdown) and waits for the exit. It
// returns the exit status as an error (nil for exit 0), or ErrStopTimeout.
func (c *Cluster) Stop(i int) error { return c.Node(i).stop() }

// Pause stops node i with SIGSTOP: it keeps its sockets but answers nothing, like a
// node in a long GC pause.
func (c *Cluster) Pause(i int) {
	if _, err := c.Node(i).signal(syscall.SIGSTOP, false); err != nil {
		c.t.Fatal(err)
	}
}

// Resume continues a paused node i with SIGCONT.
func (c *Cluster) Resume(i int) {
	if _, err := c.Node(i).signal(syscall.SIGCONT, false); err != nil {
		c.t.Fatal(err)
	}
}

// Restart starts node i again with the same arguments and data directory and waits
// until it is ready. The node must have been killed or stopped.
func (c *Cluster) Restart(i int) {
	n := c.Node(i)
	if err := n.launch(); err != nil {
		c.t.Fatal(err)
	}
	if err := n.waitReady(time.Now().Add(c.opts.StartTimeout)); err != nil {
		c.t.Fatal(err)
	}
}

// WaitExit waits up to timeout for node i's process to exit on its own, and returns
// whether it did and its exit error (nil: status 0). The exit counts as expected: it
// does not fail the test.
func (c *Cluster) WaitExit(i int, timeout time.Duration) (exited bool, exitErr error) {
	n := c.Node(i)
	if n.virt != nil {
		c.t.Fatal("cluster: WaitExit needs process nodes, not Options.Virtual")
	}
	p := n.current()
	if p == nil {
		return false, nil
	}
	select {
	case <-p.exited:
	case <-time.After(timeout):
		return false, nil
	}
	n.mu.Lock()
	p.intended = true
	n.mu.Unlock()
	return true, p.err
}

// Logs returns the output of every run of node i.
func (c *Cluster) Logs(i int) string { return c.Node(i).Logs() }

// ClientDefaults are the options Client puts before the caller's: every node as a
// seed, and metadata refreshed as often as every 100 ms, so that a client finds a new
// leader as soon as the cluster has one (franz-go's default minimum age is 5 s).
func (c *Cluster) ClientDefaults() []kgo.Opt {
	// kgo.Dialer(nil) (process mode) keeps kgo's own dialer.
	return []kgo.Opt{kgo.SeedBrokers(c.addrs()...), kgo.MetadataMinAge(100 * time.Millisecond), kgo.Dialer(c.Dial())}
}

// Client returns a franz-go client of the cluster with ClientDefaults then opts; it is
// closed when t ends.
func (c *Cluster) Client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append(c.ClientDefaults(), opts...)...)
	if err != nil {
		t.Fatalf("kgo.NewClient: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// Admin returns an admin client of the cluster, closed when t ends.
func (c *Cluster) Admin(t testing.TB) *kadm.Client {
	t.Helper()
	return kadm.NewClient(c.Client(t))
}
