package clustertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Ports every node listens on inside its own network namespace (Options.Netns). Each
// namespace has its own port space, so the ports can be fixed.
const (
	NetnsKafkaPort      = 9092
	NetnsControllerPort = 9093
	NetnsHTTPPort       = 9094
)

// network is the network of a cluster started with Options.Netns: a bridge in the test
// process's namespace, holding 10.213.X.254/24, and one namespace per node with a veth
// pair whose inner end (eth0) holds 10.213.X.N/24 and whose outer end is on the bridge.
// The test process reaches every node through the bridge; nodes reach each other
// through it too, unless a blackhole route in a namespace cuts them apart.
type network struct {
	ip     string // immutable: the path of iproute2's ip
	id     string // immutable: 4 hex digits naming the bridge, veths and namespaces
	subnet int    // immutable: X of 10.213.X.0/24

	mu sync.Mutex // guards nodes, cuts and removed
	// nodes is how many namespaces exist, 1..nodes; addNode grows it by one.
	nodes int32
	// cuts holds (a, b) when node a's namespace has a blackhole route to node b.
	cuts    map[[2]int32]bool
	removed bool
}

// errNetnsUnavailable marks a failure to create the first bridge or namespace: the
// machine (not root, no iproute2, no CAP_NET_ADMIN) cannot run such a cluster, and the
// test is skipped.
var errNetnsUnavailable = errors.New("network namespaces unavailable")

// newNetwork creates the bridge and one namespace per node. Whatever it creates is
// removed when t ends, also when it fails halfway. It skips t when namespaces cannot be
// created here.
func newNetwork(t testing.TB, nodes int) *network {
	t.Helper()
	if nodes > maxNetnsNodes {
		t.Fatalf("Options.Netns supports at most %d nodes, not %d", maxNetnsNodes, nodes)
	}
	path, err := exec.LookPath("ip")
	if err != nil {
		t.Skipf("Options.Netns: %v: iproute2's ip not found: %v", errNetnsUnavailable, err)
	}
	w := &network{ip: path, cuts: map[[2]int32]bool{}}
	t.Cleanup(w.remove)
	if err := w.createBridge(); err != nil {
		if errors.Is(err, errNetnsUnavailable) {
			t.Skipf("Options.Netns: %v", err)
		}
		t.Fatalf("Options.Netns: %v", err)
	}
	for i := 1; i <= nodes; i++ {
		if _, err := w.addNode(); err != nil {
			if i == 1 {
				t.Skipf("Options.Netns: %v: %v", errNetnsUnavailable, err)
			}
			t.Fatalf("Options.Netns: %v", err)
		}
	}
	return w
}

// maxNetnsNodes is how many nodes a network holds: addresses 1..253 of the /24 (254
// is the bridge's).
const maxNetnsNodes = 253

// addNode creates the namespace of one more node, with the next id, and returns the
// id. The namespace counts as created (remove deletes it) from its first step on, so
// that a failure halfway leaves nothing behind.
func (w *network) addNode() (int32, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.removed {
		return 0, errors.New("cluster: the network was removed")
	}
	if w.nodes >= maxNetnsNodes {
		return 0, fmt.Errorf("Options.Netns supports at most %d nodes", maxNetnsNodes)
	}
	w.nodes++
	id := w.nodes
	if err := w.createNode(id); err != nil {
		return 0, err
	}
	return id, nil
}

// createBridge picks an unused id and subnet and creates the bridge; a clash with
// another test process's bridge picks again.
func (w *network) createBridge() error {
	var err error
	for range 20 {
		w.id, w.subnet = randomID(), randomSubnet()
		if subnetInUse(w.subnet) {
			continue
		}
		if err = w.run("link", "add", w.bridge(), "type", "bridge"); err == nil {
			break
		}
		if !strings.Contains(err.Error(), "File exists") {
			return fmt.Errorf("%w: %v", errNetnsUnavailable, err)
		}
	}
	if err != nil {
		return err
	}
	if err := w.run("addr", "add", w.cidr(254), "dev", w.bridge()); err != nil {
		return err
	}
	return w.run("link", "set", w.bridge(), "up")
}

// createNode creates node i's namespace and joins it to the bridge. w.mu is held.
func (w *network) createNode(i int32) error {
	ns, outer := w.namespace(i), w.veth(i)
	steps := [][]string{
		{"netns", "add", ns},
		{"link", "add", outer, "type", "veth", "peer", "name", "eth0", "netns", ns},
		{"-n", ns, "addr", "add", w.cidr(i), "dev", "eth0"},
		{"-n", ns, "link", "set", "eth0", "up"},
		{"-n", ns, "link", "set", "lo", "up"},
		{"link", "set", outer, "master", w.bridge(), "up"},
	}
	for _, s := range steps {
		if err := w.run(s...); err != nil {
			return err
		}
	}
	return nil
}

// remove deletes the namespaces (their veths go with them) and the bridge. It is safe
// to call more than once and after a partial setup; the nodes should be dead by then,
// since a process keeps its namespace alive.
func (w *network) remove() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.removed || w.id == "" {
		return
	}
	w.removed = true
	for i := int32(1); i <= w.nodes; i++ {
		w.run("netns", "del", w.namespace(i))
	}
	w.run("link", "del", w.bridge())
}

// run runs ip with args and returns its output as the error when it fails.
func (w *network) run(args ...string) error {
	out, err := exec.Command(w.ip, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func (w *network) bridge() string { return "rnlbr" + w.id }

// namespace is the name of node i's network namespace.
func (w *network) namespace(i int32) string { return fmt.Sprintf("rnl%s-%d", w.id, i) }

// veth is the outer end, on the bridge, of node i's veth pair.
func (w *network) veth(i int32) string { return fmt.Sprintf("rnl%sh%d", w.id, i) }

// addr is the IP address of node i (254: the bridge).
func (w *network) addr(i int32) string { return fmt.Sprintf("10.213.%d.%d", w.subnet, i) }

func (w *network) cidr(i int32) string { return w.addr(i) + "/24" }

// hostPort is node i's address with port.
func (w *network) hostPort(i int32, port int) string {
	return net.JoinHostPort(w.addr(i), fmt.Sprint(port))
}

// cut adds, in node a's namespace, a blackhole route to node b: a's packets to b are
// dropped. Existing connections stall as on a real partition (a route change
// invalidates the routes sockets cached), new ones fail at once.
func (w *network) cut(a, b int32) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cuts[[2]int32{a, b}] {
		return nil
	}
	if err := w.run("-n", w.namespace(a), "route", "add", "blackhole", w.addr(b)+"/32"); err != nil {
		return err
	}
	w.cuts[[2]int32{a, b}] = true
	return nil
}

// heal removes every blackhole route.
func (w *network) heal() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var errs []error
	for k := range w.cuts {
		if err := w.run("-n", w.namespace(k[0]), "route", "del", "blackhole", w.addr(k[1])+"/32"); err != nil {
			errs = append(errs, err)
			continue
		}
		delete(w.cuts, k)
	}
	return errors.Join(errs...)
}

// reachable reports whether a and b can exchange packets.
func (w *network) reachable(a, b int32) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.cuts[[2]int32{a, b}] && !w.cuts[[2]int32{b, a}]
}

func randomID() string {
	var b [2]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// randomSubnet returns X in 1..250 for 10.213.X.0/24.
func randomSubnet() int {
	n, _ := rand.Int(rand.Reader, big.NewInt(250))
	return int(n.Int64()) + 1
}

// subnetInUse reports whether an interface of this namespace has an address in
// 10.213.x.0/24 already (another test process's bridge).
func subnetInUse(x int) bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	_, subnet, _ := net.ParseCIDR(fmt.Sprintf("10.213.%d.0/24", x))
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && subnet.Contains(ipn.IP) {
			return true
		}
	}
	return false
}

// ErrUnreachable is what the dialer of a ClientOn client returns for a node it was not
// given.
var ErrUnreachable = errors.New("cluster: this client may not reach the node")

// Partition cuts the network between the nodes of side and every other node, in both
// directions, as a broken switch would; the test process still reaches every node.
// Connections across the cut stall, new ones fail. Cuts add up until Heal. It needs
// Options.Netns.
//
// A node that the cuts leave in touch with fewer than a majority of the metadata
// voters (the nodes Start started; itself included if it is one) is cut off: it
// runs, but its view of the cluster is stale by design, so the waits (WaitLeader,
// WaitController, ...) and LiveIDs ignore it, as they ignore a paused node.
func (c *Cluster) Partition(side ...int) {
	c.t.Helper()
	f := c.faults()
	if f == nil {
		c.t.Fatal("cluster: Partition needs Options.Netns or Options.Virtual")
	}
	in := map[int32]bool{}
	for _, i := range side {
		in[c.Node(i).ID] = true
	}
	for _, a := range c.nodes {
		for _, b := range c.nodes {
			if in[a.ID] == in[b.ID] {
				continue
			}
			if err := f.cut(a.ID, b.ID); err != nil {
				c.t.Fatal(err)
			}
		}
	}
	c.updateCutOff()
}

// Isolate cuts node i off from every other node; clients still reach it.
func (c *Cluster) Isolate(i int) { c.Partition(i) }

// Heal removes every cut made by Partition and Isolate.
func (c *Cluster) Heal() {
	c.t.Helper()
	f := c.faults()
	if f == nil {
		c.t.Fatal("cluster: Heal needs Options.Netns or Options.Virtual")
	}
	if err := f.heal(); err != nil {
		c.t.Fatal(err)
	}
	c.updateCutOff()
}

// faultNet cuts links between nodes: network namespaces (Options.Netns) or the
// in-memory network (Options.Virtual).
type faultNet interface {
	cut(a, b int32) error
	heal() error
	reachable(a, b int32) bool
}

// faults returns the cluster's faultNet, nil if it has none.
func (c *Cluster) faults() faultNet {
	switch {
	case c.net != nil:
		return c.net
	case c.virt != nil:
		return c.virt
	}
	return nil
}

// updateCutOff recomputes which nodes are in touch with fewer than a majority of the
// metadata voters, itself included if it is one: such a node cannot learn the current
// metadata. The voters are the nodes Start started (AddNode's join as brokers), so
// that a broker that joined does not change what a majority is.
func (c *Cluster) updateCutOff() {
	voters := c.nodes[:min(c.opts.Nodes, len(c.nodes))]
	cut := map[int32]bool{}
	for _, a := range c.nodes {
		touch := 0
		for _, b := range voters {
			if c.faults().reachable(a.ID, b.ID) {
				touch++
			}
		}
		if 2*touch <= len(voters) {
			cut[a.ID] = true
		}
	}
	c.mu.Lock()
	c.cutOff = cut
	c.mu.Unlock()
}

// CutOff reports whether node i is cut off from the majority by Partition or Isolate.
func (c *Cluster) CutOff(i int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cutOff[int32(i)]
}

// live reports whether n runs, is not paused and is not cut off: its answers are
// current.
func (c *Cluster) live(n *Node) bool { return n.Alive() && !c.CutOff(int(n.ID)) }

// ClientOn returns a franz-go client that reaches only the given nodes, whatever the
// metadata says of the others (its dialer refuses them with ErrUnreachable): a client
// on one side of a partition. It has the nodes as seeds, ClientDefaults' metadata age,
// then opts; it is closed when t ends.
func (c *Cluster) ClientOn(t testing.TB, nodes []int32, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	allowed := map[string]bool{}
	var seeds []string
	for _, id := range nodes {
		addr := c.Node(int(id)).KafkaAddr
		allowed[addr] = true
		seeds = append(seeds, addr)
	}
	var d net.Dialer
	base := d.DialContext
	if c.virt != nil {
		base = c.virt.dial
	}
	dial := func(ctx context.Context, network, host string) (net.Conn, error) {
		if !allowed[host] {
			return nil, fmt.Errorf("%w: %s", ErrUnreachable, host)
		}
		return base(ctx, network, host)
	}
	all := append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.MetadataMinAge(100 * time.Millisecond), kgo.Dialer(dial)}, opts...)
	cl, err := kgo.NewClient(all...)
	if err != nil {
		t.Fatalf("kgo.NewClient: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}
