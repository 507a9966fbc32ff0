package clustertest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/config"
	"github.com/runnel-io/runnel/internal/nodenet"
	"github.com/runnel-io/runnel/internal/server"
)

// Virtual mode (Options.Virtual) runs every node in the test process (server.Start,
// the code the binary runs) on one nodenet.Mem network. Node i is host 10.0.0.i, with
// its Kafka, Raft and HTTP listeners on VirtualKafkaPort, VirtualControllerPort and
// VirtualHTTPPort; the test's clients (Client, ClientOn, the waits' probes) dial from
// VirtualClientHost. Inside a testing/synctest bubble the whole cluster then runs on
// the bubble's fake clock: time moves only when every goroutine is blocked, so a
// session timeout or replica.lag.time.max.ms passes in microseconds of wall time, and
// a run is the same every time.
//
// The faults are those of process mode with netns, made on the network:
//
//   - Kill(i) crashes the node's host (its listeners close, so dials are refused; its
//     connections are reset) and then stops the node without a controlled shutdown
//     (server.Node.Abort).
//
//   - Stop(i) is a controlled shutdown (server.Node.Close).
//
//   - Restart(i) starts the node again on the same data directory and addresses.
//
//   - Partition, Isolate and Heal cut links between node hosts; clients still reach
//     every node.
//
//   - Pause(i) and Resume(i) block every link of the node's host both ways, without
//     resetting or closing anything (nodenet.Mem.Pause): the node keeps its sockets and
//     answers nothing, others' dials to it connect but carry nothing, its own dials
//     wait, and on Resume what waited flows in order. That is what SIGSTOP looks like
//     from the network, and it is all a test in one process can stop: the node's own
//     goroutines go on, so unlike a stopped process a paused node's timers still fire
//     while it is paused (a Raft leader steps down, a partition leader that has heard
//     no follower for replica.lag.time.max.ms tries to shrink its ISR, a lease runs
//     out) and it can still write its disk. What it decides meanwhile reaches nobody
//     until Resume, so the rest of the cluster sees the same thing: a node gone
//     silent, and back with a stale view; the paused node, however, has already
//     noticed its isolation on Resume, where a stopped process notices it later.
//     Options.InProcess nodes, on the host's sockets, cannot be paused.
//
// AddNode and WaitExit need process nodes. Check and ReadReplica copy the partition
// directories of running nodes without pausing them (a paused virtual node can still
// write): stop the load first, as Check says.
const (
	VirtualKafkaPort      = 9092
	VirtualControllerPort = 9093
	VirtualHTTPPort       = 9644
	// VirtualClientHost is the address the test's clients dial from.
	VirtualClientHost = "10.0.1.1"
)

// virtualDialTimeout bounds a dial of a test client (kgo applies its DialTimeout to
// its own dialer only); kgo's default.
const virtualDialTimeout = 10 * time.Second

// VirtualHost is the address of node id on a virtual cluster's network.
func VirtualHost(id int32) string { return fmt.Sprintf("10.0.0.%d", id) }

// virtualNet is a virtual cluster's network.
type virtualNet struct {
	mem *nodenet.Mem // immutable
}

func (v *virtualNet) cut(a, b int32) error {
	v.mem.Cut(VirtualHost(a), VirtualHost(b))
	return nil
}

func (v *virtualNet) heal() error {
	v.mem.HealAll()
	return nil
}

func (v *virtualNet) reachable(a, b int32) bool {
	return a == b || !v.mem.IsCut(VirtualHost(a), VirtualHost(b))
}

// dial is the test clients' dialer (kgo.Dialer).
func (v *virtualNet) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	return nodenet.Dialer(v.mem.Host(VirtualClientHost), virtualDialTimeout)(ctx, network, addr)
}

// Network returns the virtual cluster's network, nil in process mode. A test may make
// its own faults with it (Cut a node from VirtualClientHost, say), or give a client
// its own host (Network().Host(ip).DialContext as kgo.Dialer).
func (c *Cluster) Network() *nodenet.Mem {
	if c.virt == nil {
		return nil
	}
	return c.virt.mem
}

// Dial is the dialer of the test's clients: nil (the host's network) in process mode,
// VirtualClientHost's on a virtual cluster. For clients built without Client.
func (c *Cluster) Dial() func(ctx context.Context, network, addr string) (net.Conn, error) {
	if c.virt == nil {
		return nil
	}
	return c.virt.dial
}

// virtualNode is the in-process run of a Node (Options.Virtual or InProcess).
type virtualNode struct {
	// props are every run's properties (KEY=VALUE, Options.Sets last). On the host's
	// network the first run binds port 0 and launch pins the ports it got here, so a
	// restarted node keeps its addresses. Only launch touches it.
	props   []string
	host    string        // immutable: the node's address on mem
	mem     *nodenet.Mem  // immutable: the virtual network; nil on the host's (InProcess)
	logPath string        // immutable: Node.LogPath
	timeout time.Duration // immutable: Options.StartTimeout

	mu sync.Mutex // guards the fields below
	// run is the latest run until the harness ends it (Kill, Stop, shutdown); nil
	// after. A run that stopped serving on its own (exited != "") stays here, down,
	// until then.
	run  *virtualRun
	runs int
	// paused is true between Pause and Resume (or the end of the run), while the
	// host is paused on mem.
	paused bool
	// exited says how the latest run ended on its own ("" if the harness ended it).
	exited string
}

// virtualRun is one run of a virtual node.
type virtualRun struct {
	node     *server.Node
	out      *os.File
	stop     chan struct{} // closed when the harness ends the run
	watching chan struct{} // closed when the watch goroutine returned
}

func newVirtualNodes(root string, o Options, mem *nodenet.Mem) ([]*Node, error) {
	nodes := make([]*Node, o.Nodes)
	var voters []string
	for i := range nodes {
		id := int32(i + 1)
		host := VirtualHost(id)
		voters = append(voters, fmt.Sprintf("%d@%s:%d", id, host, VirtualControllerPort))
		dir := filepath.Join(root, fmt.Sprintf("node-%d", id))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		nodes[i] = &Node{ID: id, DataDir: filepath.Join(dir, "data"), LogPath: filepath.Join(dir, "server.log"),
			KafkaAddr:      fmt.Sprintf("%s:%d", host, VirtualKafkaPort),
			ControllerAddr: fmt.Sprintf("%s:%d", host, VirtualControllerPort),
			HTTPAddr:       fmt.Sprintf("%s:%d", host, VirtualHTTPPort)}
	}
	for _, n := range nodes {
		n.virt = &virtualNode{props: nodeProps(n, voters, o), host: VirtualHost(n.ID), mem: mem, logPath: n.LogPath, timeout: o.StartTimeout}
	}
	return nodes, nil
}

// newInProcessNodes makes the nodes of Options.InProcess: on the host's loopback,
// Kafka and HTTP on port 0 (Node's addresses are set once the node has bound them),
// Raft on free ports, which the voters must know before any node starts.
func newInProcessNodes(t testing.TB, root string, o Options) ([]*Node, error) {
	nodes := make([]*Node, o.Nodes)
	var voters []string
	for i := range nodes {
		id := int32(i + 1)
		dir := filepath.Join(root, fmt.Sprintf("node-%d", id))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		nodes[i] = &Node{ID: id, DataDir: filepath.Join(dir, "data"), LogPath: filepath.Join(dir, "server.log"),
			KafkaAddr: "127.0.0.1:0", ControllerAddr: freeAddr(t), HTTPAddr: "127.0.0.1:0"}
		voters = append(voters, fmt.Sprintf("%d@%s", id, nodes[i].ControllerAddr))
	}
	for _, n := range nodes {
		n.virt = &virtualNode{props: nodeProps(n, voters, o), logPath: n.LogPath, timeout: o.StartTimeout}
	}
	return nodes, nil
}

// nodeProps are n's properties: its id, directory, addresses and the voters, then
// Options.Sets and Options.NodeSets.
func nodeProps(n *Node, voters []string, o Options) []string {
	props := []string{"node.id=" + fmt.Sprint(n.ID), "log.dirs=" + n.DataDir, "listen=" + n.KafkaAddr,
		"controller.listen=" + n.ControllerAddr, "http.listen=" + n.HTTPAddr, "controllers=" + strings.Join(voters, ",")}
	props = append(props, o.Sets...)
	if o.NodeSets != nil {
		props = append(props, o.NodeSets(n.ID)...)
	}
	return props
}

// config builds the configuration of a run from v.props.
func (v *virtualNode) config(id int32) (*config.Broker, error) {
	cfg := config.Default()
	for _, s := range v.props {
		k, val, _ := strings.Cut(s, "=")
		if err := cfg.Set(k, val); err != nil {
			return nil, fmt.Errorf("node %d: property %s: %w", id, s, err)
		}
	}
	return cfg, nil
}

// network is where the node listens and dials.
func (v *virtualNode) network() nodenet.Network {
	if v.mem == nil {
		return nil // the host's
	}
	return v.mem.Host(v.host)
}

// crash takes the host off the virtual network (nothing to do on the host's: the
// node's close closes its sockets).
func (v *virtualNode) crash() {
	if v.mem != nil {
		v.mem.Crash(v.host)
	}
}

// pin replaces the port-0 listen addresses of v.props with those n's run bound.
func (v *virtualNode) pin(n *Node, sn *server.Node) {
	if v.mem != nil {
		return
	}
	n.KafkaAddr, n.HTTPAddr = sn.KafkaAddr().String(), sn.HTTPAddr().String()
	for i, p := range v.props {
		switch {
		case strings.HasPrefix(p, "listen="):
			v.props[i] = "listen=" + n.KafkaAddr
		case strings.HasPrefix(p, "http.listen="):
			v.props[i] = "http.listen=" + n.HTTPAddr
		}
	}
}

// launch starts a run and returns once the node is ready (server.Start returns then).
func (v *virtualNode) launch(n *Node) error {
	id := n.ID
	v.mu.Lock()
	if v.run != nil && v.exited == "" {
		v.mu.Unlock()
		return fmt.Errorf("node %d still runs", id)
	}
	v.mu.Unlock()
	if r := v.end(); r != nil {
		v.abort(r) // the remains of a run that stopped serving on its own
	}
	v.mu.Lock()
	v.runs++
	runs := v.runs
	v.exited = ""
	v.mu.Unlock()

	out, err := os.OpenFile(v.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	mode := "virtual"
	if v.mem == nil {
		mode = "in-process"
	}
	fmt.Fprintf(out, "=== cluster: start %d of node %d (%s) at %s\n", runs, id, mode, time.Now().Format(time.RFC3339Nano))
	cfg, err := v.config(id)
	if err != nil {
		out.Close()
		return err
	}
	if v.mem != nil {
		v.mem.Up(v.host)
	}
	ctx, cancel := context.WithTimeout(context.Background(), v.timeout)
	defer cancel()
	logger := slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelInfo}))
	node, err := server.Start(ctx, cfg, server.Options{Logger: logger, StartTimeout: v.timeout, Network: v.network()})
	if err != nil {
		// As a process that failed to start: nothing of it stays on the network.
		v.crash()
		out.Close()
		return fmt.Errorf("starting node %d: %w (its output is printed at the end)", id, err)
	}
	v.pin(n, node)
	r := &virtualRun{node: node, out: out, stop: make(chan struct{}), watching: make(chan struct{})}
	v.mu.Lock()
	v.run = r
	v.mu.Unlock()
	go v.watch(id, r)
	return nil
}

// watch notices r's node stop serving on its own (its Kafka server exits), which
// would end the process: the host is crashed off the network, and the run counts as
// down (the test fails at the end, as for a process that exited). What is left of
// the node is aborted by the next end: Kill, Restart or the cluster's shutdown, so
// that only one goroutine ever aborts a node.
func (v *virtualNode) watch(id int32, r *virtualRun) {
	defer close(r.watching)
	select {
	case <-r.stop:
		return
	case err := <-r.node.Done():
		v.mu.Lock()
		select {
		case <-r.stop:
			v.mu.Unlock()
			return // the harness is ending it: Done fired as it closed
		default:
		}
		v.exited = fmt.Sprintf("node %d stopped serving on its own: %v", id, err)
		v.mu.Unlock()
		v.crash()
	}
}

// end takes the running run away from v (nil if none), telling its watch it is the
// harness's doing.
func (v *virtualNode) end() *virtualRun {
	v.mu.Lock()
	defer v.mu.Unlock()
	r := v.run
	if r == nil {
		return nil
	}
	v.run = nil
	close(r.stop)
	// The host stays paused on mem until crash or resume (Kill, Stop): the caller
	// does one next.
	v.paused = false
	return r
}

// pause pauses (on) or resumes the running node's host on the virtual network.
func (v *virtualNode) pause(id int32, on bool) error {
	if v.mem == nil {
		return fmt.Errorf("node %d: Pause and Resume need Options.Virtual or a process node: an in-process node on the host's sockets has no network of its own to stop", id)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.run == nil || v.exited != "" {
		return fmt.Errorf("node %d is not running", id)
	}
	v.paused = on
	if on {
		v.mem.Pause(v.host)
	} else {
		v.mem.Resume(v.host)
	}
	return nil
}

func (v *virtualNode) isPaused() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.paused
}

// kill is kill -9: the host drops off the network, then the node stops with no
// controlled shutdown.
func (v *virtualNode) kill() {
	r := v.end()
	if r == nil {
		return
	}
	v.crash()
	v.abort(r)
}

// abort stops r's node, which end took away and whose host has crashed, and waits
// for its watch.
func (v *virtualNode) abort(r *virtualRun) {
	r.node.Abort()
	<-r.watching
	r.out.Close()
}

// stop is SIGTERM: a controlled shutdown, then whatever is left of the host goes. A
// paused node is resumed first, as Stop sends SIGCONT after SIGTERM.
func (v *virtualNode) stop() error {
	r := v.end()
	if r == nil {
		return errors.New("not running")
	}
	if v.mem != nil {
		v.mem.Resume(v.host)
	}
	err := r.node.Close()
	v.crash()
	<-r.watching
	r.out.Close()
	return err
}

func (v *virtualNode) running() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.run != nil && v.exited == ""
}

func (v *virtualNode) unexpectedExit() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.exited
}

// launchVirtual starts every node at once (each waits for a quorum of the others)
// and returns the first error.
func (c *Cluster) launchVirtual() error {
	errs := make([]error, len(c.nodes))
	var wg sync.WaitGroup
	for i, n := range c.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = n.virt.launch(n)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// shutdownVirtual crashes every host off the network first, so that no node waits
// on another while they stop, then aborts each node. Each run is ended first: a
// crashed host's Kafka listener closes, and a watch that saw its node stop serving
// before being told would take it for an exit of its own.
func (c *Cluster) shutdownVirtual() {
	runs := make([]*virtualRun, len(c.nodes))
	for i, n := range c.nodes {
		runs[i] = n.virt.end()
	}
	for _, n := range c.nodes {
		n.virt.crash()
	}
	for i, n := range c.nodes {
		if runs[i] != nil {
			n.virt.abort(runs[i])
		}
	}
}

// Server returns in-process node i's running server.Node (Options.Virtual or
// InProcess), for tests that use it directly; nil while the node is down. It fails
// the test for a process node.
func (c *Cluster) Server(i int) *server.Node {
	n := c.Node(i)
	if n.virt == nil {
		c.t.Fatalf("cluster: Server needs an in-process node (Options.Virtual or InProcess), not process node %d", i)
	}
	n.virt.mu.Lock()
	defer n.virt.mu.Unlock()
	if n.virt.run == nil || n.virt.exited != "" {
		return nil
	}
	return n.virt.run.node
}
