package kafka

// DescribeQuorum: v0-2 (KIP-595, KIP-836, KIP-853).
//
// Describes the metadata quorum: the active controller, its Raft term as the leader
// epoch, the high watermark (one past the last committed metadata record), and the voters and
// observers (Raft non-voters: every other node) with their log end offsets and the
// times of their last fetch and last caught-up fetch as far as hashicorp/raft and the
// brokers' heartbeats tell (QuorumState). Any node answers: it forwards the request to
// the active controller, whose view it is. Only __cluster_metadata partition 0 exists
// (UNKNOWN_TOPIC_OR_PARTITION for any other); a request naming more than one partition
// is INVALID_REQUEST, as in Kafka. ReplicaDirectoryID (v2) is the zero UUID: Runnel's
// nodes have one data directory and no directory ids. Nodes (v2) lists the CONTROLLER
// endpoint (the Raft address) of every voter and observer.

import (
	"context"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(55, 0, 2, handleDescribeQuorum) }

func handleDescribeQuorum(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.DescribeQuorumRequest)
	resp := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
	// With ACLs on, as Kafka: DESCRIBE on the cluster.
	if err := s.authorize(r, metadata.ACLOpDescribe, auth.Cluster); err != nil {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), reasonMessage(err)
		return resp, nil
	}
	if len(req.Topics) != 1 || len(req.Topics[0].Partitions) != 1 {
		resp.ErrorCode = kerr.InvalidRequest.Code
		resp.ErrorMessage = kmsg.StringPtr("DescribeQuorum takes exactly one partition: " + MetadataTopic + "-0")
		return resp, nil
	}
	rt := req.Topics[0]
	st := kmsg.NewDescribeQuorumResponseTopic()
	st.Topic = rt.Topic
	sp := kmsg.NewDescribeQuorumResponseTopicPartition()
	sp.Partition, sp.LeaderID, sp.LeaderEpoch, sp.HighWatermark = rt.Partitions[0].Partition, -1, -1, -1
	if rt.Topic != MetadataTopic || sp.Partition != MetadataPartition {
		sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
		st.Partitions = append(st.Partitions, sp)
		resp.Topics = append(resp.Topics, st)
		return resp, nil
	}
	ctx, cancel := withRequestTimeout(ctx, 0)
	defer cancel()
	qs, err := s.admin.DescribeQuorum(ctx)
	if err != nil {
		// A failure to reach the controller is the whole answer's, as Kafka answers it.
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), reasonMessage(err)
		return resp, nil
	}
	sp.LeaderID, sp.LeaderEpoch, sp.HighWatermark = int32(qs.Leader), int32(qs.Term), qs.HighWatermark
	sp.CurrentVoters, sp.Observers = replicaStates(qs.Voters), replicaStates(qs.Observers)
	st.Partitions = append(st.Partitions, sp)
	resp.Topics = append(resp.Topics, st)
	for _, v := range append(slices.Clone(qs.Voters), qs.Observers...) {
		n := kmsg.NewDescribeQuorumResponseNode()
		n.NodeID = int32(v.ID)
		if host, p, err := net.SplitHostPort(v.Addr); err == nil {
			if port, err := strconv.ParseUint(p, 10, 16); err == nil {
				l := kmsg.NewDescribeQuorumResponseNodeListener()
				l.Name, l.Host, l.Port = ControllerListenerName, host, uint16(port)
				n.Listeners = append(n.Listeners, l)
			}
		}
		resp.Nodes = append(resp.Nodes, n)
	}
	return resp, nil
}

func replicaStates(ms []metadata.QuorumMember) []kmsg.DescribeQuorumResponseTopicPartitionReplicaState {
	out := make([]kmsg.DescribeQuorumResponseTopicPartitionReplicaState, 0, len(ms))
	for _, m := range ms {
		rs := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
		rs.ReplicaID, rs.LogEndOffset = int32(m.ID), m.LogEndOffset
		rs.LastFetchTimestamp, rs.LastCaughtUpTimestamp = unixMilliOrUnknown(m.LastFetch), unixMilliOrUnknown(m.LastCaughtUp)
		out = append(out, rs)
	}
	return out
}

// unixMilliOrUnknown is t as DescribeQuorum's timestamps carry it: -1 when unknown (zero).
func unixMilliOrUnknown(t time.Time) int64 {
	if t.IsZero() {
		return -1
	}
	return t.UnixMilli()
}
