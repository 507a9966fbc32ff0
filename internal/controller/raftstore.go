package controller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// diskStore is the Raft log and stable store (raft-boltdb, __raft/raft.db), watched
// for a full disk.
//
// A voter whose metadata disk is full cannot do a Raft leader's first duty, writing
// each entry to its own log before it counts as stored, and hashicorp/raft handles
// that badly on its own: a leader with nothing to write never finds out (heartbeats
// need no disk); one whose StoreLogs fails steps down, but the voters that heard from
// it last grant it their pre-votes at once, so it is elected again and fails again;
// and a node that cannot store a new term panics (setCurrentTerm). So while the store
// is full (a write failed with ENOSPC or EDQUOT, the filesystem has almost no room
// left, or the node's partitions found the disk full: MarkDiskFull):
//
//   - an active controller hands its leadership to another voter (watchDisk);
//   - the node asks for no votes and accepts no TimeoutNow, so it is not elected
//     (patientTransport's RequestVote, RequestPreVote and Consumer, below);
//   - it refuses the requests that would make it store a newer term, which it may
//     not be able to (a panic), and whose entries it could not store anyway: it
//     stays at its term, behind the quorum, and takes no part in it;
//
// until a probe finds room in the directory again (hasRoom, every diskProbeInterval);
// it then catches up like a voter that was cut off. The other voters, a majority
// with room, go on meanwhile. Nothing half-written is applied: hashicorp/raft gives
// the FSM only entries the store returned, and a failed bolt transaction writes
// nothing.
type diskStore struct {
	*raftboltdb.BoltStore
	dir string
	// onFull is called (on its own goroutine) once per episode; may be nil.
	onFull func(error)
	// full is set while the store counts as full; wake nudges watchDisk when it is set.
	full  atomic.Bool
	wake  chan struct{}
	mu    sync.Mutex
	cause error // guarded by mu: why the store is full
	// fault, when set (tests only), is asked before every write and every probe of
	// the directory; its error is the disk's.
	fault atomic.Pointer[func(op string) error]
}

// Operations, as fault sees them.
const (
	opStoreLogs = "store logs"
	opDelete    = "delete logs"
	opSet       = "set"
	opStatfs    = "statfs"
	opProbe     = "probe"
)

const (
	// diskLowWater: a metadata filesystem with less free space counts as full before a
	// write fails (a leader with nothing to write would not notice otherwise).
	diskLowWater = 256 << 10
	// diskRoomMin..diskRoomMax bound the free space (1% of the filesystem) it needs
	// to count as having room again, so that a few freed kilobytes do not make it
	// flap; the node's partitions resume at the same margin.
	diskRoomMin = 1 << 20
	diskRoomMax = 64 << 20
	// diskProbeSize is the probe write (quotas do not show in statfs).
	diskProbeSize = 64 << 10
	// diskProbeInterval is how often watchDisk checks the space.
	diskProbeInterval = time.Second
	// resignTimeout bounds one leadership transfer.
	resignTimeout = 5 * time.Second
)

func newDiskStore(bolt *raftboltdb.BoltStore, dir string, onFull func(error)) *diskStore {
	return &diskStore{BoltStore: bolt, dir: dir, onFull: onFull, wake: make(chan struct{}, 1)}
}

func (d *diskStore) injected(op string) error {
	if f := d.fault.Load(); f != nil {
		return (*f)(op)
	}
	return nil
}

// write runs one write of op and notes a full disk.
func (d *diskStore) write(op string, fn func() error) error {
	err := d.injected(op)
	if err == nil {
		err = fn()
	}
	if err != nil && isNoSpace(err) {
		d.markFull(fmt.Errorf("raft log %s: %s: %w", d.dir, op, err))
	}
	return err
}

func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// markFull starts a full-disk episode, unless one is on.
func (d *diskStore) markFull(cause error) {
	d.mu.Lock()
	if d.full.Load() {
		d.mu.Unlock()
		return
	}
	d.cause = cause
	d.full.Store(true)
	d.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default:
	}
	if d.onFull != nil {
		go d.onFull(cause)
	}
}

// isFull reports whether the store counts as full.
func (d *diskStore) isFull() bool { return d != nil && d.full.Load() }

func (d *diskStore) StoreLog(l *raft.Log) error {
	return d.write(opStoreLogs, func() error { return d.BoltStore.StoreLog(l) })
}

func (d *diskStore) StoreLogs(logs []*raft.Log) error {
	return d.write(opStoreLogs, func() error { return d.BoltStore.StoreLogs(logs) })
}

func (d *diskStore) DeleteRange(lo, hi uint64) error {
	return d.write(opDelete, func() error { return d.BoltStore.DeleteRange(lo, hi) })
}

func (d *diskStore) Set(k, v []byte) error {
	return d.write(opSet, func() error { return d.BoltStore.Set(k, v) })
}

func (d *diskStore) SetUint64(k []byte, v uint64) error {
	return d.write(opSet, func() error { return d.BoltStore.SetUint64(k, v) })
}

// freeBytes is the space left to this process in the store's filesystem.
func (d *diskStore) freeBytes() (free, total int64, err error) {
	if err := d.injected(opStatfs); err != nil {
		if isNoSpace(err) {
			return 0, 1, nil
		}
		return 0, 0, err
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(d.dir, &st); err != nil {
		return 0, 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), int64(st.Blocks) * int64(st.Bsize), nil
}

// hasRoom is the probe that ends an episode: room beyond the margin, and a small
// write there succeeds.
func (d *diskStore) hasRoom() error {
	free, total, err := d.freeBytes()
	if err != nil {
		return err
	}
	if margin := min(max(total/100, diskRoomMin), diskRoomMax); free < margin {
		return fmt.Errorf("%d bytes free in %s, want %d", free, d.dir, margin)
	}
	if err := d.injected(opProbe); err != nil {
		return err
	}
	f, err := os.CreateTemp(d.dir, ".disk-probe-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(make([]byte, diskProbeSize))
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

// MarkDiskFull tells the controller that the node found its data disk full (a
// partition's append failed with ENOSPC): the metadata log, in the same directory,
// counts as full too, until a probe finds room there.
func (c *Controller) MarkDiskFull(cause error) {
	if c.store != nil {
		c.store.markFull(cause)
	}
}

// DiskFull reports whether this node's metadata log counts as full: it then takes no
// part in the quorum until there is room again.
func (c *Controller) DiskFull() bool { return c.store.isFull() }

// watchDisk runs the full-disk episodes of the store (see diskStore): it checks the
// free space every diskProbeInterval, hands the leadership away while full, and ends
// the episode once the probe finds room.
func (c *Controller) watchDisk() {
	d := c.store
	tick := time.NewTicker(diskProbeInterval)
	defer tick.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-tick.C:
		case <-d.wake:
		}
		if !d.isFull() {
			if free, _, err := d.freeBytes(); err == nil && free < diskLowWater {
				d.markFull(fmt.Errorf("raft log %s: %d bytes free: %w", d.dir, free, syscall.ENOSPC))
			}
			continue
		}
		if c.IsLeader() {
			c.resignFull()
		}
		if err := d.hasRoom(); err != nil {
			continue
		}
		d.mu.Lock()
		cause := d.cause
		d.full.Store(false)
		d.mu.Unlock()
		c.log.Info("metadata disk has room again: this node takes part in the metadata quorum again and catches up",
			"node", c.cfg.NodeID, "dir", d.dir, "was", cause)
	}
}

// resignFull hands the leadership of a node whose metadata disk is full to another
// voter.
func (c *Controller) resignFull() {
	d := c.store
	d.mu.Lock()
	cause := d.cause
	d.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), resignTimeout)
	defer cancel()
	if err := c.Resign(ctx); err != nil {
		c.log.Warn("metadata disk full: could not hand the metadata quorum's leadership to another voter yet; retrying",
			"node", c.cfg.NodeID, "cause", cause, "err", err)
		return
	}
	c.log.Warn("metadata disk full: handed the metadata quorum's leadership to another voter; this node stays out of the quorum until there is room",
		"node", c.cfg.NodeID, "cause", cause)
}

// errDiskFull answers the Raft requests that a node with a full metadata disk refuses.
var errDiskFull = errors.New("metadata disk full: this node takes no part in the metadata quorum until there is room")

// refuseWhileFull says whether this node, its metadata disk full, must refuse rpc: a
// TimeoutNow (it would campaign), or a request with a newer term (it would have to
// store the term, and would panic if it could not).
func (c *Controller) refuseWhileFull(rpc raft.RPC) bool {
	if !c.store.isFull() {
		return false
	}
	select {
	case <-c.raftSet:
	default:
		return false
	}
	term := c.raft.CurrentTerm()
	switch r := rpc.Command.(type) {
	case *raft.TimeoutNowRequest:
		return true
	case *raft.AppendEntriesRequest:
		return r.Term > term
	case *raft.RequestVoteRequest:
		return r.Term > term
	case *raft.InstallSnapshotRequest:
		return r.Term > term
	}
	return false
}

// RequestVote asks for no vote while the metadata disk is full (the node could not
// lead), so it cannot be elected.
func (p *patientTransport) RequestVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestVoteRequest, resp *raft.RequestVoteResponse) error {
	if p.c.store.isFull() {
		return errDiskFull
	}
	return p.NetworkTransport.RequestVote(id, target, args, resp)
}

// RequestPreVote is RequestVote's pre-vote: a node that stepped down on a failed write
// would win it at once (the voters heard from it last).
func (p *patientTransport) RequestPreVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	if p.c.store.isFull() {
		return errDiskFull
	}
	return p.NetworkTransport.RequestPreVote(id, target, args, resp)
}

// Consumer is the transport's requests, less those refuseWhileFull refuses (answered
// with errDiskFull here, so that Raft never sees them).
func (p *patientTransport) Consumer() <-chan raft.RPC {
	p.consumerOnce.Do(func() {
		in := p.NetworkTransport.Consumer()
		p.consumer = make(chan raft.RPC)
		p.c.wg.Add(1)
		go func() {
			defer p.c.wg.Done()
			for {
				select {
				case rpc := <-in:
					if p.refuse(rpc) {
						continue
					}
					select {
					case p.consumer <- rpc:
					case <-p.c.done:
						rpc.Respond(nil, raft.ErrRaftShutdown)
						return
					}
				case <-p.c.done:
					return
				}
			}
		}()
	})
	return p.consumer
}

// SetHeartbeatHandler filters heartbeats as Consumer filters the other requests (the
// transport hands heartbeats to Raft directly).
func (p *patientTransport) SetHeartbeatHandler(cb func(raft.RPC)) {
	if cb == nil {
		p.NetworkTransport.SetHeartbeatHandler(nil)
		return
	}
	p.NetworkTransport.SetHeartbeatHandler(func(rpc raft.RPC) {
		if !p.refuse(rpc) {
			cb(rpc)
		}
	})
}

// refuse answers rpc with errDiskFull if refuseWhileFull says so.
func (p *patientTransport) refuse(rpc raft.RPC) bool {
	if !p.c.refuseWhileFull(rpc) {
		return false
	}
	if rpc.Reader != nil { // an InstallSnapshot's data follows on the connection
		_, _ = io.Copy(io.Discard, rpc.Reader)
	}
	rpc.Respond(nil, errDiskFull)
	return true
}
