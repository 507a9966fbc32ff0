//go:build linux

package vfs

import (
	"os"

	"golang.org/x/sys/unix"
)

// DropCache asks the kernel to drop the page cache of f's bytes [off, off+n)
// (posix_fadvise POSIX_FADV_DONTNEED). Only clean pages are dropped, so it never loses
// data: a dirty page stays (its write-back is started) and a later read of a dropped
// page reads the disk. A hint only: errors (a closed file, an fs without the call) are
// ignored, and a file of another FS is left alone.
func DropCache(f File, off, n int64) {
	if n <= 0 {
		return
	}
	withFD(f, func(fd int) { _ = unix.Fadvise(fd, off, n, unix.FADV_DONTNEED) })
}

// withFD runs fn with f's descriptor when f is an OS file, while the descriptor cannot
// be closed under it; for any other File, or a closed one, it does nothing.
func withFD(f File, fn func(fd int)) {
	of, ok := f.(*os.File)
	if !ok {
		return
	}
	rc, err := of.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) { fn(int(fd)) })
}
