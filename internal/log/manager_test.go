package log

import (
	"errors"
	"io/fs"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/log/logtest"
	"github.com/runnel-io/runnel/internal/vfs"
)

func newManager(t *testing.T, fsys vfs.FS, dir string, mod ...func(*ManagerOptions)) *Manager {
	t.Helper()
	o := ManagerOptions{FS: fsys, DataDir: dir, Defaults: DefaultConfig(), Logger: slog.New(slog.DiscardHandler)}
	for _, f := range mod {
		f(&o)
	}
	m, err := NewManager(o)
	if err != nil {
		t.Fatalf("NewManager: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func TestManagerReopensLogs(t *testing.T) {
	for name, fsys := range map[string]func(t *testing.T) (vfs.FS, string){
		"mem": func(*testing.T) (vfs.FS, string) { return vfs.NewMem(), "/data" },
		"os":  func(t *testing.T) (vfs.FS, string) { return vfs.OS(), t.TempDir() },
	} {
		t.Run(name, func(t *testing.T) {
			fsys, dir := fsys(t)
			m := newManager(t, fsys, dir)
			tps := []TopicPartition{{Topic: "orders"}, {Topic: "orders", Partition: 1}, {Topic: "a-b", Partition: 7}}
			for i, tp := range tps {
				l, err := m.GetOrCreate(tp, DefaultConfig())
				if err != nil {
					t.Fatal(err)
				}
				appendRecords(t, l, 10*(i+1), 3, 20)
			}
			m.Get(tps[0]).DeleteRecordsBefore(5)
			if err := m.WriteHighWatermarks(map[TopicPartition]int64{tps[0]: 12}); err != nil {
				t.Fatal(err)
			}
			leos := map[TopicPartition]int64{}
			for tp, l := range m.All() {
				leos[tp] = l.LogEndOffset()
			}
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
			rp, err := ReadOffsetCheckpoint(fsys, filepath.Join(dir, RecoveryPointCheckpointFile))
			if err != nil || len(rp) != 3 || rp[tps[2]] != leos[tps[2]] {
				t.Fatalf("recovery point checkpoint %v %v, log ends %v", rp, err, leos)
			}
			fsys.MkdirAll(filepath.Join(dir, "orders-3.0123abcd-delete"), 0o755)
			fsys.MkdirAll(filepath.Join(dir, "__raft"), 0o755)

			m2 := newManager(t, fsys, dir)
			all := m2.All()
			if len(all) != 3 {
				t.Fatalf("%d logs reopened, want 3", len(all))
			}
			for tp, l := range all {
				if l.LogEndOffset() != leos[tp] {
					t.Fatalf("%v: log end %d, want %d", tp, l.LogEndOffset(), leos[tp])
				}
			}
			if s := m2.Get(tps[0]).LogStartOffset(); s != 5 {
				t.Fatalf("log start %d after restart, want 5", s)
			}
			if hw, err := m2.ReadHighWatermarks(); err != nil || hw[tps[0]] != 12 {
				t.Fatalf("high watermarks %v %v", hw, err)
			}
			if _, err := fsys.Stat(filepath.Join(dir, "orders-3.0123abcd-delete")); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("*-delete dir left behind: %v", err)
			}
		})
	}
}

func TestManagerDelete(t *testing.T) {
	mem := vfs.NewMem()
	m := newManager(t, mem, "/data")
	tp := TopicPartition{Topic: "gone", Partition: 2}
	l, _ := m.GetOrCreate(tp, DefaultConfig())
	appendRecords(t, l, 5, 2, 10)
	if err := m.Delete(tp); err != nil {
		t.Fatal(err)
	}
	if m.Get(tp) != nil {
		t.Fatal("deleted log still listed")
	}
	names, _ := mem.ReadDir("/data")
	for _, n := range names {
		if strings.HasPrefix(n, "gone-2") {
			t.Fatalf("%s left behind", n)
		}
	}
	_, err := l.AppendAsLeader(logtest.Batch(1, 10), 0)
	wantErr(t, err, ErrClosed)
	// A crash between the rename and the removal leaves a *-delete dir: not reopened.
	l2, _ := m.GetOrCreate(tp, DefaultConfig())
	appendRecords(t, l2, 5, 2, 10)
	l2.Close()
	mem.Rename("/data/gone-2", "/data/"+DeleteDirName(tp, "feed"))
	m2 := newManager(t, mem, "/data")
	if m2.Get(tp) != nil {
		t.Fatal("a log being deleted was reopened")
	}
}

func TestManagerLoops(t *testing.T) {
	mem := vfs.NewMem()
	m := newManager(t, mem, "/data", func(o *ManagerOptions) {
		o.RetentionCheckInterval, o.FlushCheckInterval, o.CheckpointInterval = 5*time.Millisecond, 5*time.Millisecond, 5*time.Millisecond
	})
	cfg := DefaultConfig()
	cfg.FlushMessages, cfg.FlushMs = 1<<40, 1 // page cache only, flushed by the timed loop
	cfg.SegmentBytes, cfg.RetentionMs = 1000, 1000
	tp := TopicPartition{Topic: "t"}
	l, _ := m.GetOrCreate(tp, cfg)
	for i := 0; i < 30; i++ {
		mustAppend(t, l, logtest.BatchWith(logtest.BatchOptions{Records: 3, ValueSize: 40, Timestamp: 1}))
	}
	if l.NeedsFlush(AppendInfo{LastOffset: l.LogEndOffset() - 1}) && l.TimeSinceFlush(time.Now()) < time.Millisecond {
		t.Fatal("NeedsFlush asked for a flush right after one with flush.messages huge")
	}
	m.Start()
	deadline := time.Now().Add(10 * time.Second)
	for {
		rp, _ := ReadOffsetCheckpoint(mem, "/data/"+RecoveryPointCheckpointFile)
		if l.RecoveryPoint() == 90 && l.LogStartOffset() == 90 && rp[tp] == 90 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("loops did not flush, expire and checkpoint: recovery point %d, log start %d, checkpoint %v",
				l.RecoveryPoint(), l.LogStartOffset(), rp)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
