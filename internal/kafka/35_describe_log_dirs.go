package kafka

// DescribeLogDirs: v1-4. One log directory (the data dir) with each hosted partition's
// size on disk; v4 adds the directory's total and usable bytes. Topics nil = all.
// While the disk is full the directory answers KAFKA_STORAGE_ERROR (it takes no
// writes; `runnel cluster status` shows the node degraded), with its partitions.
//
// Runnel's tagged fields (flexible versions, v2+; JSON payloads; a tag this high is
// never one of Kafka's and other clients skip it):
//
//   - ScrubRequestTag on the request runs one scrub pass now on this node, over the
//     topics it names (ScrubRequest; none: every log), before answering: every batch
//     CRC and index entry of the inactive segments (log.Manager.Scrub, unpaced). It
//     needs ALTER on the cluster (it rebuilds indexes and quarantines files), as
//     Kafka's AlterReplicaLogDirs; without, CLUSTER_AUTHORIZATION_FAILED.
//     `runnel cluster scrub` sends it to every node.
//   - NodeIntegrityTag on the response: this node's integrity counters and, after a
//     scrub, the pass's counts (NodeIntegrity). Always present from v2.
//   - DamagedRangesTag on a response partition with a damaged range: the ranges, each
//     with its offsets, file and quarantined copy (DamagedRange). `runnel topic
//     describe` and `runnel cluster status` show them.

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/replica"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(35, 1, 4, handleDescribeLogDirs) }

func handleDescribeLogDirs(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.DescribeLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	// With ACLs on, as Kafka: DESCRIBE on the cluster.
	if err := s.authorize(r, metadata.ACLOpDescribe, auth.Cluster); err != nil {
		resp.ErrorCode = errorCode(err)
		return resp, nil
	}
	var scrub *ScrubRequest
	var bad error
	req.UnknownTags.Each(func(tag uint32, b []byte) {
		if tag == ScrubRequestTag {
			scrub = new(ScrubRequest)
			if err := json.Unmarshal(b, scrub); err != nil {
				bad = fmt.Errorf("DescribeLogDirs's scrub request (tag %d): %w", ScrubRequestTag, err)
			}
		}
	})
	if bad != nil {
		return nil, bad
	}
	ni := NodeIntegrity{Node: int32(s.cfg.NodeID)}
	if scrub != nil {
		if err := s.authorize(r, metadata.ACLOpAlter, auth.Cluster); err != nil {
			resp.ErrorCode = errorCode(err)
			return resp, nil
		}
		ni.Scrub = s.scrubNow(ctx, scrub.Topics)
	}
	want := map[string]map[int32]bool{}
	for _, t := range req.Topics {
		want[t.Topic] = map[int32]bool{}
		for _, p := range t.Partitions {
			want[t.Topic][p] = true
		}
	}
	dir, _ := filepath.Abs(s.cfg.Broker.DataDir)
	res := kmsg.NewDescribeLogDirsResponseDir()
	res.Dir = dir
	res.TotalBytes, res.UsableBytes = -1, -1
	if _, full := s.replicas.DiskFull(); full {
		res.ErrorCode = kerr.KafkaStorageError.Code
	}
	var st syscall.Statfs_t
	if syscall.Statfs(dir, &st) == nil {
		// Total is what df counts as the file system's size to a writer: used plus
		// available (blocks - free + available), so that (Total - Usable) / Total is
		// df's Use%. Blocks alone also count the blocks reserved for root, which made a
		// disk 17 % used by df read 69.5 % used here, past the balancer's threshold in
		// time (partition.autobalancing.max.disk.usage.percent).
		unit := int64(st.Frsize)
		if unit <= 0 {
			unit = int64(st.Bsize)
		}
		used := int64(st.Blocks-st.Bfree) * unit
		res.UsableBytes = int64(st.Bavail) * unit
		res.TotalBytes = used + res.UsableBytes
	}
	byTopic := map[string]*kmsg.DescribeLogDirsResponseDirTopic{}
	for _, p := range s.replicas.Partitions() {
		tp := p.TopicPartition()
		if req.Topics != nil && !want[tp.Topic][tp.Partition] {
			continue
		}
		t := byTopic[tp.Topic]
		if t == nil {
			nt := kmsg.NewDescribeLogDirsResponseDirTopic()
			nt.Topic = tp.Topic
			t = &nt
			byTopic[tp.Topic] = t
		}
		rp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
		rp.Partition, rp.Size = tp.Partition, p.Log().Size()
		rp.OffsetLag = max(0, p.Log().LogEndOffset()-p.HighWatermark())
		if ds := p.Log().Damaged(); len(ds) > 0 {
			rp.UnknownTags.Set(DamagedRangesTag, encodeDamagedRanges(ds))
		}
		t.Partitions = append(t.Partitions, rp)
	}
	names := make([]string, 0, len(byTopic))
	for n := range byTopic {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		res.Topics = append(res.Topics, *byTopic[n])
	}
	resp.Dirs = append(resp.Dirs, res)
	is := s.replicas.IntegrityStats()
	ni.CorruptBatchesTotal, ni.RepairedBatchesTotal = is.CorruptBatches, is.RepairedBatches
	ni.UnrepairablePartitions = s.replicas.Unrepairable()
	ni.DamagedPartitions = damagedPartitions(s.replicas.Damaged())
	b, _ := json.Marshal(ni) // plain structs: cannot fail
	resp.UnknownTags.Set(NodeIntegrityTag, b)
	return resp, nil
}

// The Runnel tagged fields of DescribeLogDirs (see the top of this file).
const (
	// ScrubRequestTag (request) carries a ScrubRequest.
	ScrubRequestTag = 10_003
	// NodeIntegrityTag (response) carries a NodeIntegrity.
	NodeIntegrityTag = 10_003
	// DamagedRangesTag (response partition) carries a []DamagedRange.
	DamagedRangesTag = 10_004
)

// ScrubRequest is ScrubRequestTag's payload: scrub these topics' logs (none: all).
type ScrubRequest struct {
	Topics []string `json:"topics,omitempty"`
}

// NodeIntegrity is NodeIntegrityTag's payload: what the node's logs found and
// repaired since it started (runnel_corrupt_batches_total,
// runnel_repaired_batches_total), the partitions it leads damaged with no other
// in-sync replica (runnel_unrepairable_partitions), the partitions whose replica here
// holds a damaged range, and the result of the scrub pass the request asked for.
type NodeIntegrity struct {
	Node                   int32        `json:"node"`
	CorruptBatchesTotal    int64        `json:"corrupt_batches_total"`
	RepairedBatchesTotal   int64        `json:"repaired_batches_total"`
	UnrepairablePartitions int          `json:"unrepairable_partitions"`
	DamagedPartitions      int          `json:"damaged_partitions"`
	Scrub                  *ScrubResult `json:"scrub,omitempty"`
}

// ScrubResult is one scrub pass of a node. RepairedBefore is the node's
// RepairedBatchesTotal when the pass began, so that a client can tell the repairs that
// followed it.
type ScrubResult struct {
	Logs           int      `json:"logs"`
	Segments       int      `json:"segments"`
	BatchesChecked int64    `json:"batches_checked"`
	BytesChecked   int64    `json:"bytes_checked"`
	Corrupt        int      `json:"corrupt"`
	IndexesRebuilt int      `json:"indexes_rebuilt"`
	RepairedBefore int64    `json:"repaired_before"`
	Seconds        float64  `json:"seconds"`
	Errors         []string `json:"errors,omitempty"`
}

// DamagedRange is one damaged range of a partition's log (log.DamagedRange):
// DamagedRangesTag's payload is a list of them.
type DamagedRange struct {
	FirstOffset int64 `json:"first_offset"`
	LastOffset  int64 `json:"last_offset"`
	// Offsets is how many offsets the range holds (0: garbage between two batches,
	// which blocks no read).
	Offsets    int64  `json:"offsets"`
	File       string `json:"file"`
	Position   int64  `json:"position"`
	Bytes      int64  `json:"bytes"`
	Quarantine string `json:"quarantine,omitempty"`
	Reason     string `json:"reason,omitempty"`
}

// DecodeNodeIntegrity and DecodeDamagedRanges read the payloads of NodeIntegrityTag
// and DamagedRangesTag.
func DecodeNodeIntegrity(b []byte) (NodeIntegrity, error) {
	var ni NodeIntegrity
	err := json.Unmarshal(b, &ni)
	return ni, err
}

func DecodeDamagedRanges(b []byte) ([]DamagedRange, error) {
	var ds []DamagedRange
	err := json.Unmarshal(b, &ds)
	return ds, err
}

func encodeDamagedRanges(ds []replica.DamagedRange) []byte {
	out := make([]DamagedRange, len(ds))
	for i, d := range ds {
		out[i] = DamagedRange{FirstOffset: d.FirstOffset, LastOffset: d.LastOffset, Offsets: d.Offsets(),
			File: d.Segment, Position: d.Position, Bytes: d.Length, Quarantine: d.Quarantine, Reason: d.Reason}
	}
	b, _ := json.Marshal(out) // plain structs: cannot fail
	return b
}

// damagedPartitions counts the distinct partitions of ds.
func damagedPartitions(ds []metadata.DamagedReplica) int {
	seen := map[metadata.TopicPartition]bool{}
	for _, d := range ds {
		seen[d.TopicPartition()] = true
	}
	return len(seen)
}

// scrubNow runs one scrub pass of this node's logs of topics (all when empty).
func (s *Server) scrubNow(ctx context.Context, topics []string) *ScrubResult {
	before := s.replicas.IntegrityStats().RepairedBatches
	start := time.Now()
	s.logger.Info("scrub pass requested", "topics", topics)
	r, err := s.replicas.Scrub(ctx, topics)
	out := &ScrubResult{Logs: r.Logs, Segments: r.Segments, BatchesChecked: r.Batches, BytesChecked: r.Bytes,
		Corrupt: r.Corrupt, IndexesRebuilt: r.IndexesRebuilt, RepairedBefore: before,
		Seconds: time.Since(start).Seconds(), Errors: r.Errors}
	if err != nil {
		out.Errors = append(out.Errors, "pass interrupted: "+err.Error())
	}
	s.logger.Info("requested scrub pass finished", "logs", r.Logs, "segments", r.Segments, "batches", r.Batches,
		"bytes", r.Bytes, "corrupt", r.Corrupt, "indexes_rebuilt", r.IndexesRebuilt, "errors", len(out.Errors),
		"seconds", out.Seconds)
	return out
}
