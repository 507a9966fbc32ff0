// Command natsbench measures NATS JetStream (file storage) with the workloads and the
// report of `runnel bench`, for bench/compare.sh. It is a benchmark tool, not part of
// Runnel, and never runs in the test suite.
//
//	natsbench server -replicas 3 -port 14222 -dir D [-sync-always]   # N servers in this process
//	natsbench produce -url U -stream S -replicas 3 -records 1000000 -record-size 100 -json
//	natsbench consume -url U -stream S -records 1000000 -json
//	natsbench e2e -url U -stream S -rate 10000 -duration 20s -json
//
// Records carry the same 20-byte header as runnel bench's (producer, sequence number,
// produce time in Unix ns), so consume checks that every sequence number arrived and
// e2e measures the time from publish to delivery. Publishing is asynchronous with
// acknowledgements (PublishAsync, at most -max-pending unacknowledged); consuming
// uses an ordered consumer (no acks, flow controlled).
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/runnel-io/runnel/internal/benchfmt"
	"github.com/runnel-io/runnel/internal/gcfloor"
)

// config is the flags of the client subcommands.
type config struct {
	url        string
	stream     string
	replicas   int
	records    int64
	size       int
	rate       float64
	duration   time.Duration
	maxPending int
	timeout    time.Duration
	json       bool
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: natsbench server|produce|consume|e2e [flags]")
		os.Exit(2)
	}
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "server":
		err = runServer(args)
	case "produce", "consume", "e2e":
		// The same GC ballast as runnel bench's (internal/cli), so both load
		// generators collect equally rarely and start equally warm (prefaulted), so
		// the comparison stays fair.
		err = gcfloor.RunPrefaulted(256<<20, 256<<20, func() error { return runClient(cmd, args) })
	default:
		err = fmt.Errorf("unknown command %q", cmd)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "natsbench:", err)
		os.Exit(1)
	}
}

func runServer(args []string) error {
	fs := flag.NewFlagSet("server", flag.ExitOnError)
	n := fs.Int("replicas", 1, "servers to run (a cluster when more than 1)")
	port := fs.Int("port", 14222, "first client port; routes use port+100..")
	dir := fs.String("dir", "", "store directory (one subdirectory per server)")
	syncAlways := fs.Bool("sync-always", false, "fsync every write (sync_interval: always); default: every 2 minutes")
	_ = fs.Parse(args)
	if *dir == "" {
		return errors.New("-dir is required")
	}
	return serveCluster(*n, *port, *dir, *syncAlways)
}

func runClient(cmd string, args []string) error {
	c := &config{}
	fs := flag.NewFlagSet(cmd, flag.ExitOnError)
	fs.StringVar(&c.url, "url", "nats://127.0.0.1:14222", "server URLs, comma separated")
	fs.StringVar(&c.stream, "stream", fmt.Sprintf("bench-%d", time.Now().UnixNano()), "stream (and subject) name")
	fs.IntVar(&c.replicas, "replicas", 1, "stream replicas when created")
	fs.Int64Var(&c.records, "records", 1000000, "records to publish, or (consume) that must be there")
	fs.IntVar(&c.size, "record-size", 100, "bytes per message (at least 20)")
	fs.Float64Var(&c.rate, "rate", 10000, "e2e: messages per second")
	fs.DurationVar(&c.duration, "duration", 20*time.Second, "e2e: how long to publish")
	fs.IntVar(&c.maxPending, "max-pending", 8192, "most unacknowledged async publishes")
	fs.DurationVar(&c.timeout, "timeout", time.Minute, "fail after this long without progress")
	fs.BoolVar(&c.json, "json", false, "print the result as one JSON object")
	_ = fs.Parse(args)
	if c.size < benchfmt.HeaderSize {
		return fmt.Errorf("-record-size must be at least %d", benchfmt.HeaderSize)
	}
	var rep *benchfmt.Report
	var err error
	switch cmd {
	case "produce":
		rep, err = produce(c)
	case "consume":
		rep, err = consume(c)
	case "e2e":
		rep, err = e2e(c)
	}
	if err != nil {
		return err
	}
	return rep.Write(os.Stdout, c.json)
}
