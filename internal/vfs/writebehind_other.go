//go:build !linux

package vfs

// WriteBehind does nothing here (see the Linux version).
func WriteBehind(f File) {}
