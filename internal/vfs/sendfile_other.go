//go:build !linux

package vfs

import "syscall"

// SendFile is not available here: it never handles the send (see the Linux version).
func SendFile(dst syscall.RawConn, f File, off int64, n int) (handled bool, err error) {
	return false, nil
}

// CanSendFile reports whether SendFile can send from f: never here.
func CanSendFile(f File) bool { return false }
