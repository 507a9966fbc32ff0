package clustertest_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/runnel-io/runnel/internal/clustertest"
	"github.com/runnel-io/runnel/internal/log"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestVirtualKillLeavesCrashState: a virtual Kill leaves the data directory exactly
// as it was at the kill, byte for byte, as kill -9 does (server.Node.Abort): no
// checkpoint, index or producer snapshot written on the way down and no clean-shutdown
// marker, so the restart recovers from the last checkpoints the node wrote while it
// ran, and every acknowledged record is back. A controlled Stop, by contrast, writes
// at least the marker, which shows the comparison sees what a stop writes.
func TestVirtualKillLeavesCrashState(t *testing.T) {
	inVirtualTime(t, func(t *testing.T) {
		c := clustertest.Start(t, clustertest.Options{Nodes: 1, Virtual: true, StartTimeout: startTimeout})
		topic := "crash"
		createTopic(t, c, topic, 1, 1)
		h := clustertest.NewHistory()
		cl := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
		for range 50 {
			if err := produceSync(context.Background(), cl, h, topic, 0); err != nil {
				t.Fatalf("produce to %s-0 on node 1: %v", topic, err)
			}
		}
		dir := c.Node(1).DataDir
		// Every goroutine of the bubble blocked, and the clock stands still while
		// this one runs: nothing writes between the snapshot and the kill.
		synctest.Wait()
		before := readTree(t, dir)
		c.Kill(1)
		if changed := diffTrees(before, readTree(t, dir)); len(changed) > 0 {
			t.Errorf("node 1's data directory changed between the kill and the restart, which kill -9 never does: %v", changed)
		}
		if _, err := os.Stat(filepath.Join(dir, log.CleanShutdownFile)); err == nil {
			t.Errorf("a killed node left %s, so its restart skips crash recovery", log.CleanShutdownFile)
		}

		c.Restart(1)
		c.WaitLeader(t, topic, 0, waitTimeout)
		h.Check(t, c, topic)

		synctest.Wait()
		before = readTree(t, dir)
		if err := c.Stop(1); err != nil {
			t.Fatalf("stopping node 1: %v", err)
		}
		changed := diffTrees(before, readTree(t, dir))
		if !slices.Contains(changed, log.CleanShutdownFile) {
			t.Errorf("a controlled stop wrote %v, not %s", changed, log.CleanShutdownFile)
		}
		t.Logf("written by a controlled stop, not by a kill: %v", changed)
	})
}

// readTree reads every file under dir, by path relative to dir.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		files[rel] = string(b)
		return nil
	})
	if err != nil {
		t.Fatalf("reading %s: %v", dir, err)
	}
	return files
}

// diffTrees lists the files created, removed or changed from a to b, sorted.
func diffTrees(a, b map[string]string) []string {
	var out []string
	for name, data := range a {
		if got, ok := b[name]; !ok || got != data {
			out = append(out, name)
		}
	}
	for name := range b {
		if _, ok := a[name]; !ok {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
