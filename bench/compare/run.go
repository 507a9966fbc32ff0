package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/runnel-io/runnel/internal/benchfmt"
)

// runWorkload runs one repetition of w on s and records its metrics.
func runWorkload(e *env, o options, s system, r *running, w workload, run int, res *results) error {
	topic := fmt.Sprintf("cmp-%s-%d-%d", strings.ToLower(w.name), run, time.Now().UnixNano()%1e6)
	logName := filepath.Join(e.work, s.name+"-bench.log")
	if w.e2e {
		rep, err := bench(e, s, s.bootstrap(r), logName, "e2e", e2eArgs(s, w, topic, o)...)
		if err != nil {
			return err
		}
		res.add(s.name, w.name+" achieved records/s", rep.RecordsPerSec)
		if l := rep.EndToEnd; l != nil {
			res.add(s.name, w.name+" p50 ms", l.P50)
			res.add(s.name, w.name+" p99 ms", l.P99)
			res.add(s.name, w.name+" p99.9 ms", l.P999)
			res.add(s.name, w.name+" max ms", l.Max)
		}
		return nil
	}
	rep, err := bench(e, s, s.bootstrap(r), logName, "produce", produceArgs(s, w, topic, o)...)
	if err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	res.add(s.name, w.name+" produce records/s", rep.RecordsPerSec)
	res.add(s.name, w.name+" produce MB/s", rep.MBPerSec)
	if l := rep.Produce; l != nil {
		res.add(s.name, w.name+" produce p50 ms", l.P50)
		res.add(s.name, w.name+" produce p99 ms", l.P99)
	}
	if s.produceOnly {
		return nil
	}
	rep, err = bench(e, s, s.bootstrap(r), logName, "consume", consumeArgs(s, w, topic)...)
	if err != nil {
		return fmt.Errorf("consume: %w", err)
	}
	res.add(s.name, w.name+" consume records/s", rep.RecordsPerSec)
	res.add(s.name, w.name+" consume MB/s", rep.MBPerSec)
	return nil
}

func produceArgs(s system, w workload, topic string, o options) []string {
	if s.client == "nats" {
		return append([]string{"-stream", topic, "-records", fmt.Sprint(w.records), "-record-size", fmt.Sprint(w.size)}, s.benchFlags...)
	}
	return append([]string{"--topic", topic, "--records", fmt.Sprint(w.records), "--record-size", fmt.Sprint(w.size),
		"--partitions", fmt.Sprint(o.partitions)}, s.benchFlags...)
}

func consumeArgs(s system, w workload, topic string) []string {
	if s.client == "nats" {
		return []string{"-stream", topic, "-records", fmt.Sprint(w.records)}
	}
	return []string{"--topic", topic, "--records", fmt.Sprint(w.records)}
}

func e2eArgs(s system, w workload, topic string, o options) []string {
	if s.client == "nats" {
		return append([]string{"-stream", topic, "-record-size", fmt.Sprint(w.size), "-rate", fmt.Sprint(w.rate),
			"-duration", w.duration.String()}, s.benchFlags...)
	}
	return append([]string{"--topic", topic, "--record-size", fmt.Sprint(w.size), "--rate", fmt.Sprint(w.rate),
		"--duration", w.duration.String(), "--partitions", fmt.Sprint(o.partitions)}, s.benchFlags...)
}

// benchTimeout bounds one bench command, so a hung system cannot stall the whole run.
const benchTimeout = 10 * time.Minute

// errTimedOut is a bench command stopped at benchTimeout. The same workload on the same
// system would most likely time out again, so its remaining runs are skipped (NATS with
// an fsync per write, at about 4,000 records a second, took 10 minutes per 5 M-record run).
var errTimedOut = fmt.Errorf("did not finish within %v", benchTimeout)

// bench runs one bench command of s's client against addr with --json, appending its stderr to
// logName, and decodes the report. A command that fails (a lost record, a timeout)
// returns its last stderr line.
func bench(e *env, s system, addr, logName, mode string, args ...string) (*benchfmt.Report, error) {
	var argv []string
	if s.client == "nats" {
		argv = append([]string{filepath.Join(e.bin, "natsbench"), mode, "-url", addr, "-json"}, args...)
	} else {
		argv = append([]string{filepath.Join(e.bin, "runnel"), "bench", mode, "-b", addr, "--json"}, args...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), benchTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	fmt.Fprintf(os.Stderr, "   %s\n", strings.Join(argv[1:], " "))
	err := cmd.Run()
	appendLog(logName, strings.Join(argv, " ")+"\n"+stderr.String())
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w (%v): %s", errTimedOut, err, lastLine(stderr.String()))
		}
		return nil, fmt.Errorf("%v: %s", err, lastLine(stderr.String()))
	}
	var rep benchfmt.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		return nil, fmt.Errorf("bad report %q: %w", stdout.String(), err)
	}
	return &rep, nil
}

func appendLog(path, s string) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = f.WriteString(s)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
