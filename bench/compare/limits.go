package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// limits are the machine's physical limits, as bench/physlimits measured them at the
// start of the run: each figure of the table is also given as a ratio to the limit
// that bounds it.
type limits struct {
	SeqWriteMBPerSec float64 `json:"seq_write_fdatasync_per_mib_mb_per_sec"`
	FsyncP50Ms       float64 `json:"fdatasync_4k_p50_ms"`
	FsyncP99Ms       float64 `json:"fdatasync_4k_p99_ms"`
	FsyncMaxMs       float64 `json:"fdatasync_4k_max_ms"`
	FsyncsPerSec     float64 `json:"fdatasync_4k_per_sec"`
	LoopbackMBPerSec float64 `json:"loopback_tcp_mb_per_sec"`
}

// readLimits reads physlimits' JSON output; nil (no limit column) when path is empty.
func readLimits(path string) (*limits, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var l limits
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &l, nil
}

func (l *limits) markdown() string {
	return fmt.Sprintf("Physical limits (bench/physlimits, this run): sequential write with an fdatasync every MiB **%.0f MB/s**; "+
		"4 KiB append + fdatasync p50 **%.3f ms**, p99 **%.3f ms**, max %.2f ms (%.0f a second, one at a time); "+
		"loopback TCP, one connection, **%.0f MB/s**. The last column divides each median by the limit that bounds it: "+
		"`disk` the fdatasync bandwidth (divided by the replicas sharing this one disk, each writing every byte), "+
		"`loopback` the TCP bandwidth, `fsync p50`/`fsync p99` the disk's own fdatasync latency (a durable e2e "+
		"latency cannot go below one fsync).\n\n",
		l.SeqWriteMBPerSec, l.FsyncP50Ms, l.FsyncP99Ms, l.FsyncMaxMs, l.FsyncsPerSec, l.LoopbackMBPerSec)
}

// of is the limit bounding metric on s, and its name; ok false when none applies. A
// durable system's produce bandwidth is bounded by the disk, shared by its replicas
// (three nodes on one disk each write and fsync every byte); a page-cache system's and
// every consume by loopback; a durable system's e2e latency by one fsync.
func (l *limits) of(metric string, s system) (float64, string, bool) {
	if l == nil {
		return 0, "", false
	}
	durable := s.durable()
	switch {
	case strings.HasSuffix(metric, "produce MB/s") && durable:
		return l.SeqWriteMBPerSec / float64(s.replicas()), fmt.Sprintf("disk/%d", s.replicas()), true
	case strings.HasSuffix(metric, "produce MB/s"), strings.HasSuffix(metric, "consume MB/s"):
		return l.LoopbackMBPerSec, "loopback", true
	case strings.HasPrefix(metric, "e2e") && strings.HasSuffix(metric, " p50 ms") && durable:
		return l.FsyncP50Ms, "fsync p50", true
	case strings.HasPrefix(metric, "e2e") && strings.HasSuffix(metric, " p99 ms") && durable:
		return l.FsyncP99Ms, "fsync p99", true
	}
	return 0, "", false
}
