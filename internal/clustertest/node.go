package clustertest

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/runnel-io/runnel/internal/log"
)

// Node is one `runnel server` process of a Cluster. Its addresses and data directory
// stay the same across restarts: the metadata quorum keeps the controller addresses.
type Node struct {
	ID             int32  // the --node-id, 1-based
	KafkaAddr      string // --listen, 127.0.0.1:PORT, or 10.213.X.ID:9092 with Options.Netns
	ControllerAddr string // --controller-listen
	HTTPAddr       string // --http-listen
	DataDir        string // --data-dir
	LogPath        string // the file collecting the output of every run of the node
	Netns          string // the network namespace the node runs in; "" without Options.Netns

	bin    string   // immutable: the runnel binary
	args   []string // immutable: the arguments of every run
	ipPath string   // immutable: iproute2's ip, which runs the node in Netns
	// virt runs the node in this process (Options.Virtual); nil for a process node,
	// whose fields below it then leaves unused.
	virt *virtualNode

	mu sync.Mutex // guards proc, paused and starts
	// proc is the latest run; nil before the first start.
	proc *process
	// paused is true between Pause and Resume (or the process's exit).
	paused bool
	starts int
}

// process is one run of a node.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once Wait returned; err is set then
	err    error         // the exit status; read only after exited is closed
	// intended is set before the harness signals the process to end, so that an exit
	// without it (a panic, a fatal error) fails the test.
	intended bool
}

// ErrStopTimeout is returned by Stop when the process had not exited within
// StopTimeout of SIGTERM; it was then killed.
var ErrStopTimeout = errors.New("cluster: node did not exit after SIGTERM")

// StopTimeout bounds how long Stop waits for a node to exit after SIGTERM.
const StopTimeout = 60 * time.Second

// launch starts a new run of the node without waiting for it to be ready.
func (n *Node) launch() error {
	if n.virt != nil {
		return n.virt.launch(n) // returns once the node is ready
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc != nil && !n.proc.done() {
		return fmt.Errorf("node %d still runs (pid %d)", n.ID, n.proc.cmd.Process.Pid)
	}
	out, err := os.OpenFile(n.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	n.starts++
	fmt.Fprintf(out, "=== cluster: start %d of node %d at %s\n", n.starts, n.ID, time.Now().Format(time.RFC3339Nano))
	cmd := n.command()
	cmd.Stdout, cmd.Stderr = out, out
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		out.Close()
		return fmt.Errorf("starting node %d: %w", n.ID, err)
	}
	p := &process{cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		out.Close()
		close(p.exited)
	}()
	n.proc, n.paused = p, false
	return nil
}

// command is the node's command line. In a namespace it is `ip netns exec NS BIN
// ARGS...`, which enters the namespace and execs BIN without forking: the process is
// the server itself, so signals, Wait and the parent-death signal (kept across exec)
// reach the server.
func (n *Node) command() *exec.Cmd {
	if n.Netns == "" {
		return exec.Command(n.bin, n.args...)
	}
	return exec.Command(n.ipPath, append([]string{"netns", "exec", n.Netns, n.bin}, n.args...)...)
}

func (p *process) done() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// current returns the latest run, or nil.
func (n *Node) current() *process {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.proc
}

// Running reports whether the process exists (it may be paused).
func (n *Node) Running() bool {
	if n.virt != nil {
		return n.virt.running()
	}
	p := n.current()
	return p != nil && !p.done()
}

// Alive reports whether the process runs and is not paused: it can answer requests.
func (n *Node) Alive() bool {
	if n.virt != nil {
		return n.virt.running() && !n.virt.isPaused()
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.proc != nil && !n.proc.done() && !n.paused
}

// Paused reports whether the node is stopped by SIGSTOP (Pause on a virtual node).
func (n *Node) Paused() bool {
	if n.virt != nil {
		return n.virt.running() && n.virt.isPaused()
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.paused && n.proc != nil && !n.proc.done()
}

// signal sends sig to the running process; ending says the harness means it to exit.
// A virtual node takes SIGSTOP and SIGCONT only (Pause and Resume, made on its
// network: see virtualNode.pause); Kill and Stop reach it without signals.
func (n *Node) signal(sig syscall.Signal, ending bool) (*process, error) {
	if n.virt != nil {
		switch sig {
		case syscall.SIGSTOP:
			return nil, n.virt.pause(n.ID, true)
		case syscall.SIGCONT:
			return nil, n.virt.pause(n.ID, false)
		}
		return nil, fmt.Errorf("node %d: %v needs a process node, not an in-process one", n.ID, sig)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	p := n.proc
	if p == nil || p.done() {
		return p, fmt.Errorf("node %d is not running", n.ID)
	}
	if ending {
		p.intended = true
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		return p, fmt.Errorf("node %d: %v: %w", n.ID, sig, err)
	}
	switch sig {
	case syscall.SIGSTOP:
		n.paused = true
	case syscall.SIGCONT:
		n.paused = false
	}
	return p, nil
}

// kill sends SIGKILL if the process runs and waits for it to be gone.
func (n *Node) kill() {
	if n.virt != nil {
		n.virt.kill()
		return
	}
	p, err := n.signal(syscall.SIGKILL, true)
	if err == nil {
		<-p.exited
	}
}

// stop sends SIGTERM (and SIGCONT, should the node be paused) and waits for the exit.
func (n *Node) stop() error {
	if n.virt != nil {
		return n.virt.stop()
	}
	p, err := n.signal(syscall.SIGTERM, true)
	if err != nil {
		return err
	}
	n.signal(syscall.SIGCONT, true)
	select {
	case <-p.exited:
		return p.err
	case <-time.After(StopTimeout):
		n.kill()
		return fmt.Errorf("%w: node %d within %v", ErrStopTimeout, n.ID, StopTimeout)
	}
}

// unexpectedExit returns a description of the latest run's exit if the harness did not
// cause it, else "".
func (n *Node) unexpectedExit() string {
	if n.virt != nil {
		return n.virt.unexpectedExit()
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc == nil || !n.proc.done() || n.proc.intended {
		return ""
	}
	return fmt.Sprintf("node %d exited on its own: %v", n.ID, n.proc.err)
}

// waitReady polls /readyz until it answers 200. It fails the test if the process
// exits or the deadline passes.
func (n *Node) waitReady(deadline time.Time) error {
	if n.virt != nil {
		return nil // launch returned once server.Start had
	}
	hc := http.Client{Timeout: time.Second}
	var last string
	for {
		p := n.current()
		if p.done() {
			return fmt.Errorf("node %d exited while starting: %v (its output is printed at the end)", n.ID, p.err)
		}
		resp, err := hc.Get("http://" + n.HTTPAddr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %d not ready by the deadline: GET /readyz: %s (its output is printed at the end)", n.ID, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Logs returns the output of every run of the node so far.
func (n *Node) Logs() string {
	b, err := os.ReadFile(n.LogPath)
	if err != nil {
		return fmt.Sprintf("(reading %s: %v)", n.LogPath, err)
	}
	return string(b)
}

// tail returns the last lines lines of s, after squeezing runs of lines that differ
// only in their time= field into one line with a count.
func tail(s string, lines int) string {
	out := squeeze(strings.Split(strings.TrimSuffix(s, "\n"), "\n"))
	if len(out) > lines {
		out = out[len(out)-lines:]
	}
	return strings.Join(out, "\n")
}

// squeeze collapses consecutive lines equal but for their time= field.
func squeeze(in []string) []string {
	var out []string
	var prev string
	n := 0
	flush := func() {
		if n > 1 {
			out[len(out)-1] += fmt.Sprintf(" [×%d]", n)
		}
	}
	for _, l := range in {
		key := l
		if strings.HasPrefix(l, "time=") {
			if i := strings.IndexByte(l, ' '); i > 0 {
				key = l[i:]
			}
		}
		if key == prev && n > 0 {
			n++
			continue
		}
		flush()
		out, prev, n = append(out, l), key, 1
	}
	flush()
	return out
}

// keepLog copies the node's output to $RUNNEL_CLUSTER_LOGDIR/<test>/node-N.log, if
// that variable is set, and returns the copy's path.
func (n *Node) keepLog(test string) string {
	dir := os.Getenv(LogDirEnv)
	if dir == "" {
		return ""
	}
	dir = filepath.Join(dir, strings.ReplaceAll(test, "/", "_"))
	dst := filepath.Join(dir, fmt.Sprintf("node-%d.log", n.ID))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err.Error()
	}
	if err := os.WriteFile(dst, []byte(n.Logs()), 0o644); err != nil {
		return err.Error()
	}
	return dst
}

// PartitionDir is where the node keeps the log of topic-partition.
func (n *Node) PartitionDir(topic string, partition int32) string {
	return filepath.Join(n.DataDir, log.PartitionDirName(log.TopicPartition{Topic: topic, Partition: partition}))
}
