package log

import (
	"testing"

	"github.com/runnel-io/runnel/internal/vfs"
)

func TestCleanShutdownMarker(t *testing.T) {
	fs := vfs.NewMem()
	open := func(f vfs.FS) *Manager {
		m, err := NewManager(ManagerOptions{FS: f, DataDir: "/data", Defaults: DefaultConfig()})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	m := open(fs)
	if m.HadCleanShutdown() {
		t.Fatal("a new data dir reports a clean shutdown")
	}
	if _, err := m.GetOrCreate(TopicPartition{Topic: "t"}, DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	// A crash while running: the marker was removed at open, so none survives.
	if open(fs.CrashClone(1)).HadCleanShutdown() {
		t.Fatal("a crashed run reports a clean shutdown")
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m2 := open(fs)
	if !m2.HadCleanShutdown() {
		t.Fatal("a closed run does not report a clean shutdown")
	}
	// The marker is consumed: crashing the second run is unclean again.
	if open(fs.CrashClone(2)).HadCleanShutdown() {
		t.Fatal("the marker outlived the open that consumed it")
	}
	m2.Close()
}
