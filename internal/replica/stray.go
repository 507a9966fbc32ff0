package replica

import (
	"encoding/base64"
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
// A log is matched here by topic name and partition; a log of a deleted topic whose
// name was re-used, on a node that is a replica of the new topic, is told apart by
// its topic id (partition.metadata, below).

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
	m.reconcileTopicIDs(im)
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

// Topic ids of local logs (partition.metadata, internal/log). A log whose recorded
// topic id differs from the id the metadata gives its topic belongs to an earlier
// topic of the same name, deleted and re-created while this node was down or cut
// off: its records are not the new topic's, and hosted as the new topic's replica they
// would be served (or, on a follower, kept below the leader's end, diverging from it).
//
// Invariants, as for the stray sweep: ids are compared only against an image the node
// has caught up to (a stale image may name an earlier incarnation than the log's,
// and deleting against it would delete the live topic's data); before that, a log is
// hosted as it is, and the first caught-up image reconciles every hosted log
// (reconcileTopicIDs). An id is recorded only from a caught-up image for the same
// reason. Topic ids are never reused, so a recorded id that differs from the caught-up
// image's is always an earlier incarnation's.

// checkTopicID is applyPartition's check of a log it is about to host, once the node
// has caught up (m.strayChecked): an earlier incarnation's log is deleted and a new
// one created; the topic's id is recorded in the one returned.
func (m *Manager) checkTopicID(im *metadata.Image, tp metadata.TopicPartition, l *log.Log, cfg log.Config) (*log.Log, error) {
	t := im.Topics[tp.Topic]
	if t == nil || t.ID == ([16]byte{}) {
		return l, nil
	}
	if id, ok := l.TopicID(); ok && id != t.ID {
		m.logger.Warn("deleting the log of an earlier topic of the same name: the topic was deleted and re-created while this node was away",
			"topic", tp.Topic, "partition", tp.Partition, "log_topic_id", topicIDString(id), "topic_id", topicIDString(t.ID),
			"log_end_offset", l.LogEndOffset(), "size_bytes", l.Size())
		if err := m.opts.Logs.Delete(tp); err != nil {
			return nil, err
		}
		var err error
		if l, err = m.opts.Logs.GetOrCreate(tp, cfg); err != nil {
			return nil, err
		}
	}
	if err := l.SetTopicID(t.ID); err != nil {
		// The log serves regardless; the id is written when the node next hosts it.
		m.logger.Warn("cannot record the topic id of a partition", "topic", tp.Topic, "partition", tp.Partition, "err", err)
	}
	return l, nil
}

// reconcileTopicIDs runs on the first caught-up image, before the stray sweep: every
// hosted partition whose log belongs to an earlier incarnation of its topic is
// dropped and hosted again on a new log; the others get the topic's id recorded.
func (m *Manager) reconcileTopicIDs(im *metadata.Image) {
	for _, p := range m.Partitions() {
		tp := p.tp
		t := im.Topics[tp.Topic]
		if t == nil || t.ID == ([16]byte{}) || int(tp.Partition) >= len(t.Partitions) {
			continue // not the metadata's, which the image's changes handle
		}
		if id, ok := p.log.TopicID(); ok && id != t.ID {
			m.deletePartition(tp)
			m.logger.Warn("deleted the log of an earlier topic of the same name: the topic was deleted and re-created while this node was away",
				"topic", tp.Topic, "partition", tp.Partition, "log_topic_id", topicIDString(id), "topic_id", topicIDString(t.ID))
			if st := t.Partitions[tp.Partition]; metadata.Contains(st.Replicas, m.opts.Node) {
				if err := m.applyPartition(im, tp, st); err != nil {
					m.logger.Error("cannot host partition", "topic", tp.Topic, "partition", tp.Partition, "err", err)
				}
			}
			continue
		}
		if err := p.log.SetTopicID(t.ID); err != nil {
			m.logger.Warn("cannot record the topic id of a partition", "topic", tp.Topic, "partition", tp.Partition, "err", err)
		}
	}
}

// topicIDString is a topic id as Kafka prints it (URL-safe base64, no padding).
func topicIDString(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }
