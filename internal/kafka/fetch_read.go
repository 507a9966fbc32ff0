package kafka

import (
	"errors"
	"math"
	"time"

	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/replica"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var errUnknownTopicID = kerr.UnknownTopicID

// readParts reads every partition once and fills resp. It returns the number of record
// bytes in the response. In an incremental session only partitions with news appear.
// The records read are in pool buffers listed in r.pooled, given back after encoding.
//
// sel is the consumer's preferred read replica selection (fetch_replica.go), nil when
// this fetch gets none: a partition led here that should be read elsewhere is answered
// with the offsets and PreferredReadReplica, and no records (Kafka skips the read).
func (s *Server) readParts(r *request, req *kmsg.FetchRequest, resp *kmsg.FetchResponse, parts []*fetchPart, replicaID int32, incremental bool, sel *readReplicaSelection) int {
	budget := int(req.MaxBytes)
	if req.Version < 3 || budget <= 0 {
		budget = int(^uint32(0) >> 1)
	}
	total := 0
	topicIdx := map[string]int{}
	for _, fp := range parts {
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.Partition = fp.sp.tp.Partition
		rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = -1, -1, -1
		rp.PreferredReadReplica = -1
		fp.throttled, fp.served = 0, 0
		switch {
		case fp.err != nil:
			rp.ErrorCode = errorCode(fp.err)
		case sel != nil && sel.redirect(fp, &rp):
		case replicaID >= 0 && fp.part.LeaderThrottledFor(metadata.NodeID(replicaID)):
			// A moving replica's catch-up (KIP-73): over the leader's throttle, only
			// the offsets go back this time; under it, at most a chunk, counted once
			// the response is final (recordThrottled: a long poll reads again).
			q := s.replicas.LeaderThrottle()
			if q.Exceeded(time.Now()) {
				s.readPart(r, fp, &rp, 0, false, replicaID, false)
				break
			}
			n := s.readPart(r, fp, &rp, min(budget, int(q.Chunk(math.MaxInt32))), total == 0, replicaID, false)
			fp.throttled = n
			budget -= n
			total += n
		default:
			n := s.readPart(r, fp, &rp, budget, total == 0, replicaID, req.IsolationLevel == 1)
			budget -= n
			total += n
			if replicaID < 0 {
				fp.served = n
			}
		}
		if rp.RecordBatches == nil {
			// Non-flexible versions encode nil as a null (-1) length, which some
			// clients (librdkafka) reject; an empty record set is 0.
			rp.RecordBatches = []byte{}
		}
		offsets := partitionOffsets{rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset}
		// As Kafka's fetch session, a preferred read replica is always sent.
		fp.sent = !incremental || rp.ErrorCode != 0 || len(rp.RecordBatches) > 0 || offsets != fp.sp.last ||
			rp.PreferredReadReplica >= 0
		if !fp.sent {
			continue
		}
		fp.sentOffsets = offsets
		appendFetchPartition(resp, topicIdx, fp, rp)
	}
	return total
}

// recordThrottled counts the throttled bytes of the response being sent against the
// leader's replication throttle.
func (s *Server) recordThrottled(parts []*fetchPart) {
	n := 0
	for _, fp := range parts {
		n += fp.throttled
	}
	s.replicas.LeaderThrottle().Record(n, time.Now())
}

// commitSession records, in the fetch session, the offsets of the response actually
// sent. Only then: a fetch that reads, waits and reads again drops its first response,
// and a partition whose news went only into the dropped one would otherwise never be
// reported to the client.
func commitSession(parts []*fetchPart) {
	for _, fp := range parts {
		if fp.sent {
			fp.sp.last = fp.sentOffsets
		}
	}
}

func appendFetchPartition(resp *kmsg.FetchResponse, topicIdx map[string]int, fp *fetchPart, rp kmsg.FetchResponseTopicPartition) {
	i, ok := topicIdx[fp.sp.tp.Topic]
	if !ok || fp.sp.tp.Topic == "" {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic, rt.TopicID = fp.sp.tp.Topic, fp.sp.topicID
		resp.Topics = append(resp.Topics, rt)
		i = len(resp.Topics) - 1
		topicIdx[fp.sp.tp.Topic] = i
	}
	resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
}

// readPart reads one partition into rp and returns the bytes added. With the response
// budget spent it still reads (zero bytes), so that the offsets are reported.
// readCommitted (IsolationLevel 1) bounds the read at the last stable offset and
// returns the aborted transactions of the range.
func (s *Server) readPart(r *request, fp *fetchPart, rp *kmsg.FetchResponseTopicPartition, budget int, first bool, replicaID int32, readCommitted bool) int {
	res, err := fp.part.Read(replica.ReadOptions{
		FetchOffset: fp.sp.fetchOffset, MaxBytes: int32(max(min(int(fp.sp.maxBytes), budget), 0)), MinOneBatch: first,
		CurrentLeaderEpoch: fp.sp.currentLeaderEpoch, ReplicaID: metadata.NodeID(replicaID),
		ReadCommitted: readCommitted, FromFollower: followerMayServe(r.version, replicaID),
	})
	fp.asFollower = res.Follower
	fillOffsets(rp, res, err)
	if err != nil || res.Info.Size == 0 {
		return 0
	}
	fillAborted(rp, res.AbortedTransactions)
	if r.spliceRecords(rp, res.Info) {
		return int(res.Info.Size)
	}
	buf, err := res.Info.AppendTo(getBuf(int(res.Info.Size)))
	r.pooled = append(r.pooled, buf)
	if err != nil {
		s.logger.Error("fetch read failed", "topic", fp.sp.tp.Topic, "partition", fp.sp.tp.Partition,
			"offset", fp.sp.fetchOffset, "err", err)
		rp.ErrorCode = kerr.KafkaStorageError.Code
		return 0
	}
	rp.RecordBatches = buf
	return len(buf)
}

func fillOffsets(rp *kmsg.FetchResponseTopicPartition, res replica.ReadResult, err error) {
	if err != nil && !errors.Is(err, replica.ErrOffsetOutOfRange) {
		rp.ErrorCode = errorCode(err)
		return
	}
	rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = res.HighWatermark, res.LastStableOffset, res.LogStartOffset
	if err != nil {
		rp.ErrorCode = errorCode(err)
	}
}

// fillAborted lists the aborted transactions of a read_committed read (v4+; an
// empty list rather than null, which read_committed clients take as "none").
func fillAborted(rp *kmsg.FetchResponseTopicPartition, aborted []replica.AbortedTxn) {
	for _, a := range aborted {
		at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
		at.ProducerID, at.FirstOffset = a.ProducerID, a.FirstOffset
		rp.AbortedTransactions = append(rp.AbortedTransactions, at)
	}
}
