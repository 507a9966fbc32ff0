package replica

import (
	"fmt"
	"slices"

	"github.com/runnel-io/runnel/internal/log"
	"github.com/runnel-io/runnel/internal/metadata"
)

// Stray logs (Kafka's KRaft stray replica detection, LogManager.isStrayKraftReplica).
//
// A node that was down (killed, stopped, cut off long enough to take a snapshot
// instead of the records) while its replica of a partition was moved away, or while
// the partition's topic was deleted, finds that partition's directory at start-up.
// ApplyImage deletes a replica only when it sees the change from one image to the
// next, and the first image a restarted node applies may already be past the change,
// so without this sweep the directory would stay for ever: opened, retained and
// flushed, served to no one.
//
// Invariants:
//   - The sweep runs once, on the first image for which Options.CaughtUp says the node
//     has caught up with the metadata quorum. A stale image (the node's own Raft log
//     replayed before it reached the leader) may predate the node's being made a
//     replica again, so deleting against it could delete live data.
//   - It runs on the image-applying goroutine (inside ApplyImage), so no image applied
//     concurrently can make the node a replica of a log the sweep is deleting.
//   - It never deletes the log of a partition hosted here, nor of one whose replicas in
//     the image include this node (an adding replica included: during a reassignment
//     the replicas are the target plus those being removed).
//
// The log directories carry no topic id here (Kafka's partition.metadata is not
// written), so a log is matched by topic name and partition: a log of a deleted topic
// whose name was re-used, on a node that is a replica of the new topic, is kept.

// strayReason says why the log of tp does not belong on node according to im, or ""
// when it does (node is one of the partition's replicas).
func strayReason(im *metadata.Image, node metadata.NodeID, tp metadata.TopicPartition) string {
	t := im.Topics[tp.Topic]
	switch {
	case t == nil:
		return "the topic no longer exists"
	case int(tp.Partition) >= len(t.Partitions):
		return fmt.Sprintf("the topic has %d partitions", len(t.Partitions))
	}
	p := t.Partitions[tp.Partition]
	if metadata.Contains(p.Replicas, node) {
		return ""
	}
	return fmt.Sprintf("node %d is not a replica (replicas %v)", node, p.Replicas)
}

// maybeDeleteStrayLogs runs the stray sweep on the first caught-up image (see above).
// Called by ApplyImage after the image's changes are applied.
func (m *Manager) maybeDeleteStrayLogs(im *metadata.Image) {
	if m.strayChecked || m.opts.CaughtUp == nil || !m.opts.CaughtUp(im) {
		return
	}
	m.strayChecked = true
	m.deleteStrayLogs(im)
}

// deleteStrayLogs deletes every local log that im says does not belong on this node
// and that no local Partition hosts, and returns how many it deleted.
func (m *Manager) deleteStrayLogs(im *metadata.Image) int {
	logs := m.opts.Logs.All()
	tps := make([]log.TopicPartition, 0, len(logs))
	for tp := range logs {
		tps = append(tps, tp)
	}
	slices.SortFunc(tps, func(a, b log.TopicPartition) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return int(a.Partition - b.Partition)
	})
	deleted := 0
	for _, tp := range tps {
		m.mu.RLock()
		hosted := m.partitions[tp] != nil
		m.mu.RUnlock()
		if hosted {
			continue
		}
		why := strayReason(im, m.opts.Node, tp)
		if why == "" {
			// A replica the node does not host: applying it failed (logged by
			// ApplyImage). Its data is the node's copy, so it stays.
			continue
		}
		m.logger.Info("deleting stray partition log: the metadata this node has caught up to does not place it here",
			"topic", tp.Topic, "partition", tp.Partition, "reason", why, "metadata_offset", im.Offset,
			"log_end_offset", logs[tp].LogEndOffset(), "size_bytes", logs[tp].Size())
		if err := m.opts.Logs.Delete(tp); err != nil {
			m.logger.Error("cannot delete stray partition log", "topic", tp.Topic, "partition", tp.Partition, "err", err)
			continue
		}
		deleted++
	}
	return deleted
}
