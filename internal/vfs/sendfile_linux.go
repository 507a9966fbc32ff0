//go:build linux

package vfs

import (
	"io"
	"os"
	"syscall"
)

// SendFile sends n bytes of f, from offset off, to the socket behind dst with
// sendfile(2): from the page cache to the socket, never through user space. It
// reports handled=false, having sent nothing, when f is not an OS file (the memory
// filesystem of tests); the caller then copies. The file offset is passed explicitly,
// so concurrent senders of one file do not disturb each other. A file shorter than
// off+n (truncated meanwhile) is io.ErrUnexpectedEOF: the caller has announced n
// bytes and must close the connection.
func SendFile(dst syscall.RawConn, f File, off int64, n int) (handled bool, err error) {
	of, ok := f.(*os.File)
	if !ok {
		return false, nil
	}
	src, err := of.SyscallConn()
	if err != nil {
		return true, err
	}
	var sendErr error
	ctlErr := src.Control(func(srcFd uintptr) {
		writeErr := dst.Write(func(dstFd uintptr) bool {
			for n > 0 {
				w, err := syscall.Sendfile(int(dstFd), int(srcFd), &off, min(n, 1<<30))
				if w > 0 {
					n -= w
				}
				switch {
				case err == syscall.EAGAIN:
					return false // wait until the socket is writable
				case err == syscall.EINTR:
				case err != nil:
					sendErr = err
					return true
				case w == 0:
					sendErr = io.ErrUnexpectedEOF
					return true
				}
			}
			return true
		})
		if sendErr == nil {
			sendErr = writeErr
		}
	})
	if ctlErr != nil {
		return true, ctlErr
	}
	return true, sendErr
}

// CanSendFile reports whether SendFile can send from f.
func CanSendFile(f File) bool {
	_, ok := f.(*os.File)
	return ok
}
