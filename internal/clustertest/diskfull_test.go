package clustertest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/clustertest"
)

// TestDiskFull fills one node's disk (its data dir is a small tmpfs, filled by another
// file) under a checked acks=all load on a topic with min.insync.replicas=2. The node
// must stay up, report the full disk (/readyz, runnel_disk_full), hand its leaderships
// to the others and leave the ISRs, while the load goes on; once the file is removed
// it must rejoin every ISR by itself, and every acknowledged record must be on every
// ISR replica. It needs root to mount the tmpfs, and skips otherwise.
func TestDiskFull(t *testing.T) {
	skipIfShort(t)
	const full = 2 // the node whose disk fills
	var mnt string
	c := clustertest.Start(t, clustertest.Options{Nodes: 3, Sets: clustertest.FastFailureDetection, StartTimeout: startTimeout,
		Prepare: func(n *clustertest.Node) error {
			if n.ID != full {
				return nil
			}
			mnt = n.DataDir
			return mountSmallDisk(t, n.DataDir, "48m")
		}})
	topic := topicName(t)
	const parts = 3
	createTopic(t, c, topic, parts, 3)
	h := clustertest.NewHistory()
	load := c.StartLoad(t, h, clustertest.LoadOptions{Topic: topic, Partitions: parts, Rate: 300})
	waitAcks(t, h, 300, "before the disk fills")

	filler := filepath.Join(mnt, "filler")
	fillDisk(t, filler)
	filled := time.Now()
	waitReadyz(t, c.Node(full), http.StatusServiceUnavailable, "degraded: disk full in ")
	t.Logf("node %d reports its full disk %v after the fill", full, time.Since(filled).Round(time.Millisecond))
	waitMetric(t, c.Node(full), "runnel_disk_full 1")
	for p := range int32(parts) {
		waitPartition(t, c, 1, topic, p, func(leader int32, isr []int32) bool {
			return leader != full && !slices.Contains(isr, full)
		}, "leader and ISR without node %d", full)
	}
	t.Logf("node %d leads nothing and is out of every ISR %v after the fill", full, time.Since(filled).Round(time.Millisecond))
	waitAcks(t, h, h.Len()+600, "while node 2's disk is full")
	if !c.Node(full).Running() {
		t.Fatalf("node %d exited on a full disk", full)
	}
	if logs := c.Logs(full); strings.Count(logs, "follower appends fail: the disk is full") > 2*parts {
		t.Errorf("node %d logs its failing follower appends more than once per fetcher and episode", full)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	freed := time.Now()
	for p := range int32(parts) {
		c.WaitISR(t, topic, p, 3, waitTimeout)
	}
	t.Logf("node %d back in every ISR %v after the free", full, time.Since(freed).Round(time.Millisecond))
	waitReadyz(t, c.Node(full), http.StatusOK, "ready")
	waitMetric(t, c.Node(full), "runnel_disk_full 0")
	waitAcks(t, h, h.Len()+300, "after the free")
	stopLoad(t, load, h)
	checkAllRunning(t, c)
	h.Check(t, c, topic)
}

// TestSharedDiskFull runs three nodes whose data dirs share one tmpfs, fills it with
// another file under a checked acks=all load, and frees it. No node may exit; writes
// must resume within seconds of the free, and every acknowledged record must be on
// every ISR replica. It needs root to mount the tmpfs, and skips otherwise.
func TestSharedDiskFull(t *testing.T) {
	skipIfShort(t)
	shared := t.TempDir()
	if err := mountSmallDisk(t, shared, "160m"); err != nil {
		t.Fatal(err)
	}
	c := clustertest.Start(t, clustertest.Options{Nodes: 3, Sets: clustertest.FastFailureDetection, StartTimeout: startTimeout,
		Prepare: func(n *clustertest.Node) error {
			return bindMount(t, filepath.Join(shared, fmt.Sprint("node", n.ID)), n.DataDir)
		}})
	topic := topicName(t)
	const parts = 3
	createTopic(t, c, topic, parts, 3)
	h := clustertest.NewHistory()
	load := c.StartLoad(t, h, clustertest.LoadOptions{Topic: topic, Partitions: parts, Rate: 300})
	waitAcks(t, h, 300, "before the disk fills")

	filler := filepath.Join(shared, "filler")
	fillDisk(t, filler)
	for i := 1; i <= 3; i++ {
		waitReadyz(t, c.Node(i), http.StatusServiceUnavailable, "degraded: disk full in ")
	}
	time.Sleep(3 * time.Second) // long enough for a node that would stop to stop
	checkAllRunning(t, c)

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	freed, acked := time.Now(), h.Len()
	waitAcks(t, h, acked+100, "after the free")
	t.Logf("writes resumed %v after the free (100 more acknowledged)", time.Since(freed).Round(time.Millisecond))
	if d := time.Since(freed); d > 15*time.Second {
		t.Errorf("writes took %v to resume after the free, want a few seconds", d)
	}
	for i := 1; i <= 3; i++ {
		waitReadyz(t, c.Node(i), http.StatusOK, "ready")
	}
	waitAcks(t, h, h.Len()+300, "after the free")
	stopLoad(t, load, h)
	checkAllRunning(t, c)
	h.Check(t, c, topic)
}

// mountSmallDisk mounts a tmpfs of size on dir for the test, or skips the test where
// that is not allowed.
func mountSmallDisk(t *testing.T, dir, size string) error {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small filesystem")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs on %s: %v: %s", dir, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	return nil
}

// bindMount makes dir (created) appear at at, so that several nodes share one
// filesystem.
func bindMount(t *testing.T, dir, at string) error {
	for _, d := range []string{dir, at} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if out, err := exec.Command("mount", "--bind", dir, at).CombinedOutput(); err != nil {
		return fmt.Errorf("bind mount %s on %s: %v: %s", dir, at, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", at).Run() })
	return nil
}

// fillDisk writes path until the filesystem has no room left, down to the last page.
func fillDisk(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, size := range []int{1 << 20, 64 << 10, 4 << 10} {
		chunk := make([]byte, size)
		for {
			if _, err := f.Write(chunk); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatalf("filling the disk: %v", err)
				}
				break
			}
		}
	}
}

// waitReadyz waits until n's /readyz answers code with a body that contains want.
func waitReadyz(t *testing.T, n *clustertest.Node, code int, want string) {
	t.Helper()
	var last string
	deadline := time.Now().Add(waitTimeout)
	for time.Now().Before(deadline) {
		if !n.Running() {
			t.Fatalf("node %d exited: %s", n.ID, lastLines(n.Logs(), 5))
		}
		got, body, err := httpGet("http://" + n.HTTPAddr + "/readyz")
		if err == nil && got == code && strings.Contains(body, want) {
			return
		}
		last = fmt.Sprintf("%d %q %v", got, body, err)
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("node %d: /readyz never answered %d %q within %v; last %s", n.ID, code, want, waitTimeout, last)
}

// waitMetric waits until n's /metrics has a line that is line.
func waitMetric(t *testing.T, n *clustertest.Node, line string) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for time.Now().Before(deadline) {
		if _, body, err := httpGet("http://" + n.HTTPAddr + "/metrics"); err == nil && slices.Contains(strings.Split(body, "\n"), line) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("node %d: /metrics never had %q within %v", n.ID, line, waitTimeout)
}

func httpGet(url string) (int, string, error) {
	hc := http.Client{Timeout: 2 * time.Second}
	resp, err := hc.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// waitPartition waits until node from's view of topic-partition satisfies ok.
func waitPartition(t *testing.T, c *clustertest.Cluster, from int, topic string, p int32, ok func(leader int32, isr []int32) bool, what string, args ...any) {
	t.Helper()
	var last string
	deadline := time.Now().Add(waitTimeout)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		st, err := c.PartitionFrom(ctx, from, topic, p)
		cancel()
		if err == nil && ok(st.Leader, st.ISR) {
			return
		}
		last = fmt.Sprintf("leader %d, ISR %v, %v", st.Leader, st.ISR, err)
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s-%d: never %s within %v (node %d's view; last %s)", topic, p, fmt.Sprintf(what, args...), waitTimeout, from, last)
}

// checkAllRunning fails the test for every node that is not running.
func checkAllRunning(t *testing.T, c *clustertest.Cluster) {
	t.Helper()
	for i := 1; i <= 3; i++ {
		if !c.Node(i).Running() {
			t.Errorf("node %d exited: %s", i, lastLines(c.Logs(i), 5))
		}
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
