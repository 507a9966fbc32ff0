package cli

// `runnel cluster quorum`, `add-voter` and `remove-voter`: the metadata quorum
// (KIP-853), as kafka-metadata-quorum.sh describe --status/--replication,
// add-controller and remove-controller, over DescribeQuorum (55), AddRaftVoter (80)
// and RemoveRaftVoter (81). Any node answers them: it forwards them to the active
// controller.

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/clitext"
)

// metadataTopic is the metadata log's name in DescribeQuorum, as KRaft names it.
const metadataTopic = "__cluster_metadata"

// quorumStatus is `cluster quorum`'s output.
type quorumStatus struct {
	Leader        int32 `json:"leader"`
	LeaderEpoch   int32 `json:"leader_epoch"`
	HighWatermark int64 `json:"high_watermark"`
	// MaxFollowerLag is the largest lag of a voter behind the leader's log end, in
	// offsets; MaxFollowerLagMs the longest time since a voter was last caught up
	// (-1: unknown), as kafka-metadata-quorum.sh describe --status reports them.
	MaxFollowerLag   int64          `json:"max_follower_lag"`
	MaxFollowerLagMs int64          `json:"max_follower_lag_time_ms"`
	Voters           []quorumMember `json:"voters"`
	Observers        []quorumMember `json:"observers"`
}

// quorumMember is one voter or observer: Raft's non-voters, Runnel's other nodes.
type quorumMember struct {
	ID       int32  `json:"id"`
	Role     string `json:"role"` // leader, follower (a voter) or observer
	RaftAddr string `json:"raft_addr,omitempty"`
	// LogEndOffset is -1 when unknown; Lag is the leader's log end minus it (-1).
	LogEndOffset int64 `json:"log_end_offset"`
	Lag          int64 `json:"lag"`
	// LastFetch and LastCaughtUp are Unix milliseconds, -1 when unknown.
	LastFetch    int64 `json:"last_fetch_timestamp"`
	LastCaughtUp int64 `json:"last_caught_up_timestamp"`
}

// clusterQuorumCommands are the metadata quorum's `cluster` subcommands.
func clusterQuorumCommands(conn *connFlags) []*cobra.Command {
	return []*cobra.Command{newClusterQuorum(conn), newAddVoter(conn), newRemoveVoter(conn)}
}

func newClusterQuorum(conn *connFlags) *cobra.Command {
	var out outputFlags
	cmd := &cobra.Command{
		Use:   "quorum",
		Short: "Describe the metadata quorum: its leader, voters and observers (DescribeQuorum)",
		Long: `Describe the metadata quorum as kafka-metadata-quorum.sh describe --status and
--replication do: the active controller (leader), its epoch (the Raft term), the high
watermark (one past the last committed metadata offset), then every voter and observer (the nodes
that are not voters: they replay the metadata as brokers) with its log end offset, its
lag behind the leader and when it last fetched and was last caught up.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			asJSON, err := out.json()
			if err != nil {
				return err
			}
			cl, err := conn.client()
			if err != nil {
				return err
			}
			defer cl.Close()
			st, err := describeQuorum(cmd.Context(), cl)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), st)
			}
			return printQuorum(cmd.OutOrStdout(), st, time.Now())
		},
	}
	out.add(cmd)
	return cmd
}

func newAddVoter(conn *connFlags) *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "add-voter ID",
		Short: "Make node ID a voter of the metadata quorum (AddRaftVoter)",
		Long: `Promote node ID to a voter of the metadata quorum, as kafka-metadata-quorum.sh
add-controller does. The node must have joined the cluster (started with its own
--node-id and the cluster's --controllers, it is a broker and an observer of the
quorum), be running and have caught up with the metadata; the controller waits up to
--timeout for it to catch up. See docs/metadata-quorum.md for replacing a voter's
machine.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseNodeID(args[0])
			if err != nil {
				return err
			}
			if timeout <= 0 {
				return usageErrorf("--timeout must be positive")
			}
			cl, err := conn.client()
			if err != nil {
				return err
			}
			defer cl.Close()
			req := kmsg.NewPtrAddRaftVoterRequest()
			req.VoterID, req.TimeoutMillis = id, int32(timeout/time.Millisecond)
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout+10*time.Second)
			defer cancel()
			resp, err := req.RequestWith(ctx, cl)
			if err == nil {
				err = answerErr(resp.ErrorCode, resp.ErrorMessage)
			}
			if err != nil {
				return fmt.Errorf("add node %d as a metadata voter: %w", id, err)
			}
			return reportVoters(cmd.Context(), cmd.OutOrStdout(), cl, fmt.Sprintf("Node %d is now a voter of the metadata quorum.", id))
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 30*time.Second, "how long the controller waits for the node to catch up")
	return cmd
}

func newRemoveVoter(conn *connFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "remove-voter ID",
		Short: "Remove node ID from the metadata quorum's voters (RemoveRaftVoter)",
		Long: `Remove node ID from the metadata quorum's voters, as kafka-metadata-quorum.sh
remove-controller does. The node stays a broker and an observer of the quorum; to take
it out of the cluster afterwards, run 'runnel cluster decommission ID'. If it is the
active controller, the leadership moves to another voter first. Refused for the last
voter, and when too few of the voters left are alive to form a majority.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseNodeID(args[0])
			if err != nil {
				return err
			}
			cl, err := conn.client()
			if err != nil {
				return err
			}
			defer cl.Close()
			req := kmsg.NewPtrRemoveRaftVoterRequest()
			req.VoterID = id
			resp, err := req.RequestWith(cmd.Context(), cl)
			if err == nil {
				err = answerErr(resp.ErrorCode, resp.ErrorMessage)
			}
			if err != nil {
				return fmt.Errorf("remove node %d from the metadata voters: %w", id, err)
			}
			return reportVoters(cmd.Context(), cmd.OutOrStdout(), cl, fmt.Sprintf(
				"Node %d is no longer a voter of the metadata quorum; it stays a broker (runnel cluster decommission %d takes it out of the cluster).", id, id))
		},
	}
	return cmd
}

func parseNodeID(s string) (int32, error) {
	id, err := strconv.ParseInt(s, 10, 32)
	if err != nil || id < 0 {
		return 0, usageErrorf("bad node id %q", s)
	}
	return int32(id), nil
}

// answerErr is a response's error code with its message.
func answerErr(code int16, msg *string) error {
	err := kerr.ErrorForCode(code)
	if err != nil && msg != nil {
		return withMessage(err, *msg)
	}
	return err
}

// reportVoters prints done and the voters now.
func reportVoters(ctx context.Context, w io.Writer, cl *kgo.Client, done string) error {
	fmt.Fprintln(w, done)
	st, err := describeQuorum(ctx, cl)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "Voters: %s; leader: node %d.\n", memberList(st.Voters), st.Leader)
	return nil
}

// describeQuorum asks for the quorum and computes the lags.
func describeQuorum(ctx context.Context, cl *kgo.Client) (*quorumStatus, error) {
	req := kmsg.NewPtrDescribeQuorumRequest()
	t := kmsg.NewDescribeQuorumRequestTopic()
	t.Topic = metadataTopic
	t.Partitions = append(t.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err == nil {
		err = answerErr(resp.ErrorCode, resp.ErrorMessage)
	}
	if err == nil && (len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1) {
		err = fmt.Errorf("the answer has no %s-0", metadataTopic)
	}
	if err != nil {
		return nil, fmt.Errorf("describe the metadata quorum: %w", err)
	}
	p := resp.Topics[0].Partitions[0]
	if err := answerErr(p.ErrorCode, p.ErrorMessage); err != nil {
		return nil, fmt.Errorf("describe the metadata quorum: %w", err)
	}
	addrs := map[int32]string{}
	for _, n := range resp.Nodes {
		for _, l := range n.Listeners {
			addrs[n.NodeID] = fmt.Sprintf("%s:%d", l.Host, l.Port)
		}
	}
	st := &quorumStatus{Leader: p.LeaderID, LeaderEpoch: p.LeaderEpoch, HighWatermark: p.HighWatermark, MaxFollowerLagMs: -1,
		Voters: []quorumMember{}, Observers: []quorumMember{}}
	leaderEnd := int64(-1)
	for _, v := range p.CurrentVoters {
		if v.ReplicaID == p.LeaderID {
			leaderEnd = v.LogEndOffset
		}
	}
	member := func(r kmsg.DescribeQuorumResponseTopicPartitionReplicaState, role string) quorumMember {
		m := quorumMember{ID: r.ReplicaID, Role: role, RaftAddr: addrs[r.ReplicaID], LogEndOffset: r.LogEndOffset, Lag: -1,
			LastFetch: r.LastFetchTimestamp, LastCaughtUp: r.LastCaughtUpTimestamp}
		if leaderEnd >= 0 && r.LogEndOffset >= 0 {
			m.Lag = max(leaderEnd-r.LogEndOffset, 0)
		}
		return m
	}
	now := time.Now().UnixMilli()
	for _, v := range p.CurrentVoters {
		role := "follower"
		if v.ReplicaID == p.LeaderID {
			role = "leader"
		}
		m := member(v, role)
		st.MaxFollowerLag = max(st.MaxFollowerLag, m.Lag)
		if m.LastCaughtUp >= 0 {
			st.MaxFollowerLagMs = max(st.MaxFollowerLagMs, now-m.LastCaughtUp)
		}
		st.Voters = append(st.Voters, m)
	}
	for _, o := range p.Observers {
		st.Observers = append(st.Observers, member(o, "observer"))
	}
	return st, nil
}

func printQuorum(w io.Writer, st *quorumStatus, now time.Time) error {
	tw := newTable(w)
	fmt.Fprintf(tw, "Leader:\tnode %d\n", st.Leader)
	fmt.Fprintf(tw, "Leader epoch:\t%d\n", st.LeaderEpoch)
	fmt.Fprintf(tw, "High watermark:\t%d\n", st.HighWatermark)
	lagTime := "-"
	if st.MaxFollowerLagMs >= 0 {
		lagTime = fmt.Sprintf("%d ms", st.MaxFollowerLagMs)
	}
	fmt.Fprintf(tw, "Max follower lag:\t%s, %s\n", clitext.Plural(st.MaxFollowerLag, "offset", "offsets"), lagTime)
	fmt.Fprintf(tw, "Voters:\t%s\n", memberList(st.Voters))
	fmt.Fprintf(tw, "Observers:\t%s\n", memberList(st.Observers))
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = newTable(w)
	fmt.Fprintln(tw, "NODE\tROLE\tRAFT ADDRESS\tLOG END OFFSET\tLAG\tLAST FETCH\tLAST CAUGHT UP")
	for _, ms := range [][]quorumMember{st.Voters, st.Observers} {
		for _, m := range ms {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", m.ID, m.Role, orDash(m.RaftAddr), dash(m.LogEndOffset), dash(m.Lag),
				sinceMs(m.LastFetch, now), sinceMs(m.LastCaughtUp, now))
		}
	}
	return tw.Flush()
}

// sinceMs renders a Unix-millisecond time as "N ms ago" at now, "-" when unknown.
func sinceMs(ms int64, now time.Time) string {
	if ms < 0 {
		return "-"
	}
	return fmt.Sprintf("%d ms ago", max(now.UnixMilli()-ms, 0))
}

func memberList(ms []quorumMember) string {
	if len(ms) == 0 {
		return "none"
	}
	ids := make([]int32, len(ms))
	for i, m := range ms {
		ids[i] = m.ID
	}
	return joinInt32s(ids)
}
