package log

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/config"
	"github.com/runnel-io/runnel/internal/vfs"
)

// countingFS counts the partition directories being listed at once: opening a log
// found at start-up lists its directory first (recovery), and holds it a moment.
type countingFS struct {
	vfs.FS

	mu                sync.Mutex
	now, most, listed int
}

func (c *countingFS) ReadDir(dir string) ([]string, error) {
	if _, ok := ParsePartitionDirName(filepath.Base(dir)); ok {
		c.mu.Lock()
		c.now++
		c.listed++
		c.most = max(c.most, c.now)
		c.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
		defer func() {
			c.mu.Lock()
			c.now--
			c.mu.Unlock()
		}()
	}
	return c.FS.ReadDir(dir)
}

// num.recovery.threads.per.data.dir bounds the logs recovered at once at start-up, and
// its default is the config table's.
func TestRecoveryThreads(t *testing.T) {
	mem := vfs.NewMem()
	m := newManager(t, mem, "/data")
	for p := range 8 {
		l, err := m.GetOrCreate(TopicPartition{Topic: "t", Partition: int32(p)}, DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		appendRecords(t, l, 0, 1, 10)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	for _, threads := range []int{0, 3} {
		want := threads
		if threads == 0 {
			want = config.Default().NumRecoveryThreadsPerDataDir
		}
		fsys := &countingFS{FS: mem}
		m := newManager(t, fsys, "/data", func(o *ManagerOptions) { o.RecoveryThreads = threads })
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		if fsys.listed < 8 || fsys.most != want {
			t.Errorf("RecoveryThreads %d: %d logs recovered at most at once (of %d), want %d",
				threads, fsys.most, fsys.listed, want)
		}
	}
}
