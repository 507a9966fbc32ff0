package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Abort stops the node as kill -9 stops its process, for tests of in-process nodes
// (internal/clustertest's virtual and in-process modes): the caller first takes the
// node's network away (nodenet.Mem.Crash), so nothing the node does from then on
// reaches another node or a client; Abort then stops every part without a controlled
// shutdown (no leadership handed over, no ShouldShutdown asked of the controller), so
// the rest of the cluster learns of the death only as it would of a crash: refused
// dials, reset connections, a session that expires.
//
// The data directory a restart finds is the one a kill -9 at the moment of the call
// leaves: what was written is in the page cache either way, and nothing written by
// the stop is kept, so no checkpoint is newer than the last one the running node
// wrote, no producer snapshot or index is written at the log end, and there is no
// clean-shutdown marker: the restart recovers from the recovery points, as after a
// crash. The parts of a node cannot stop without writing (a log's Close flushes,
// writes its indexes and a producer snapshot; the log manager's writes the
// checkpoints and the marker), so Abort takes the directory away from them first:
// it is renamed aside, atomically, before the parts stop, so that every write by
// path (a checkpoint's temporary file and rename, an index, a snapshot, the marker)
// fails or lands in a fresh directory that is then discarded, and is renamed back
// once they have. What still reaches the files are writes through descriptors opened
// before the rename: fsyncs, which change no content, and the last appends of
// requests already being served, which a process killed an instant later would have
// made too.
func (n *Node) Abort() error {
	n.aborted.Store(true)
	n.logger.Info("aborting as a killed process: the data directory is set aside while the node stops, so what the stop writes is not kept (its write errors below are expected)", "data_dir", n.cfg.DataDir)
	aside, err := setAside(n.cfg.DataDir)
	if err != nil {
		// The crash cannot be made exact: stop anyway, and say why.
		return errors.Join(err, n.close(true))
	}
	// The stop's errors (writes that found no directory) are what a dead process
	// would not have seen at all: they are not the caller's concern.
	n.close(true)
	return aside.restore()
}

// asideDir is a data directory renamed aside by setAside.
type asideDir struct{ dir, aside string }

// setAside renames dir to a sibling name, which must not exist.
func setAside(dir string) (asideDir, error) {
	dir = filepath.Clean(dir)
	a := asideDir{dir: dir, aside: dir + ".aborting"}
	if _, err := os.Lstat(a.aside); err == nil {
		return a, fmt.Errorf("abort: %s exists (left by an abort that did not finish): not setting %s aside", a.aside, dir)
	}
	if err := os.Rename(dir, a.aside); err != nil {
		return a, fmt.Errorf("abort: setting the data directory aside: %w", err)
	}
	return a, nil
}

// restore discards whatever the stopping node created at the data directory's path
// and puts the directory back.
func (a asideDir) restore() error {
	if err := os.RemoveAll(a.dir); err != nil {
		return fmt.Errorf("abort: removing what the stop wrote at %s: %w", a.dir, err)
	}
	if err := os.Rename(a.aside, a.dir); err != nil {
		return fmt.Errorf("abort: putting the data directory back: %w", err)
	}
	return nil
}

// stopLifecycle stops the heartbeats and closes the controller channel, without the
// controlled shutdown controlledShutdown runs.
func (n *Node) stopLifecycle() {
	if n.ctrl != nil {
		n.ctrl.Leaving()
	}
	if l := n.lifecycle.Swap(nil); l != nil {
		l.Stop()
	}
	if n.admin != nil {
		n.admin.Channel().Close()
	}
}
