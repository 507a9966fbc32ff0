// Command physlimits measures what the machine itself allows, as a yardstick for
// bench/compare.sh: sequential write throughput with an fdatasync every MiB, the
// latency of a small write plus fdatasync, and TCP bandwidth over loopback. It prints
// one JSON object.
//
//	physlimits -dir /tmp/x -write-mib 512 -syncs 2000 -loopback 3s
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"
)

type result struct {
	SeqWriteMBPerSec float64 `json:"seq_write_fdatasync_per_mib_mb_per_sec"`
	FsyncP50Ms       float64 `json:"fdatasync_4k_p50_ms"`
	FsyncP99Ms       float64 `json:"fdatasync_4k_p99_ms"`
	FsyncMaxMs       float64 `json:"fdatasync_4k_max_ms"`
	FsyncsPerSec     float64 `json:"fdatasync_4k_per_sec"`
	LoopbackMBPerSec float64 `json:"loopback_tcp_mb_per_sec"`
}

func main() {
	dir := flag.String("dir", os.TempDir(), "directory on the disk to measure")
	writeMiB := flag.Int("write-mib", 512, "MiB written in the sequential write test")
	syncs := flag.Int("syncs", 2000, "4 KiB writes, each followed by fdatasync, in the latency test")
	loopback := flag.Duration("loopback", 3*time.Second, "how long the loopback test streams")
	flag.Parse()
	var r result
	var err error
	if r.SeqWriteMBPerSec, err = seqWrite(*dir, *writeMiB); err == nil {
		err = fsyncLatency(*dir, *syncs, &r)
	}
	if err == nil {
		r.LoopbackMBPerSec, err = loopbackBandwidth(*loopback)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "physlimits:", err)
		os.Exit(1)
	}
	_ = json.NewEncoder(os.Stdout).Encode(r)
}

// seqWrite appends mib MiB to a new file, calling fdatasync after every MiB, and
// returns MB/s (10^6 bytes).
func seqWrite(dir string, mib int) (float64, error) {
	f, err := os.Create(filepath.Join(dir, "physlimits-seq"))
	if err != nil {
		return 0, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	start := time.Now()
	for range mib {
		if _, err := f.Write(buf); err != nil {
			return 0, err
		}
		if err := syscall.Fdatasync(int(f.Fd())); err != nil {
			return 0, err
		}
	}
	return float64(mib<<20) / 1e6 / time.Since(start).Seconds(), nil
}

// fsyncLatency appends 4 KiB and calls fdatasync n times, as a log appending one
// small batch per fsync does.
func fsyncLatency(dir string, n int, r *result) error {
	f, err := os.Create(filepath.Join(dir, "physlimits-sync"))
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, 4096)
	lat := make([]time.Duration, 0, n)
	start := time.Now()
	for range n {
		t := time.Now()
		if _, err := f.Write(buf); err != nil {
			return err
		}
		if err := syscall.Fdatasync(int(f.Fd())); err != nil {
			return err
		}
		lat = append(lat, time.Since(t))
	}
	r.FsyncsPerSec = float64(n) / time.Since(start).Seconds()
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	r.FsyncP50Ms, r.FsyncP99Ms, r.FsyncMaxMs = ms(lat[n/2]), ms(lat[n*99/100]), ms(lat[n-1])
	return nil
}

// loopbackBandwidth streams 1 MiB writes over one TCP connection on 127.0.0.1 for d
// and returns the MB/s the reader got.
func loopbackBandwidth(d time.Duration) (float64, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	got := make(chan int64, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- 0
			return
		}
		n, _ := io.Copy(io.Discard, c)
		got <- n
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return 0, err
	}
	buf := make([]byte, 1<<20)
	start := time.Now()
	for time.Since(start) < d {
		if _, err := c.Write(buf); err != nil {
			return 0, err
		}
	}
	c.Close()
	n := <-got
	return float64(n) / 1e6 / time.Since(start).Seconds(), nil
}
