// Command compare runs the same workloads against Runnel and its peers (kfake, NATS
// JetStream) on loopback and prints one markdown table of medians, min–max and
// ratios to Runnel on one node. bench/compare.sh builds the binaries and runs it; see
// docs/benchmarks.md. It is a tool: the test suite never runs it.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// workload is one measured scenario.
type workload struct {
	name     string
	records  int64
	size     int
	e2e      bool
	rate     float64
	duration time.Duration
}

type options struct {
	runs       int
	quick      bool
	only       string // comma-separated system names; empty: all
	partitions int
	profile    time.Duration // CPU profile of profSys during its first produce; 0: none
	profSys    string
	out        string // markdown file to write the table to
	limits     string // physlimits' JSON, for the ratios to the physical limits
}

func main() {
	e := &env{}
	o := options{}
	flag.StringVar(&e.bin, "bin", "", "directory with runnel, kfakeserver and natsbench")
	flag.StringVar(&e.work, "work", "", "scratch directory for data and logs")
	flag.IntVar(&e.port, "port", 20000, "first port to use; each system takes a block of 1000 (keep them below the ephemeral range, 32768)")
	flag.IntVar(&o.runs, "runs", 3, "runs of each workload on each system")
	flag.BoolVar(&o.quick, "quick", false, "small workloads, one run: a smoke test of the harness")
	flag.StringVar(&o.only, "systems", "", "comma-separated systems to run (default: all)")
	flag.IntVar(&o.partitions, "partitions", 3, "partitions of each Kafka topic (a NATS stream has one)")
	flag.DurationVar(&o.profile, "profile", 0, "take a CPU profile of -profile-system for this long during its first produce")
	flag.StringVar(&o.profSys, "profile-system", baseline, "the Runnel system -profile profiles")
	flag.StringVar(&o.out, "out", "", "also write the markdown table to this file")
	flag.StringVar(&o.limits, "limits", "", "bench/physlimits' JSON output: print the limits and each figure's ratio to them")
	flag.Parse()
	lim, err := readLimits(o.limits)
	if err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(2)
	}
	if e.bin == "" || e.work == "" {
		fmt.Fprintln(os.Stderr, "compare: -bin and -work are required")
		os.Exit(2)
	}
	if o.quick {
		o.runs = 1
	}
	res := newResults()
	for _, s := range allSystems() {
		if o.only != "" && !contains(strings.Split(o.only, ","), s.name) {
			continue
		}
		runSystem(e, o, s, res)
	}
	table := res.markdown(allSystems(), metricOrder(append(freshWorkloads(o.quick), workloads(o.quick)...)), lim)
	fmt.Print(table)
	if o.out != "" {
		_ = os.WriteFile(o.out, []byte(table), 0o644)
	}
	raw, _ := json.MarshalIndent(res, "", "  ")
	_ = os.WriteFile(filepath.Join(e.work, "results.json"), raw, 0o644)
}

func allSystems() []system {
	return []system{
		runnelSystem("runnel-1", "Runnel, one node, default durability: each acknowledged batch is fsynced (group commit) before the ack", 1),
		runnelSystem("runnel-1-pagecache", "Runnel, one node, log.flush.interval.messages=MAX: ack after the write to the page cache (Kafka's default)", 1,
			"log.flush.interval.messages="+maxFlushMessages),
		noIdempotence(runnelSystem("runnel-1-noidem", "Runnel, one node, default durability, producer idempotence off (acks=all): shows the cost of the idempotent path", 1)),
		runnelSystem("runnel-3", "Runnel, three nodes on loopback, RF 3, acks=all, default durability", 3),
		runnelSystem("runnel-3-pagecache", "Runnel, three nodes on loopback, RF 3, acks=all, log.flush.interval.messages=MAX: ack when every ISR member has it in its page cache (Kafka's default; NATS R3's durability)", 3,
			"log.flush.interval.messages="+maxFlushMessages),
		kfakeSystem("kfake-sync", "franz-go kfake with DataDir and SyncWrites: an fsync per batch", "-sync"),
		kfakeSystem("kfake-blackhole", "franz-go kfake with BlackholeProduce: records discarded, the load generator's ceiling", "-blackhole"),
		natsSystem("nats-r1-sync", "NATS JetStream file storage, R1, sync_interval always: fsync per write", 1, true),
		natsSystem("nats-r1", "NATS JetStream file storage, R1, default sync_interval (fsync every 2 min)", 1, false),
		natsSystem("nats-r3", "NATS JetStream file storage, R3 (three servers in one process), default sync_interval", 3, false),
	}
}

// noIdempotence makes a system's producers non-idempotent.
func noIdempotence(s system) system {
	s.benchFlags = append(s.benchFlags, "--idempotence=false")
	return s
}

// freshWorkloads run on a system started for each run alone, before anything else
// wrote to its disk: write-back left by a throughput run (gigabytes in the page cache)
// would otherwise show in the e2e tail of the run after it. workloads' own e2e runs
// after the throughput runs, on the same system, to show that effect.
func freshWorkloads(quick bool) []workload {
	d := 20 * time.Second
	if quick {
		d = 3 * time.Second
	}
	return []workload{{name: "e2e-fresh", size: 100, e2e: true, rate: 10000, duration: d}}
}

func workloads(quick bool) []workload {
	if quick {
		return []workload{
			{name: "100B", records: 100000, size: 100},
			{name: "1KiB", records: 20000, size: 1024},
			{name: "e2e-after", size: 100, e2e: true, rate: 10000, duration: 3 * time.Second},
		}
	}
	// Long enough that a run's first second (connections, metadata, the first page
	// cache and heap growth) is a small part of it: with the load generators
	// prefaulted, one node produced a million 100 B records in 0.6 s.
	return []workload{
		{name: "100B", records: 5000000, size: 100},
		{name: "1KiB", records: 1000000, size: 1024},
		{name: "e2e-after", size: 100, e2e: true, rate: 10000, duration: 20 * time.Second},
	}
}

// settle stops s, deletes its data directories and flushes every dirty page to the
// disk, so that the next system does not pay for this one's write-back. (A system that
// does not fsync leaves gigabytes in the page cache; the kernel writing them out during
// the next system's run cut runnel-3's 1 KiB figure in half in one run.)
func settle(e *env, s system, r *running) {
	r.stop()
	dirs, _ := filepath.Glob(filepath.Join(e.work, s.name+"-*"))
	for _, d := range dirs {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			_ = os.RemoveAll(d)
		}
	}
	syscall.Sync()
}

// runSystem runs the fresh workloads o.runs times, each on s freshly started, then
// starts s once more and runs every other workload o.runs times, and stops it.
func runSystem(e *env, o options, s system, res *results) {
	// Every start of s takes the same port block (its processes are gone after
	// settle), so the blocks stay below the ephemeral range.
	ports := e.port
	defer func() { e.port = ports + 1000 }()
	if !s.produceOnly {
		for run := range o.runs {
			for _, w := range freshWorkloads(o.quick) {
				fmt.Fprintf(os.Stderr, "== %s: starting fresh for %s run %d\n", s.name, w.name, run+1)
				e.port = ports
				r, err := s.start(e)
				if err != nil {
					break // reported below, where the system is started again
				}
				if err := runWorkload(e, o, s, r, w, run, res); err != nil {
					fmt.Fprintf(os.Stderr, "== %s %s run %d: %v\n", s.name, w.name, run+1, err)
					res.fail(s.name, w.name, err)
				}
				settle(e, s, r)
			}
		}
	}
	fmt.Fprintf(os.Stderr, "== %s: starting\n", s.name)
	e.port = ports
	r, err := s.start(e)
	if err != nil {
		note := "failed to start: " + firstLine(err)
		if s.notYet != nil {
			note = s.notYet(e, err)
		}
		fmt.Fprintf(os.Stderr, "== %s: %s\n", s.name, note)
		res.note(s.name, note)
		return
	}
	defer settle(e, s, r)
	for _, w := range workloads(o.quick) {
		for run := range o.runs {
			if w.e2e && s.produceOnly {
				continue
			}
			if o.profile > 0 && run == 0 && w.name == "100B" && s.profileURL != nil && s.name == o.profSys {
				go saveProfile(s.profileURL(r), o.profile, filepath.Join(e.work, s.name+"-produce.pprof"))
			}
			if err := runWorkload(e, o, s, r, w, run, res); err != nil {
				fmt.Fprintf(os.Stderr, "== %s %s run %d: %v\n", s.name, w.name, run+1, err)
				res.fail(s.name, w.name, err)
				if errors.Is(err, errTimedOut) {
					fmt.Fprintf(os.Stderr, "== %s %s: the remaining runs are skipped\n", s.name, w.name)
					break
				}
			}
		}
	}
}

func saveProfile(url string, d time.Duration, path string) {
	resp, err := http.Get(fmt.Sprintf("%s?seconds=%d", url, int(d.Seconds())))
	if err != nil {
		fmt.Fprintln(os.Stderr, "profile:", err)
		return
	}
	defer resp.Body.Close()
	f, err := os.Create(path)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = io.Copy(f, resp.Body)
	fmt.Fprintln(os.Stderr, "== CPU profile written to", path)
}
