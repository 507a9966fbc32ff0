//go:build linux

package testutil

import (
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Resident reports, page by page (os.Getpagesize), whether the first size bytes of the
// file at path are in the page cache: mincore of a mapping, which faults nothing in.
func Resident(t testing.TB, path string, size int64) []bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if size == 0 {
		return nil
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatalf("mmap %s: %v", path, err)
	}
	defer unix.Munmap(m)
	page := int64(os.Getpagesize())
	vec := make([]byte, (size+page-1)/page)
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatalf("mincore %s: %v", path, errno)
	}
	out := make([]bool, len(vec))
	for i, v := range vec {
		out[i] = v&1 != 0
	}
	return out
}

// SkipUnlessPageCacheDrops skips t where the kernel keeps fadvise-dropped pages of
// files in dir (tmpfs keeps them: its page cache is the file). It drops with the
// system call itself, so that a broken drop in the code under test still fails.
func SkipUnlessPageCacheDrops(t testing.TB, dir string) {
	t.Helper()
	path := filepath.Join(dir, "page-cache-probe")
	if err := os.WriteFile(path, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(path)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Skipf("fadvise: %v", err)
	}
	for _, r := range Resident(t, path, 1<<20) {
		if r {
			t.Skipf("the filesystem of %s keeps dropped pages in the cache", dir)
		}
	}
}
