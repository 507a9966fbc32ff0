package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// system is one thing under test: how to start it and how to load it.
type system struct {
	name        string
	durability  string                         // one line for the docs
	start       func(e *env) (*running, error) // starts the servers
	client      string                         // "runnel" (runnel bench) or "nats" (natsbench)
	benchFlags  []string                       // extra flags for every bench run
	produceOnly bool                           // nothing to consume (kfake BlackholeProduce)
	notYet      func(e *env, err error) string // non-empty: report this instead of failing
	bootstrap   func(r *running) string        // -b / -url
	profileURL  func(r *running) string        // CPU profile endpoint, if any
	// nodes is how many servers hold each record (on this one disk); fsyncs whether a
	// write is fsynced before its acknowledgement: what bounds it (limits.go).
	nodes  int
	fsyncs bool
}

func (s system) replicas() int { return max(s.nodes, 1) }
func (s system) durable() bool { return s.fsyncs }

// env is where the driver finds binaries and keeps data and logs.
type env struct {
	bin  string // directory with runnel, kfakeserver, natsbench
	work string // scratch directory: data dirs, logs
	port int    // next free port block
}

// nextPorts reserves a block of ports for one system.
func (e *env) nextPorts() int {
	p := e.port
	e.port += 1000
	return p
}

// running is a started system: its processes, to stop in the end.
type running struct {
	procs []*exec.Cmd
	addrs []string // client addresses
	http  []string // runnel HTTP listeners
}

// stop sends SIGTERM to every process it started and waits; SIGKILL after 20s.
func (r *running) stop() {
	for _, p := range r.procs {
		_ = p.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range r.procs {
		done := make(chan struct{})
		go func() { _ = p.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = p.Process.Kill()
			<-done
		}
	}
}

// spawn starts one process with its output in work/name.log.
func (e *env) spawn(name string, args ...string) (*exec.Cmd, error) {
	logf, err := os.Create(filepath.Join(e.work, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	return cmd, nil
}

// freshDir returns an empty directory work/name.
func (e *env) freshDir(name string) (string, error) {
	d := filepath.Join(e.work, name)
	if err := os.RemoveAll(d); err != nil {
		return "", err
	}
	return d, os.MkdirAll(d, 0o755)
}

const maxFlushMessages = "9223372036854775807"

func runnelSystem(name, durability string, nodes int, sets ...string) system {
	s := system{name: name, durability: durability, client: "runnel", nodes: nodes,
		fsyncs:    !slices.ContainsFunc(sets, func(s string) bool { return strings.HasPrefix(s, "log.flush.interval.messages=") }),
		start:     func(e *env) (*running, error) { return startRunnel(e, name, nodes, sets) },
		bootstrap: func(r *running) string { return strings.Join(r.addrs, ",") },
		profileURL: func(r *running) string {
			return "http://" + r.http[0] + "/debug/pprof/profile"
		}}
	if nodes > 1 {
		s.benchFlags = []string{"--replication-factor", fmt.Sprint(nodes), "--acks", "all"}
		s.notYet = func(_ *env, err error) string { return "not yet (cluster did not start: " + firstLine(err) + ")" }
	}
	return s
}

func startRunnel(e *env, name string, nodes int, sets []string) (*running, error) {
	base := e.nextPorts()
	var voters []string
	for i := 1; i <= nodes; i++ {
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i, base+10+i))
	}
	r := &running{}
	for i := 1; i <= nodes; i++ {
		dir, err := e.freshDir(fmt.Sprintf("%s-n%d", name, i))
		if err != nil {
			return nil, err
		}
		kafka, http := fmt.Sprintf("127.0.0.1:%d", base+i), fmt.Sprintf("127.0.0.1:%d", base+20+i)
		args := []string{filepath.Join(e.bin, "runnel"), "server", "--data-dir", dir, "--listen", kafka,
			"--controller-listen", fmt.Sprintf("127.0.0.1:%d", base+10+i), "--http-listen", http,
			"--set", "http.pprof.enable=true"} // for --profile
		if nodes > 1 {
			args = append(args, "--node-id", fmt.Sprint(i), "--controllers", strings.Join(voters, ","))
		}
		for _, s := range sets {
			args = append(args, "--set", s)
		}
		p, err := e.spawn(fmt.Sprintf("%s-n%d", name, i), args...)
		if err != nil {
			r.stop()
			return nil, err
		}
		r.procs, r.addrs, r.http = append(r.procs, p), append(r.addrs, kafka), append(r.http, http)
	}
	for _, h := range r.http {
		if err := waitHTTP("http://"+h+"/readyz", 60*time.Second); err != nil {
			r.stop()
			return nil, err
		}
	}
	return r, nil
}

func kfakeSystem(name, durability string, flags ...string) system {
	return system{name: name, durability: durability, client: "runnel", produceOnly: contains(flags, "-blackhole"),
		nodes: 1, fsyncs: contains(flags, "-sync"),
		start: func(e *env) (*running, error) {
			port := e.nextPorts()
			args := []string{filepath.Join(e.bin, "kfakeserver"), "-port", fmt.Sprint(port)}
			if contains(flags, "-sync") {
				dir, err := e.freshDir(name + "-data")
				if err != nil {
					return nil, err
				}
				args = append(args, "-data-dir", dir)
			}
			p, err := e.spawn(name, append(args, flags...)...)
			if err != nil {
				return nil, err
			}
			r := &running{procs: []*exec.Cmd{p}, addrs: []string{fmt.Sprintf("127.0.0.1:%d", port)}}
			if err := waitTCP(r.addrs[0], 30*time.Second); err != nil {
				r.stop()
				return nil, err
			}
			return r, nil
		},
		bootstrap: func(r *running) string { return r.addrs[0] }}
}

func natsSystem(name, durability string, replicas int, syncAlways bool) system {
	return system{name: name, durability: durability, client: "nats", nodes: replicas, fsyncs: syncAlways,
		benchFlags: []string{"-replicas", fmt.Sprint(replicas)},
		start: func(e *env) (*running, error) {
			port := e.nextPorts()
			dir, err := e.freshDir(name + "-data")
			if err != nil {
				return nil, err
			}
			args := []string{filepath.Join(e.bin, "natsbench"), "server", "-replicas", fmt.Sprint(replicas),
				"-port", fmt.Sprint(port), "-dir", dir}
			if syncAlways {
				args = append(args, "-sync-always")
			}
			p, err := e.spawn(name, args...)
			if err != nil {
				return nil, err
			}
			r := &running{procs: []*exec.Cmd{p}}
			urls, err := waitLogLine(filepath.Join(e.work, name+".log"), "nats://", 90*time.Second)
			if err != nil {
				r.stop()
				return nil, err
			}
			r.addrs = []string{urls}
			return r, nil
		},
		bootstrap: func(r *running) string { return r.addrs[0] }}
}

func waitHTTP(url string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("%s not 200 after %v", url, d)
}

func waitTCP(addr string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s not listening after %v", addr, d)
}

// waitLogLine waits until a line of the file contains marker and returns it.
func waitLogLine(path, marker string, d time.Duration) (string, error) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(path)
		for l := range strings.Lines(string(b)) {
			if strings.Contains(l, marker) {
				return strings.TrimSpace(l), nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return "", fmt.Errorf("%s: no line with %q after %v", path, marker, d)
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}
