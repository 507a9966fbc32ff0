package server

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/runnel-io/runnel/internal/log"
	"github.com/runnel-io/runnel/internal/replica"
)

// storageFailed reacts to a disk error met by a partition's log: a full disk, or an
// error that took the log offline for writes (a failing disk).
//
// A full disk degrades the node, it does not stop it (a failed write is cut back, so
// the log is intact and takes writes again once there is room). The disk monitor
// reports it in the heartbeats, /readyz and runnel_disk_full; in a cluster the
// controller moves this node's leaderships to in-sync replicas that can write, and
// its follower appends fail (retried every second) until it falls out of the ISRs by
// the lag rule. A probe sees when space is freed: the node then catches up and
// rejoins the ISRs by itself. Nodes that share a full disk all stay up, and keep their
// leaderships (there is nowhere to move them) until space is freed.
//
// Any other disk error stops a node in a cluster, as Kafka halts a broker whose log
// directory failed: the controller fences it and the other replicas take over its
// partitions. A node that stayed up would keep leading partitions it cannot write
// and, as a follower, hold back acks=all until it left the ISR. An offline log is not
// flushed and gets no clean-shutdown marker (closing it fails), so the next start
// recovers it. A single node stays up: nobody could take over, reads still work, and
// partitions whose logs are fine keep accepting writes.
func (n *Node) storageFailed(tp log.TopicPartition, err error) {
	if errors.Is(err, log.ErrDiskFull) {
		n.disk.Full(fmt.Errorf("%s-%d: %w", tp.Topic, tp.Partition, err))
		return
	}
	// The quorum's image (n.ctrl is set before the logs open, so this never races
	// with start-up), not the applied one, which is empty until the first apply.
	if len(n.ctrl.Image().Brokers) <= 1 {
		n.logger.Error("disk error; this is the only node, so it stays up for reads and for the partitions that can still write",
			"topic", tp.Topic, "partition", tp.Partition, "err", err)
		return
	}
	n.logger.Error("disk error: stopping this node so that the other replicas take over its partitions; fix the disk, then restart it",
		"topic", tp.Topic, "partition", tp.Partition, "data_dir", n.cfg.DataDir, "err", err)
	select {
	case n.done <- fmt.Errorf("disk error on %s-%d: %w", tp.Topic, tp.Partition, err):
	default: // already stopping
	}
}

// newDiskMonitor watches for the end of a full-disk episode and tells the controller
// of every change at once (the next heartbeat carries it).
func (n *Node) newDiskMonitor() *replica.DiskMonitor {
	return replica.NewDiskMonitor(replica.DiskMonitorOptions{
		Dir: n.cfg.DataDir, Probe: n.diskHasRoom, Logger: n.logger,
		OnChange: func(full bool) {
			n.nudgeHeartbeat()
			if full {
				go n.resignOnFullDisk()
			}
		},
	})
}

const (
	// diskRoomMargin bounds the free space a full disk needs before the node takes
	// writes again: 1% of the filesystem, at least diskRoomMin and at most
	// diskRoomMax, so that a few freed kilobytes do not make it flap.
	diskRoomMin = 1 << 20
	diskRoomMax = 64 << 20
	// diskProbeSize is the size of the probe write (quotas do not show in statfs).
	diskProbeSize = 64 << 10
)

// diskHasRoom is the disk monitor's probe: the metadata log has room (the controller
// probes its directory, which may be a filesystem of its own), the data directory's
// filesystem has room beyond the margin, and a small write there succeeds.
func (n *Node) diskHasRoom() error {
	if n.ctrl != nil && n.ctrl.DiskFull() {
		return errors.New("the metadata log's disk is full")
	}
	dir := n.cfg.DataDir
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return err
	}
	total, free := int64(st.Blocks)*int64(st.Bsize), int64(st.Bavail)*int64(st.Bsize)
	if margin := min(max(total/100, diskRoomMin), diskRoomMax); free < margin {
		return fmt.Errorf("%d bytes free in %s, want %d", free, dir, margin)
	}
	f, err := os.CreateTemp(dir, ".disk-probe-*")
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

// degraded says why the node serves with limits, "" when it does not.
func (n *Node) degraded() string {
	since, full := n.disk.State()
	if !full {
		return ""
	}
	return fmt.Sprintf("disk full in %s since %s", n.cfg.DataDir, since.UTC().Format(time.RFC3339))
}

// newDiskFullGauge is runnel_disk_full: 1 while the data disk is full, else 0.
func newDiskFullGauge(d *replica.DiskMonitor) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "runnel_disk_full",
		Help: "1 while the data disk is full (appends fail, the node hands its leaderships away), else 0.",
	}, func() float64 {
		if d.IsFull() {
			return 1
		}
		return 0
	})
}

// resignOnFullDisk tells the controller that the data disk is full: the metadata log
// lives there too, so the controller hands the quorum's leadership to another voter
// if it has it, and keeps this node out of the quorum until there is room (a Raft
// leader must write every entry to its own log first, so it could commit nothing,
// not even the record that moves its partitions' leaderships away).
func (n *Node) resignOnFullDisk() {
	since, full := n.disk.State()
	if !full {
		return
	}
	n.ctrl.MarkDiskFull(fmt.Errorf("data disk %s full since %s: %w", n.cfg.DataDir, since.UTC().Format(time.RFC3339), syscall.ENOSPC))
}

// metadataDiskFull is the controller's OnDiskFull: the metadata log found the disk
// full, which the node reports like a partition's full disk (heartbeats, /readyz,
// runnel_disk_full), so that the active controller moves its leaderships away and
// does not wait for it to apply metadata.
func (n *Node) metadataDiskFull(err error) {
	if n.disk != nil {
		n.disk.Full(err)
	}
}
