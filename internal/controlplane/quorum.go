package controlplane

// The metadata quorum's voter changes and description (KIP-853: DescribeQuorum,
// AddRaftVoter, RemoveRaftVoter): they run on the active controller, forwarded there
// from any other node (KIP-590) as the Kafka request a client would send. Nothing in
// the image changes, so there is nothing to settle: the Raft configuration change is
// committed when the controller answers.

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/controller"
	"github.com/runnel-io/runnel/internal/kafka"
	"github.com/runnel-io/runnel/internal/metadata"
)

func (a *Admin) DescribeQuorum(ctx context.Context) (metadata.QuorumState, error) {
	st, err := a.ctrl.DescribeQuorum(ctx)
	if mayForward(ctx, err) {
		return a.ch.describeQuorum(ctx)
	}
	if err != nil {
		return metadata.QuorumState{}, kafka.WithCode(err)
	}
	return st, nil
}

func (a *Admin) AddRaftVoter(ctx context.Context, id metadata.NodeID, raftAddr string) error {
	err := a.ctrl.AddVoter(ctx, id, raftAddr)
	if mayForward(ctx, err) {
		return a.ch.do(ctx, "forward AddRaftVoter", func(ctx context.Context) error {
			req := kmsg.NewPtrAddRaftVoterRequest()
			req.TimeoutMillis, req.VoterID = timeoutMillis(ctx), int32(id)
			if host, port, err := splitAddr(raftAddr); err == nil {
				l := kmsg.NewAddRaftVoterRequestListener()
				l.Name, l.Host, l.Port = kafka.ControllerListenerName, host, uint16(port)
				req.Listeners = append(req.Listeners, l)
			}
			resp, err := a.ch.send(ctx, req)
			if err != nil {
				return err
			}
			r := resp.(*kmsg.AddRaftVoterResponse)
			return answerError(r.ErrorCode, r.ErrorMessage)
		})
	}
	return kafka.WithCode(err)
}

func (a *Admin) RemoveRaftVoter(ctx context.Context, id metadata.NodeID) error {
	err := a.ctrl.RemoveVoter(ctx, id)
	if mayForward(ctx, err) {
		return a.ch.do(ctx, "forward RemoveRaftVoter", func(ctx context.Context) error {
			req := kmsg.NewPtrRemoveRaftVoterRequest()
			req.VoterID = int32(id)
			resp, err := a.ch.send(ctx, req)
			if err != nil {
				return err
			}
			r := resp.(*kmsg.RemoveRaftVoterResponse)
			return answerError(r.ErrorCode, r.ErrorMessage)
		})
	}
	return kafka.WithCode(err)
}

// describeQuorum forwards a DescribeQuorum to the active controller.
func (ch *Channel) describeQuorum(ctx context.Context) (metadata.QuorumState, error) {
	var out metadata.QuorumState
	err := ch.do(ctx, "forward DescribeQuorum", func(ctx context.Context) error {
		req := kmsg.NewPtrDescribeQuorumRequest()
		req.Version = 2 // the error message and the nodes' endpoints
		t := kmsg.NewDescribeQuorumRequestTopic()
		t.Topic = kafka.MetadataTopic
		p := kmsg.NewDescribeQuorumRequestTopicPartition()
		p.Partition = kafka.MetadataPartition
		t.Partitions = append(t.Partitions, p)
		req.Topics = append(req.Topics, t)
		resp, err := ch.send(ctx, req)
		if err != nil {
			return err
		}
		r := resp.(*kmsg.DescribeQuorumResponse)
		if err := answerError(r.ErrorCode, r.ErrorMessage); err != nil {
			return err
		}
		if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			return fmt.Errorf("%w: the controller's DescribeQuorum answer has no %s-%d", kerr.UnknownServerError, kafka.MetadataTopic, kafka.MetadataPartition)
		}
		sp := r.Topics[0].Partitions[0]
		if err := answerError(sp.ErrorCode, sp.ErrorMessage); err != nil {
			return err
		}
		addrs := map[int32]string{}
		for _, n := range r.Nodes {
			for _, l := range n.Listeners {
				addrs[n.NodeID] = net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port)))
			}
		}
		out = metadata.QuorumState{Leader: metadata.NodeID(sp.LeaderID), Term: uint64(sp.LeaderEpoch), HighWatermark: sp.HighWatermark,
			Voters: fromReplicaStates(sp.CurrentVoters, addrs, true), Observers: fromReplicaStates(sp.Observers, addrs, false)}
		return nil
	})
	return out, err
}

func fromReplicaStates(rs []kmsg.DescribeQuorumResponseTopicPartitionReplicaState, addrs map[int32]string, voters bool) []metadata.QuorumMember {
	out := make([]metadata.QuorumMember, 0, len(rs))
	for _, r := range rs {
		out = append(out, metadata.QuorumMember{ID: metadata.NodeID(r.ReplicaID), Addr: addrs[r.ReplicaID], Voter: voters,
			LogEndOffset: r.LogEndOffset, LastFetch: timeOrUnknown(r.LastFetchTimestamp), LastCaughtUp: timeOrUnknown(r.LastCaughtUpTimestamp)})
	}
	return out
}

// timeOrUnknown reads a DescribeQuorum timestamp: -1 (unknown) is the zero time.
func timeOrUnknown(ms int64) time.Time {
	if ms < 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// UpdateRaftVoter records voter id's new Raft address (controller.UpdateVoter),
// forwarded to the active controller when this node is not it.
func (a *Admin) UpdateRaftVoter(ctx context.Context, id metadata.NodeID, raftAddr string) (kafka.QuorumLeader, error) {
	err := a.ctrl.UpdateVoter(ctx, id, raftAddr)
	if mayForward(ctx, err) {
		return a.ch.updateRaftVoter(ctx, id, raftAddr)
	}
	if err != nil {
		return kafka.QuorumLeader{}, kafka.WithCode(err)
	}
	return kafka.QuorumLeader{ID: a.ctrl.NodeID(), Epoch: int32(a.ctrl.Term()), RaftAddr: a.ctrl.Addr()}, nil
}

// AnnounceRaftAddr sends UpdateRaftVoter for this node (c's) with its new Raft
// address to the active controller, found through the voters of --controllers: it
// is controller.Config.AnnounceAddr, called while c starts, before this node has an
// Admin or serves Kafka. It retries while no controller is known or reachable, until
// ctx ends.
// pc dials the controller's inter-broker listener (nil: plaintext).
func AnnounceRaftAddr(ctx context.Context, c *controller.Controller, addr string, pc kafka.PeerClient, logger *slog.Logger) error {
	ch := NewChannel(c, c.NodeID(), logger)
	ch.SetPeerClient(pc)
	defer ch.Close()
	_, err := ch.updateRaftVoter(ctx, c.NodeID(), addr)
	return err
}

// updateRaftVoter sends UpdateRaftVoter to the active controller.
func (ch *Channel) updateRaftVoter(ctx context.Context, id metadata.NodeID, raftAddr string) (kafka.QuorumLeader, error) {
	host, port, err := splitAddr(raftAddr)
	if err != nil {
		return kafka.QuorumLeader{}, fmt.Errorf("%w: node %d's Raft address %q: %v", kerr.InvalidRequest, id, raftAddr, err)
	}
	var out kafka.QuorumLeader
	err = ch.do(ctx, "UpdateRaftVoter", func(ctx context.Context) error {
		req := kmsg.NewPtrUpdateRaftVoterRequest()
		req.VoterID = int32(id)
		if cid := ch.ctrl.Image().ClusterID; cid != "" {
			req.ClusterID = kmsg.StringPtr(cid)
		}
		l := kmsg.NewUpdateRaftVoterRequestListener()
		l.Name, l.Host, l.Port = kafka.ControllerListenerName, host, uint16(port)
		req.Listeners = append(req.Listeners, l)
		resp, err := ch.send(ctx, req)
		if err != nil {
			return err
		}
		r := resp.(*kmsg.UpdateRaftVoterResponse)
		if err := answerError(r.ErrorCode, nil); err != nil {
			return err
		}
		out = kafka.QuorumLeader{ID: metadata.NodeID(r.CurrentLeader.LeaderID), Epoch: r.CurrentLeader.LeaderEpoch}
		if r.CurrentLeader.Host != "" {
			out.RaftAddr = net.JoinHostPort(r.CurrentLeader.Host, strconv.Itoa(int(r.CurrentLeader.Port)))
		}
		return nil
	})
	return out, err
}
