package vfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Op names a filesystem operation for (*Mem).Inject.
type Op int

const (
	OpOpen     Op = iota + 1 // OpenFile
	OpRead                   // Read, ReadAt
	OpWrite                  // Write, WriteAt
	OpSync                   // File.Sync
	OpTruncate               // File.Truncate, and OpenFile with O_TRUNC
	OpRename                 // FS.Rename
	OpRemove                 // FS.Remove, FS.RemoveAll
	OpMkdir                  // FS.MkdirAll
	OpSyncDir                // FS.SyncDir
	OpStat                   // FS.Stat, File.Stat
)

var opNames = map[Op]string{
	OpOpen: "open", OpRead: "read", OpWrite: "write", OpSync: "sync", OpTruncate: "truncate",
	OpRename: "rename", OpRemove: "remove", OpMkdir: "mkdir", OpSyncDir: "syncdir", OpStat: "stat",
}

func (o Op) String() string {
	if s, ok := opNames[o]; ok {
		return s
	}
	return fmt.Sprintf("op(%d)", int(o))
}

// Mem is an in-memory FS for tests that simulates crashes and disk errors.
//
// Durability model: namespace operations (create, rename, remove, mkdir) are durable
// as soon as they return, as if every directory were synced after each of them; SyncDir
// only checks for injected faults. File contents are durable only up to the last
// File.Sync: CrashClone keeps the synced content of every file plus, at random, a
// prefix of what was appended after it (possibly with its last bytes torn). Unsynced
// overwrites below the end of the synced content are always lost.
//
// Open handles survive Remove and Rename of their file, as on Unix. Mem is safe for
// concurrent use.
type Mem struct {
	mu sync.Mutex
	// guarded by mu:
	files  map[string]*memNode // cleaned path -> file
	dirs   map[string]bool     // cleaned path -> exists; "/" and "." always exist
	faults []fault
}

type fault struct {
	op   Op
	path string // "" matches every path; otherwise an exact path or a filepath.Match pattern
	err  error
	// short is how many bytes a failing write stores before it fails (a disk that
	// fills part-way through a write); 0 stores none.
	short int
}

// shortWrite is a write fault that stores the first n bytes before failing with err.
type shortWrite struct {
	n   int
	err error
}

func (e *shortWrite) Error() string { return e.err.Error() }
func (e *shortWrite) Unwrap() error { return e.err }

// memNode is one file's content. Invariant: synced never aliases data.
type memNode struct {
	mu sync.RWMutex
	// guarded by mu:
	data   []byte
	synced []byte // durable content as of the last Sync
	// dirtyFrom is the smallest position written or truncated since the last Sync;
	// it is >= len(synced) when only appends happened since then.
	dirtyFrom int64
	modTime   time.Time
}

// NewMem returns an empty memory filesystem.
func NewMem() *Mem {
	return &Mem{files: map[string]*memNode{}, dirs: map[string]bool{}}
}

// Inject makes the next operation op on a path matching path fail once with err.
// path "" matches any path; otherwise it is an exact path or a filepath.Match pattern
// (e.g. "/data/t-0/*.log"). Faults fire in the order they were injected.
func (m *Mem) Inject(op Op, path string, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.faults = append(m.faults, fault{op: op, path: path, err: err})
}

// InjectShortWrite makes the next write on a path matching path store its first n
// bytes and then fail with err, as a disk that fills part-way through a write does.
func (m *Mem) InjectShortWrite(path string, n int, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.faults = append(m.faults, fault{op: OpWrite, path: path, err: err, short: n})
}

// fault consumes and returns the first injected fault matching (op, name), wrapped in
// an *os.PathError so that errors.Is(err, syscall.ENOSPC) works as with the OS.
func (m *Mem) fault(op Op, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.faultLocked(op, name)
}

func (m *Mem) faultLocked(op Op, name string) error {
	for i, f := range m.faults {
		if f.op != op || !pathMatches(f.path, name) {
			continue
		}
		m.faults = append(m.faults[:i:i], m.faults[i+1:]...)
		pe := &os.PathError{Op: op.String(), Path: name, Err: f.err}
		if f.short > 0 {
			return &shortWrite{n: f.short, err: pe}
		}
		return pe
	}
	return nil
}

func pathMatches(pattern, name string) bool {
	if pattern == "" || pattern == name {
		return true
	}
	ok, _ := filepath.Match(pattern, name)
	return ok
}

func (m *Mem) dirExistsLocked(dir string) bool {
	return dir == "/" || dir == "." || m.dirs[dir]
}

func perr(op, name string, err error) error { return &os.PathError{Op: op, Path: name, Err: err} }

// OpenFile implements FS.
func (m *Mem) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	name = filepath.Clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.faultLocked(OpOpen, name); err != nil {
		return nil, err
	}
	if m.dirs[name] {
		return nil, perr("open", name, syscall.EISDIR)
	}
	n := m.files[name]
	switch {
	case n != nil && flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0:
		return nil, perr("open", name, fs.ErrExist)
	case n == nil && flag&os.O_CREATE == 0:
		return nil, perr("open", name, fs.ErrNotExist)
	case n == nil:
		if !m.dirExistsLocked(filepath.Dir(name)) {
			return nil, perr("open", name, fs.ErrNotExist)
		}
		n = &memNode{modTime: time.Now()}
		m.files[name] = n
	}
	if flag&os.O_TRUNC != 0 && flag&(os.O_WRONLY|os.O_RDWR) != 0 {
		if err := m.faultLocked(OpTruncate, name); err != nil {
			return nil, err
		}
		n.truncate(0)
	}
	return &memFile{fs: m, node: n, name: name, flag: flag}, nil
}

// Remove implements FS.
func (m *Mem) Remove(name string) error {
	name = filepath.Clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.faultLocked(OpRemove, name); err != nil {
		return err
	}
	if _, ok := m.files[name]; ok {
		delete(m.files, name)
		return nil
	}
	if !m.dirs[name] {
		return perr("remove", name, fs.ErrNotExist)
	}
	if len(m.childrenLocked(name)) > 0 {
		return perr("remove", name, syscall.ENOTEMPTY)
	}
	delete(m.dirs, name)
	return nil
}

// RemoveAll implements FS.
func (m *Mem) RemoveAll(name string) error {
	name = filepath.Clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.faultLocked(OpRemove, name); err != nil {
		return err
	}
	prefix := name + string(filepath.Separator)
	for p := range m.files {
		if p == name || strings.HasPrefix(p, prefix) {
			delete(m.files, p)
		}
	}
	for p := range m.dirs {
		if p == name || strings.HasPrefix(p, prefix) {
			delete(m.dirs, p)
		}
	}
	return nil
}

// Rename implements FS. Renaming a directory moves everything below it.
func (m *Mem) Rename(oldname, newname string) error {
	oldname, newname = filepath.Clean(oldname), filepath.Clean(newname)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.faultLocked(OpRename, oldname); err != nil {
		return err
	}
	if !m.dirExistsLocked(filepath.Dir(newname)) {
		return perr("rename", newname, fs.ErrNotExist)
	}
	if n, ok := m.files[oldname]; ok {
		if m.dirs[newname] {
			return perr("rename", newname, syscall.EISDIR)
		}
		delete(m.files, oldname)
		m.files[newname] = n
		return nil
	}
	if !m.dirs[oldname] {
		return perr("rename", oldname, fs.ErrNotExist)
	}
	if _, ok := m.files[newname]; ok || len(m.childrenLocked(newname)) > 0 {
		return perr("rename", newname, fs.ErrExist)
	}
	m.moveTreeLocked(oldname, newname)
	return nil
}

func (m *Mem) moveTreeLocked(oldname, newname string) {
	prefix := oldname + string(filepath.Separator)
	for p, n := range m.files {
		if strings.HasPrefix(p, prefix) {
			delete(m.files, p)
			m.files[newname+p[len(oldname):]] = n
		}
	}
	for p := range m.dirs {
		if p == oldname || strings.HasPrefix(p, prefix) {
			delete(m.dirs, p)
			m.dirs[newname+p[len(oldname):]] = true
		}
	}
}

// MkdirAll implements FS.
func (m *Mem) MkdirAll(dir string, perm os.FileMode) error {
	dir = filepath.Clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.faultLocked(OpMkdir, dir); err != nil {
		return err
	}
	for d := dir; !m.dirExistsLocked(d); d = filepath.Dir(d) {
		if _, ok := m.files[d]; ok {
			return perr("mkdir", d, syscall.ENOTDIR)
		}
		m.dirs[d] = true
	}
	return nil
}

// childrenLocked lists the names of the direct children of dir.
func (m *Mem) childrenLocked(dir string) []string {
	var names []string
	for p := range m.files {
		if filepath.Dir(p) == dir {
			names = append(names, filepath.Base(p))
		}
	}
	for p := range m.dirs {
		if p != dir && filepath.Dir(p) == dir {
			names = append(names, filepath.Base(p))
		}
	}
	return names
}

// ReadDir implements FS.
func (m *Mem) ReadDir(dir string) ([]string, error) {
	dir = filepath.Clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.dirExistsLocked(dir) {
		return nil, perr("readdir", dir, fs.ErrNotExist)
	}
	names := m.childrenLocked(dir)
	sort.Strings(names)
	return names, nil
}

// Stat implements FS.
func (m *Mem) Stat(name string) (os.FileInfo, error) {
	name = filepath.Clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.faultLocked(OpStat, name); err != nil {
		return nil, err
	}
	if n, ok := m.files[name]; ok {
		return n.stat(name), nil
	}
	if m.dirExistsLocked(name) {
		return memInfo{name: filepath.Base(name), dir: true}, nil
	}
	return nil, perr("stat", name, fs.ErrNotExist)
}

// SyncDir implements FS. Namespace operations are already durable (see Mem), so it
// only checks that dir exists and for injected faults.
func (m *Mem) SyncDir(dir string) error {
	dir = filepath.Clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.faultLocked(OpSyncDir, dir); err != nil {
		return err
	}
	if !m.dirExistsLocked(dir) {
		return perr("sync", dir, fs.ErrNotExist)
	}
	return nil
}

// CrashClone returns a new Mem holding what a machine crash at this instant would
// leave on disk: every file keeps its synced content plus, chosen by a RNG seeded with
// seed, a prefix of its unsynced appended tail whose last bytes may be torn (replaced
// with random bytes). Directories and names are kept as they are. Injected faults are
// not copied. The receiver is unchanged and stays usable.
func (m *Mem) CrashClone(seed int64) *Mem {
	rng := rand.New(rand.NewSource(seed))
	m.mu.Lock()
	defer m.mu.Unlock()
	c := NewMem()
	for d := range m.dirs {
		c.dirs[d] = true
	}
	// Sort names so that the same seed gives the same result.
	names := make([]string, 0, len(m.files))
	for p := range m.files {
		names = append(names, p)
	}
	sort.Strings(names)
	for _, p := range names {
		c.files[p] = m.files[p].crashCopy(rng)
	}
	return c
}

func (n *memNode) crashCopy(rng *rand.Rand) *memNode {
	n.mu.RLock()
	defer n.mu.RUnlock()
	data := append([]byte(nil), n.synced...)
	if n.dirtyFrom >= int64(len(n.synced)) && len(n.data) > len(n.synced) {
		tail := n.data[len(n.synced):]
		// Nothing, everything or a random prefix, each often enough to matter.
		var keep int
		switch rng.Intn(4) {
		case 0:
		case 1:
			keep = len(tail)
		default:
			keep = rng.Intn(len(tail) + 1)
		}
		data = append(data, tail[:keep]...)
		if keep > 0 && rng.Intn(3) == 0 {
			torn := 1 + rng.Intn(min(keep, 16))
			rng.Read(data[len(data)-torn:])
		}
	}
	return &memNode{data: data, synced: append([]byte(nil), data...), dirtyFrom: int64(len(data)), modTime: n.modTime}
}

func (n *memNode) truncate(size int64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.truncateLocked(size)
}

func (n *memNode) truncateLocked(size int64) {
	if size <= int64(len(n.data)) {
		n.data = n.data[:size]
	} else {
		n.data = append(n.data, make([]byte, size-int64(len(n.data)))...)
	}
	n.dirtyFrom = min(n.dirtyFrom, size)
	n.modTime = time.Now()
}

func (n *memNode) writeAt(p []byte, off int64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	end := off + int64(len(p))
	if end > int64(len(n.data)) {
		if off > int64(len(n.data)) {
			n.truncateLocked(off)
		}
		n.data = append(n.data[:off], p...)
	} else {
		copy(n.data[off:], p)
	}
	n.dirtyFrom = min(n.dirtyFrom, off)
	n.modTime = time.Now()
}

func (n *memNode) sync() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.dirtyFrom >= int64(len(n.synced)) && len(n.data) >= len(n.synced) {
		n.synced = append(n.synced, n.data[len(n.synced):]...)
	} else {
		n.synced = append([]byte(nil), n.data...)
	}
	n.dirtyFrom = int64(len(n.synced))
}

func (n *memNode) size() int64 {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return int64(len(n.data))
}

func (n *memNode) stat(name string) memInfo {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return memInfo{name: filepath.Base(name), size: int64(len(n.data)), modTime: n.modTime}
}

// memFile is an open handle. The position is guarded by mu; the content by node.mu.
type memFile struct {
	fs     *Mem
	node   *memNode
	name   string
	flag   int
	closed atomic.Bool

	mu  sync.Mutex
	pos int64 // guarded by mu
}

var errClosed = errors.New("file already closed")

func (f *memFile) check(op Op, write bool) error {
	if f.closed.Load() {
		return perr(op.String(), f.name, errClosed)
	}
	if write && f.flag&(os.O_WRONLY|os.O_RDWR) == 0 {
		return perr(op.String(), f.name, syscall.EBADF)
	}
	if !write && op == OpRead && f.flag&os.O_WRONLY != 0 {
		return perr(op.String(), f.name, syscall.EBADF)
	}
	return f.fs.fault(op, f.name)
}

func (f *memFile) Read(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.ReadAt(p, f.pos)
	f.pos += int64(n)
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.check(OpRead, false); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, perr("read", f.name, syscall.EINVAL)
	}
	f.node.mu.RLock()
	defer f.node.mu.RUnlock()
	if off >= int64(len(f.node.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.node.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(OpWrite, true); err != nil {
		return 0, err
	}
	if f.flag&os.O_APPEND != 0 {
		f.pos = f.node.size()
	}
	f.node.writeAt(p, f.pos)
	f.pos += int64(len(p))
	return len(p), nil
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	if f.flag&os.O_APPEND != 0 {
		return 0, errors.New("vfs: WriteAt with O_APPEND")
	}
	if err := f.check(OpWrite, true); err != nil {
		var sw *shortWrite
		if errors.As(err, &sw) && off >= 0 {
			n := min(sw.n, len(p))
			f.node.writeAt(p[:n], off)
			return n, sw.err
		}
		return 0, err
	}
	if off < 0 {
		return 0, perr("write", f.name, syscall.EINVAL)
	}
	f.node.writeAt(p, off)
	return len(p), nil
}

func (f *memFile) Close() error {
	if f.closed.Swap(true) {
		return perr("close", f.name, errClosed)
	}
	return nil
}

func (f *memFile) Sync() error {
	if err := f.check(OpSync, false); err != nil {
		return err
	}
	f.node.sync()
	return nil
}

func (f *memFile) Truncate(size int64) error {
	if err := f.check(OpTruncate, true); err != nil {
		return err
	}
	if size < 0 {
		return perr("truncate", f.name, syscall.EINVAL)
	}
	f.node.truncate(size)
	return nil
}

func (f *memFile) Seek(offset int64, whence int) (int64, error) {
	if f.closed.Load() {
		return 0, perr("seek", f.name, errClosed)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var abs int64
	switch whence {
	case io.SeekStart:
		abs = offset
	case io.SeekCurrent:
		abs = f.pos + offset
	case io.SeekEnd:
		abs = f.node.size() + offset
	default:
		return 0, perr("seek", f.name, syscall.EINVAL)
	}
	if abs < 0 {
		return 0, perr("seek", f.name, syscall.EINVAL)
	}
	f.pos = abs
	return abs, nil
}

func (f *memFile) Stat() (os.FileInfo, error) {
	if err := f.check(OpStat, false); err != nil {
		return nil, err
	}
	return f.node.stat(f.name), nil
}

func (f *memFile) Name() string { return f.name }

// memInfo implements os.FileInfo.
type memInfo struct {
	name    string
	size    int64
	dir     bool
	modTime time.Time
}

func (i memInfo) Name() string { return i.name }
func (i memInfo) Size() int64  { return i.size }
func (i memInfo) Mode() os.FileMode {
	if i.dir {
		return os.ModeDir | 0o755
	}
	return 0o644
}
func (i memInfo) ModTime() time.Time { return i.modTime }
func (i memInfo) IsDir() bool        { return i.dir }
func (i memInfo) Sys() any           { return nil }
