package vfs

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"sync"
	"syscall"
	"testing"
)

func mustOpen(t *testing.T, m FS, name string, flag int) File {
	t.Helper()
	f, err := m.OpenFile(name, flag, 0o644)
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	return f
}

func content(t *testing.T, m FS, name string) []byte {
	t.Helper()
	b, err := ReadFile(m, name)
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return b
}

// TestMemMatchesOS runs the same operations on Mem and on the OS and compares.
func TestMemMatchesOS(t *testing.T) {
	for name, m := range map[string]FS{"mem": NewMem(), "os": OS()} {
		t.Run(name, func(t *testing.T) {
			dir := "/d"
			if name == "os" {
				dir = t.TempDir() + "/d"
			}
			if _, err := m.OpenFile(dir+"/x", os.O_CREATE|os.O_RDWR, 0o644); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("create in a missing dir: %v", err)
			}
			if err := m.MkdirAll(dir+"/sub", 0o755); err != nil {
				t.Fatal(err)
			}
			f := mustOpen(t, m, dir+"/a", os.O_CREATE|os.O_RDWR)
			f.Write([]byte("hello "))
			f.WriteAt([]byte("world"), 6)
			f.WriteAt([]byte("J"), 0)
			if fi, _ := f.Stat(); fi.Size() != 11 {
				t.Fatalf("size %d", fi.Size())
			}
			buf := make([]byte, 20)
			n, err := f.ReadAt(buf, 6)
			if n != 5 || err != io.EOF || string(buf[:n]) != "world" {
				t.Fatalf("ReadAt = %d %v %q", n, err, buf[:n])
			}
			f.Truncate(5)
			f.Close()
			if got := content(t, m, dir+"/a"); string(got) != "Jello" {
				t.Fatalf("content %q", got)
			}
			if _, err := m.OpenFile(dir+"/a", os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o644); !errors.Is(err, fs.ErrExist) {
				t.Fatalf("O_EXCL: %v", err)
			}
			if err := m.Rename(dir+"/a", dir+"/sub/b"); err != nil {
				t.Fatal(err)
			}
			names, _ := m.ReadDir(dir)
			sub, _ := m.ReadDir(dir + "/sub")
			if len(names) != 1 || names[0] != "sub" || len(sub) != 1 || sub[0] != "b" {
				t.Fatalf("ReadDir %v %v", names, sub)
			}
			if err := m.Rename(dir+"/sub", dir+"/moved"); err != nil {
				t.Fatal(err)
			}
			if got := content(t, m, dir+"/moved/b"); string(got) != "Jello" {
				t.Fatalf("after dir rename %q", got)
			}
			if err := m.Remove(dir + "/moved"); err == nil {
				t.Fatal("removed a non-empty dir")
			}
			if err := m.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			if _, err := m.Stat(dir + "/moved/b"); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("stat after RemoveAll: %v", err)
			}
		})
	}
}

func TestMemCrashCloneKeepsSyncedData(t *testing.T) {
	m := NewMem()
	m.MkdirAll("/d", 0o755)
	f := mustOpen(t, m, "/d/log", os.O_CREATE|os.O_RDWR)
	synced := bytes.Repeat([]byte("s"), 1000)
	f.Write(synced)
	f.Sync()
	tail := bytes.Repeat([]byte("u"), 1000)
	f.Write(tail)
	sawPartial, sawTorn, sawNone := false, false, false
	for seed := int64(0); seed < 200; seed++ {
		got := content(t, m.CrashClone(seed), "/d/log")
		if !bytes.Equal(got[:1000], synced) {
			t.Fatalf("seed %d: synced prefix lost", seed)
		}
		rest := got[1000:]
		switch {
		case len(rest) == 0:
			sawNone = true
		case !bytes.Equal(rest, tail[:len(rest)]):
			sawTorn = true
		default:
			sawPartial = true
		}
		if again := content(t, m.CrashClone(seed), "/d/log"); !bytes.Equal(again, got) {
			t.Fatalf("seed %d: CrashClone is not deterministic", seed)
		}
	}
	if !sawPartial || !sawTorn || !sawNone {
		t.Fatalf("crash outcomes partial=%v torn=%v none=%v: want all", sawPartial, sawTorn, sawNone)
	}
	// The original is unchanged and a clone is fully synced.
	if got := content(t, m, "/d/log"); len(got) != 2000 {
		t.Fatalf("original changed: %d bytes", len(got))
	}
	c := m.CrashClone(1)
	if a, b := content(t, c, "/d/log"), content(t, c.CrashClone(2), "/d/log"); !bytes.Equal(a, b) {
		t.Fatal("a clone's content is not durable")
	}
}

func TestMemCrashCloneLosesUnsyncedOverwrite(t *testing.T) {
	m := NewMem()
	m.MkdirAll("/d", 0o755)
	f := mustOpen(t, m, "/d/f", os.O_CREATE|os.O_RDWR)
	f.Write([]byte("aaaa"))
	f.Sync()
	f.WriteAt([]byte("bb"), 1)
	f.Write([]byte("cccc"))
	for seed := int64(0); seed < 20; seed++ {
		if got := content(t, m.CrashClone(seed), "/d/f"); string(got) != "aaaa" {
			t.Fatalf("seed %d: %q, want the synced content", seed, got)
		}
	}
	f.Truncate(2)
	f.Sync()
	if got := content(t, m.CrashClone(0), "/d/f"); string(got) != "ab" {
		t.Fatalf("after synced truncate: %q", got)
	}
}

func TestMemInject(t *testing.T) {
	m := NewMem()
	m.MkdirAll("/d", 0o755)
	f := mustOpen(t, m, "/d/a.log", os.O_CREATE|os.O_RDWR)
	m.Inject(OpWrite, "/d/*.log", syscall.ENOSPC)
	if _, err := f.Write([]byte("x")); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write: %v, want ENOSPC", err)
	}
	if _, err := f.Write([]byte("y")); err != nil {
		t.Fatalf("the fault fired twice: %v", err)
	}
	m.Inject(OpSync, "", syscall.EIO)
	if err := f.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("sync: %v", err)
	}
	m.Inject(OpOpen, "/d/other", syscall.EACCES)
	if _, err := m.OpenFile("/d/a.log", os.O_RDONLY, 0); err != nil {
		t.Fatalf("fault on another path fired: %v", err)
	}
	if _, err := m.OpenFile("/d/other", os.O_CREATE|os.O_RDWR, 0o644); !errors.Is(err, syscall.EACCES) {
		t.Fatalf("open: %v", err)
	}
	m.Inject(OpRename, "/d/a.log", syscall.EIO)
	if err := m.Rename("/d/a.log", "/d/b.log"); !errors.Is(err, syscall.EIO) {
		t.Fatalf("rename: %v", err)
	}
	if got := content(t, m, "/d/a.log"); string(got) != "y" {
		t.Fatalf("content %q", got)
	}
}

func TestMemHandlesSurviveRemove(t *testing.T) {
	m := NewMem()
	m.MkdirAll("/d", 0o755)
	f := mustOpen(t, m, "/d/a", os.O_CREATE|os.O_RDWR)
	f.Write([]byte("data"))
	m.Remove("/d/a")
	buf := make([]byte, 4)
	if _, err := f.ReadAt(buf, 0); err != nil || string(buf) != "data" {
		t.Fatalf("read after remove: %v %q", err, buf)
	}
	f.Close()
	if _, err := f.ReadAt(buf, 0); err == nil {
		t.Fatal("read after close succeeded")
	}
}

func TestMemConcurrent(t *testing.T) {
	m := NewMem()
	m.MkdirAll("/d", 0o755)
	f := mustOpen(t, m, "/d/a", os.O_CREATE|os.O_RDWR)
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 8)
			for i := 0; i < 500; i++ {
				f.WriteAt(buf, int64(i*8))
				f.ReadAt(buf, int64(i*4))
				if i%50 == 0 {
					f.Sync()
					m.CrashClone(int64(i))
				}
			}
		}()
	}
	wg.Wait()
	if fi, _ := f.Stat(); fi.Size() != 4000 {
		t.Fatalf("size %d", fi.Size())
	}
}
