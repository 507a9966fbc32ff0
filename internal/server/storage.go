package server

import (
	"errors"
	"fmt"

	"github.com/runnel-io/runnel/internal/log"
)

// storageFailed reacts to a disk error that took a partition's log offline for
// writes (a full or failing disk).
//
// In a cluster the node stops, as Kafka halts a broker whose log directory failed:
// the controller fences it and the other replicas take over its partitions. A node
// that stayed up would keep leading partitions it cannot write (producers would get
// KAFKA_STORAGE_ERROR until someone restarted it) and, as a follower, hold back
// acks=all until it left the ISR. An offline log is not flushed and gets no
// clean-shutdown marker (closing it fails), so the next start recovers it; a log that
// only found the disk full is intact (the failed write was cut back) and closes as usual.
//
// A single node stays up: nobody could take over, reads still work, and partitions
// whose logs are fine keep accepting writes while the disk has room. A full disk does
// not take a log offline (the failed write is cut back), so there writes resume by
// themselves once space is freed.
func (n *Node) storageFailed(tp log.TopicPartition, err error) {
	// The quorum's image (n.ctrl is set before the logs open, so this never races
	// with start-up), not the applied one, which is empty until the first apply.
	if len(n.ctrl.Image().Brokers) <= 1 {
		if errors.Is(err, log.ErrDiskFull) {
			n.logger.Error("disk full; this is the only node, so it stays up: reads go on, and writes resume once space is freed",
				"topic", tp.Topic, "partition", tp.Partition, "data_dir", n.cfg.DataDir, "err", err)
			return
		}
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
