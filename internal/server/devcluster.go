package server

import (
	"bufio"
	"context"
	"errors"
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
// Ctrl-C or SIGTERM stops them all cleanly.
func NewDevClusterCommand() *cobra.Command {
	var nodes, basePort int
	var dataDir string
	var sets []string
	cmd := &cobra.Command{
		Use:   "dev-cluster",
		Short: "Run a local multi-node cluster (child processes on loopback) and print its addresses",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if nodes < 1 || nodes > 9 {
				return fmt.Errorf("--nodes must be between 1 and 9, got %d", nodes)
			}
			cmd.SilenceUsage = true
			return runDevCluster(cmd.OutOrStdout(), nodes, basePort, dataDir, sets)
		},
	}
	cmd.Flags().IntVar(&nodes, "nodes", 3, "number of nodes (all are controllers and brokers)")
	cmd.Flags().IntVar(&basePort, "base-port", 9092, "node N listens on base+10(N-1) (Kafka), +1 (Raft), +2 (HTTP)")
	cmd.Flags().StringVar(&dataDir, "data-dir", "./runnel-dev", "parent of each node's data directory (node-N)")
	cmd.Flags().StringArrayVar(&sets, "set", nil, "KEY=VALUE property for every node, repeatable")
	return cmd
}

type devNode struct {
	id                     int
	kafka, raft, http, dir string
	cmd                    *exec.Cmd
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

func runDevCluster(out io.Writer, n, basePort int, dataDir string, sets []string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	nodes := devNodes(n, basePort, dataDir)
	var voters, bootstrap []string
	for _, d := range nodes {
		voters = append(voters, fmt.Sprintf("%d@%s", d.id, d.raft))
		bootstrap = append(bootstrap, d.kafka)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var wg sync.WaitGroup
	exited := make(chan error, n)
	for _, d := range nodes {
		args := []string{"server", "--node-id", strconv.Itoa(d.id), "--data-dir", d.dir, "--listen", d.kafka,
			"--controller-listen", d.raft, "--http-listen", d.http, "--controllers", strings.Join(voters, ",")}
		for _, s := range sets {
			args = append(args, "--set", s)
		}
		d.cmd = exec.Command(self, args...)
		if err := startPrefixed(d, out, &wg, exited); err != nil {
			stopDevNodes(nodes)
			return err
		}
	}
	if err := waitDevReady(ctx, nodes); err != nil {
		stopDevNodes(nodes)
		return err
	}
	fmt.Fprintf(out, "\nRunnel dev cluster: %d nodes ready\n", n)
	for _, d := range nodes {
		fmt.Fprintf(out, "  node %d  kafka %s  raft %s  http http://%s  data %s\n", d.id, d.kafka, d.raft, d.http, d.dir)
	}
	fmt.Fprintf(out, "  bootstrap: %s\n  try: runnel -b %s topic create demo -p 6 -r 3\n\n",
		strings.Join(bootstrap, ","), strings.Join(bootstrap, ","))
	var firstErr error
	select {
	case <-ctx.Done():
	case firstErr = <-exited:
		firstErr = fmt.Errorf("a node exited: %w", firstErr)
	}
	stopDevNodes(nodes)
	wg.Wait()
	return firstErr
}

// startPrefixed starts d with its output prefixed by its node id.
func startPrefixed(d *devNode, out io.Writer, wg *sync.WaitGroup, exited chan<- error) error {
	pr, pw := io.Pipe()
	d.cmd.Stdout, d.cmd.Stderr = pw, pw
	if err := d.cmd.Start(); err != nil {
		return fmt.Errorf("start node %d: %w", d.id, err)
	}
	var mu sync.Mutex
	wg.Add(2)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			mu.Lock()
			fmt.Fprintf(out, "[node %d] %s\n", d.id, sc.Text())
			mu.Unlock()
		}
	}()
	go func() {
		defer wg.Done()
		err := d.cmd.Wait()
		pw.Close()
		if err == nil {
			err = errors.New("exited")
		}
		exited <- fmt.Errorf("node %d: %w", d.id, err)
	}()
	return nil
}

func waitDevReady(ctx context.Context, nodes []*devNode) error {
	deadline := time.Now().Add(60 * time.Second)
	for _, d := range nodes {
		for {
			resp, err := httpGet(ctx, "http://"+d.http+"/readyz")
			if err == nil && resp == 200 {
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				return fmt.Errorf("node %d not ready at http://%s/readyz", d.id, d.http)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

func stopDevNodes(nodes []*devNode) {
	for _, d := range nodes {
		if d.cmd != nil && d.cmd.Process != nil {
			d.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
}

func httpGet(ctx context.Context, url string) (int, error) {
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
