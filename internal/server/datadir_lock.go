package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// dataDirLockName is the lock file in a node's data directory, as Kafka's `.lock`:
// a node holds an exclusive flock on it for as long as it runs, so that a second
// process on the same directory fails at once instead of waiting inside Raft's bolt
// store (whose own flock has no timeout) or corrupting the logs.
const dataDirLockName = ".lock"

// dataDirLock is a held lock on a data directory.
type dataDirLock struct{ f *os.File }

// lockDataDir takes the exclusive lock on dir without waiting and writes this
// process's pid into the lock file, so that the next one can name the holder.
func lockDataDir(dir string) (*dataDirLock, error) {
	path := filepath.Join(dir, dataDirLockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("data directory %s: lock file: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("data directory %s is in use by another runnel process (%s)", dir, lockHolder(path))
		}
		return nil, fmt.Errorf("data directory %s: lock %s: %w", dir, path, err)
	}
	// The pid is only a hint for the error above; failing to write it is harmless.
	if f.Truncate(0) == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &dataDirLock{f: f}, nil
}

// lockHolder names the process in the lock file at path: "pid N", or "pid unknown"
// while the holder has not written it yet.
func lockHolder(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "pid unknown"
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return "pid unknown"
	}
	return "pid " + strconv.Itoa(pid)
}

// release drops the lock. The file stays: removing it would let a third process
// lock a new file while a second still waits on the old one.
func (l *dataDirLock) release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
