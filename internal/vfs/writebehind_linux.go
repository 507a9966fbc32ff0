//go:build linux

package vfs

import "golang.org/x/sys/unix"

// WriteBehind starts writing f's dirty pages to the disk without waiting for them
// (sync_file_range SYNC_FILE_RANGE_WRITE). The next Sync then finds most of the data
// written or in flight: the disk works while appends go on, instead of in one burst
// per fsync. It makes nothing durable by itself, and errors are left to that Sync.
func WriteBehind(f File) {
	withFD(f, func(fd int) { _ = unix.SyncFileRange(fd, 0, 0, unix.SYNC_FILE_RANGE_WRITE) })
}
