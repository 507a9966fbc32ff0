//go:build !linux

package vfs

// DropCache does nothing here (see the Linux version).
func DropCache(f File, off, n int64) {}
