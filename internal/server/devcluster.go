package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

// NewDevClusterCommand returns `runnel dev-cluster`: N nodes of this binary as child
// processes on loopback, all voters of one metadata quorum, for development and tests.
// A node that exits (kill -9) is reported and the others keep running; --restart
// starts it again after --restart-delay. Ctrl-C or SIGTERM stops them all cleanly.
func NewDevClusterCommand() *cobra.Command {
	var o devClusterOptions
	cmd := &cobra.Command{
		Use:   "dev-cluster",
		Short: "Run a local multi-node cluster (child processes on loopback) and print its addresses",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.nodes < 1 || o.nodes > 9 {
				return fmt.Errorf("--nodes must be between 1 and 9, got %d", o.nodes)
			}
			if o.restartDelay < 0 {
				return fmt.Errorf("--restart-delay must not be negative, got %v", o.restartDelay)
			}
			cmd.SilenceUsage = true
			return runDevCluster(cmd.OutOrStdout(), o)
		},
	}
	cmd.Flags().IntVar(&o.nodes, "nodes", 3, "number of nodes (all are controllers and brokers)")
	cmd.Flags().IntVar(&o.basePort, "base-port", 9092, "node N listens on base+10(N-1) (Kafka), +1 (Raft), +2 (HTTP)")
	cmd.Flags().StringVar(&o.dataDir, "data-dir", "./runnel-dev", "parent of each node's data directory (node-N)")
	cmd.Flags().StringArrayVar(&o.sets, "set", nil, "KEY=VALUE property for every node, repeatable")
	cmd.Flags().BoolVar(&o.restart, "restart", false, "start a node that exited again, after --restart-delay")
	cmd.Flags().DurationVar(&o.restartDelay, "restart-delay", 3*time.Second, "how long --restart waits before starting a node again")
	return cmd
}

type devClusterOptions struct {
	nodes, basePort int
	dataDir         string
	sets            []string
	restart         bool
	restartDelay    time.Duration
}

type devNode struct {
	id                     int
	kafka, raft, http, dir string
	args                   []string // the `runnel server` arguments, the same for every run
	cmd                    *exec.Cmd
	running                bool // between a start and the report of its exit
}

func devNodes(n, basePort int, dataDir string) []*devNode {
	out := make([]*devNode, n)
	for i := range n {
		p := basePort + 10*i
		out[i] = &devNode{id: i + 1, dir: filepath.Join(dataDir, fmt.Sprintf("node-%d", i+1)),
			kafka: net.JoinHostPort("127.0.0.1", strconv.Itoa(p)),
			raft:  net.JoinHostPort("127.0.0.1", strconv.Itoa(p+1)),
			http:  net.JoinHostPort("127.0.0.1", strconv.Itoa(p+2))}
	}
	return out
}

// devCluster supervises the nodes: it starts them, reports exits, restarts on request
// and stops them all at the end.
type devCluster struct {
	self   string
	out    *lockedWriter
	nodes  []*devNode
	exited chan devExit
	wg     sync.WaitGroup // the output copiers and waiters of every run
}

// devExit is one run of a node ending.
type devExit struct {
	node *devNode
	err  error // nil: exit status 0
}

func runDevCluster(w io.Writer, o devClusterOptions) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	c := &devCluster{self: self, out: &lockedWriter{w: w}, nodes: devNodes(o.nodes, o.basePort, o.dataDir),
		exited: make(chan devExit, o.nodes)}
	var voters []string
	for _, d := range c.nodes {
		voters = append(voters, fmt.Sprintf("%d@%s", d.id, d.raft))
	}
	for _, d := range c.nodes {
		d.args = []string{"server", "--node-id", strconv.Itoa(d.id), "--data-dir", d.dir, "--listen", d.kafka,
			"--controller-listen", d.raft, "--http-listen", d.http, "--controllers", strings.Join(voters, ",")}
		for _, s := range o.sets {
			d.args = append(d.args, "--set", s)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	defer c.stopAll()
	for _, d := range c.nodes {
		if err := c.start(d); err != nil {
			return err
		}
	}
	if err := c.waitReady(ctx); err != nil {
		return err
	}
	c.printReady()
	return c.supervise(ctx, o)
}

// start runs d once, its output prefixed by its node id.
func (c *devCluster) start(d *devNode) error {
	pr, pw := io.Pipe()
	d.cmd = exec.Command(c.self, d.args...)
	d.cmd.Stdout, d.cmd.Stderr = pw, pw
	if err := d.cmd.Start(); err != nil {
		return fmt.Errorf("start node %d: %w", d.id, err)
	}
	d.running = true
	cmd := d.cmd
	c.wg.Add(2)
	go func() {
		defer c.wg.Done()
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			c.out.printf("[node %d] %s\n", d.id, sc.Text())
		}
		io.Copy(io.Discard, pr) // a line too long for the scanner must not block the node
	}()
	go func() {
		defer c.wg.Done()
		err := cmd.Wait()
		pw.Close()
		c.exited <- devExit{node: d, err: err}
	}()
	return nil
}

// supervise reports every exit until a signal stops the cluster. A node that exited is
// started again after o.restartDelay with --restart; without it, the exact command
// that restarts it is printed.
func (c *devCluster) supervise(ctx context.Context, o devClusterOptions) error {
	restarts := make(chan *devNode, len(c.nodes))
	for {
		select {
		case <-ctx.Done():
			return nil
		case ex := <-c.exited:
			ex.node.running = false
			c.out.printf("[dev-cluster] node %d (pid %d) exited: %s; %s\n", ex.node.id, ex.node.cmd.Process.Pid,
				exitReason(ex.err), c.othersRunning(ex.node))
			if o.restart {
				c.out.printf("[dev-cluster] restarting node %d in %v\n", ex.node.id, o.restartDelay)
				d := ex.node
				time.AfterFunc(o.restartDelay, func() { restarts <- d })
				continue
			}
			c.out.printf("[dev-cluster] restart node %d with: %s\n", ex.node.id, shellCommand(c.self, ex.node.args))
			if !c.anyRunning() {
				return fmt.Errorf("every node of the dev cluster exited")
			}
		case d := <-restarts:
			if ctx.Err() != nil {
				return nil
			}
			if err := c.start(d); err != nil {
				c.out.printf("[dev-cluster] %v\n", err)
				continue
			}
			c.out.printf("[dev-cluster] node %d restarted (pid %d)\n", d.id, d.cmd.Process.Pid)
		}
	}
}

func exitReason(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// othersRunning describes the nodes still running besides d.
func (c *devCluster) othersRunning(d *devNode) string {
	var ids []string
	for _, o := range c.nodes {
		if o != d && o.running {
			ids = append(ids, strconv.Itoa(o.id))
		}
	}
	switch len(ids) {
	case 0:
		return "no other node is running"
	case 1:
		return "node " + ids[0] + " keeps running"
	}
	return "nodes " + strings.Join(ids, ", ") + " keep running"
}

func (c *devCluster) anyRunning() bool {
	for _, d := range c.nodes {
		if d.running {
			return true
		}
	}
	return false
}

func (c *devCluster) printReady() {
	var bootstrap []string
	for _, d := range c.nodes {
		bootstrap = append(bootstrap, d.kafka)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nRunnel dev cluster: %d nodes ready\n", len(c.nodes))
	for _, d := range c.nodes {
		fmt.Fprintf(&b, "  node %d  pid %d  kafka %s  raft %s  http http://%s  data %s\n",
			d.id, d.cmd.Process.Pid, d.kafka, d.raft, d.http, d.dir)
	}
	fmt.Fprintf(&b, "  bootstrap: %s\n  try: runnel -b %s topic create demo -p 6 -r 3\n\n",
		strings.Join(bootstrap, ","), strings.Join(bootstrap, ","))
	c.out.printf("%s", b.String())
}

// waitReady waits until every node answers /readyz, at most a minute; a node that
// exits first fails the start.
func (c *devCluster) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for _, d := range c.nodes {
		for {
			if code, err := httpGet(ctx, "http://"+d.http+"/readyz"); err == nil && code == 200 {
				break
			}
			select {
			case ex := <-c.exited:
				ex.node.running = false
				return fmt.Errorf("node %d exited while the dev cluster started: %s", ex.node.id, exitReason(ex.err))
			case <-ctx.Done():
				return fmt.Errorf("node %d not ready at http://%s/readyz: %w", d.id, d.http, context.Cause(ctx))
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

// stopAll sends SIGTERM to every running node and waits for them all.
func (c *devCluster) stopAll() {
	for _, d := range c.nodes {
		if d.running {
			d.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	c.wg.Wait()
}

func httpGet(ctx context.Context, url string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// shellCommand renders bin and args as a command line for a POSIX shell.
func shellCommand(bin string, args []string) string {
	parts := []string{shellQuote(bin)}
	for _, a := range args {
		parts = append(parts, shellQuote(a))
	}
	return strings.Join(parts, " ")
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("@%+=:,./-_", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// lockedWriter serializes the lines of every node and the supervisor.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, format, args...)
}
