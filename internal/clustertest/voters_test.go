package clustertest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/clustertest"
)

// TestReplaceVoter replaces a metadata voter's machine with real processes, as
// docs/metadata-quorum.md describes it: three voters, a fourth node joins and is
// promoted, the active controller (an original voter) is removed from the voters, and
// another original voter is killed with SIGKILL. The quorum left (the new node and
// one original) keeps committing metadata changes and keeps the brokers' leases, so
// an acks=all producer keeps getting acks; the promoted node restarts as a voter (the
// quorum needs it), the removed one restarts as an observer (its --controllers flag
// names it, and must not make it vote), and is then decommissioned. The refusals
// (an unknown node, a non-voter, the last voter) are checked on the way.
func TestReplaceVoter(t *testing.T) {
	c := startCluster(t, 3)
	boot := func() string { return c.Bootstrap() }
	n4 := c.AddNode(t)
	if r := runCLI("cluster", "add-voter", "9", "-b", boot()); r.code != 1 || !strings.Contains(r.stderr, "node 9 is not registered") {
		t.Fatalf("add-voter of an unknown node: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := runCLI("cluster", "remove-voter", "4", "-b", boot()); r.code != 1 || !strings.Contains(r.stderr, "VOTER_NOT_FOUND") {
		t.Fatalf("remove-voter of a non-voter: exit %d, stderr %q", r.code, r.stderr)
	}
	start := time.Now()
	if r := mustCLI(t, "cluster", "add-voter", "4", "-b", boot()); !strings.Contains(r.stdout, "Node 4 is now a voter") {
		t.Fatalf("add-voter 4: %q", r.stdout)
	}
	t.Logf("add-voter 4 took %v", time.Since(start))
	wantQuorum(t, c, []int32{1, 2, 3, 4}, nil)
	checkQuorumCLI(t, boot(), 4)

	// The roles: the active controller leaves the voters (so the leadership must move
	// first), another original voter is killed, the third stays.
	removed := c.WaitController(t, 0, waitTimeout)
	if removed == n4.ID {
		removed = 1
	}
	var killed, kept int32
	for id := int32(1); id <= 3; id++ {
		switch {
		case id == removed:
		case killed == 0:
			killed = id
		default:
			kept = id
		}
	}
	t.Logf("removing voter %d, then killing voter %d; node %d and node 4 are the quorum left", removed, killed, kept)
	topic := topicName(t)
	createAssigned(t, c, topic, [][]int32{{kept, n4.ID}})
	setMinISR(t, c.Admin(t), topic, "2")
	prod := c.Client(t, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic(topic), kgo.RecordRetries(1000))
	produceFor(t, prod, 0, "before the changes")

	start = time.Now()
	if r := mustCLI(t, "cluster", "remove-voter", fmt.Sprint(removed), "-b", boot()); !strings.Contains(r.stdout, "no longer a voter") {
		t.Fatalf("remove-voter %d: %q", removed, r.stdout)
	}
	t.Logf("remove-voter %d (the leadership moved first) took %v", removed, time.Since(start))
	wantQuorum(t, c, []int32{killed, kept, 4}, []int32{removed})
	// A restart with its old --controllers flag leaves it an observer.
	c.Kill(int(removed))
	c.Restart(int(removed))
	wantQuorum(t, c, []int32{killed, kept, 4}, []int32{removed})

	c.Kill(int(killed))
	start = time.Now()
	createAssigned(t, c, topic+"-after-kill", [][]int32{{n4.ID}})
	t.Logf("a topic created %v after voter %d was killed", time.Since(start), killed)
	// Longer than a broker session: the leases are renewed by the quorum left.
	produceFor(t, prod, sessionTimeout+time.Second, "after the kill")

	// Node 4 is needed for a majority of {killed, kept, 4}: the quorum is back only if
	// it comes back a voter.
	c.Kill(int(n4.ID))
	start = time.Now()
	c.Restart(int(n4.ID))
	t.Logf("node 4 restarted and ready as a voter in %v", time.Since(start))
	wantQuorum(t, c, []int32{killed, kept, 4}, []int32{removed})
	createAssigned(t, c, topic+"-after-restart", [][]int32{{kept}})
	produceFor(t, prod, 0, "after node 4 restarted")

	// The removed voter holds no replica: once stopped (fenced), decommission
	// unregisters it. Before the controller has fenced it, the command says to stop it
	// first, as it should.
	c.Kill(int(removed))
	c.WaitBrokers(t, sorted(kept, n4.ID), waitTimeout)
	if r := mustCLI(t, "cluster", "decommission", fmt.Sprint(removed), "-b", boot()); !strings.Contains(r.stdout, "Unregistered node") {
		t.Fatalf("decommission %d: %q", removed, r.stdout)
	}
	wantQuorum(t, c, []int32{killed, kept, 4}, nil)

	// Down to one voter, which is not removed.
	mustCLI(t, "cluster", "remove-voter", fmt.Sprint(killed), "-b", boot())
	mustCLI(t, "cluster", "remove-voter", fmt.Sprint(kept), "-b", boot())
	// The dead voter is demoted too, and stays an observer (of the configuration)
	// until it is decommissioned.
	wantQuorum(t, c, []int32{4}, sorted(killed, kept))
	if r := runCLI("cluster", "remove-voter", "4", "-b", boot()); r.code != 1 || !strings.Contains(r.stderr, "node 4 is the only metadata voter") {
		t.Fatalf("remove-voter of the last voter: exit %d, stderr %q", r.code, r.stderr)
	}
	createAssigned(t, c, topic+"-one-voter", [][]int32{{kept}})
}

// produceFor produces records with acks=all, one at a time, for at least d (one
// record when d is 0); every record must be acknowledged.
func produceFor(t *testing.T, cl *kgo.Client, d time.Duration, when string) {
	t.Helper()
	end := time.Now().Add(d)
	for i := 0; i == 0 || time.Now().Before(end); i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		err := cl.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("%s %d", when, i))).FirstErr()
		cancel()
		if err != nil {
			t.Fatalf("acks=all produce %s (record %d): %v", when, i, err)
		}
		time.Sleep(100 * time.Millisecond) // pacing, not a retry: every record must succeed
	}
}

// wantQuorum waits until DescribeQuorum, sent raw to the cluster, lists exactly these
// voters and observers (nil: none) with a leader among the voters.
func wantQuorum(t *testing.T, c *clustertest.Cluster, voters, observers []int32) {
	t.Helper()
	slices.Sort(voters)
	slices.Sort(observers)
	cl := c.Client(t)
	deadline := time.Now().Add(waitTimeout)
	for {
		v, o, leader, err := describeQuorumRaw(cl)
		if err == nil && slices.Equal(v, voters) && slices.Equal(o, observers) && slices.Contains(voters, leader) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("DescribeQuorum: voters %v, observers %v, leader %d (%v); want voters %v, observers %v", v, o, leader, err, voters, observers)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func describeQuorumRaw(cl *kgo.Client) (voters, observers []int32, leader int32, err error) {
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rt.Partitions = append(rt.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, nil, -1, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, nil, -1, err
	}
	p := resp.Topics[0].Partitions[0]
	for _, r := range p.CurrentVoters {
		voters = append(voters, r.ReplicaID)
	}
	for _, r := range p.Observers {
		observers = append(observers, r.ReplicaID)
	}
	slices.Sort(voters)
	slices.Sort(observers)
	return voters, observers, p.LeaderID, kerr.ErrorForCode(p.ErrorCode)
}

func sorted(ids ...int32) []int32 {
	slices.Sort(ids)
	return ids
}

// checkQuorumCLI reads `runnel cluster quorum --json`: voters voters, each with a
// known log end offset, a lag and a last fetch (the heartbeats report them).
func checkQuorumCLI(t *testing.T, boot string, voters int) {
	t.Helper()
	r := mustCLI(t, "cluster", "quorum", "--json", "-b", boot)
	var st struct {
		Leader        int32 `json:"leader"`
		HighWatermark int64 `json:"high_watermark"`
		Voters        []struct {
			ID           int32 `json:"id"`
			Role         string
			LogEndOffset int64 `json:"log_end_offset"`
			Lag          int64 `json:"lag"`
			LastFetch    int64 `json:"last_fetch_timestamp"`
		} `json:"voters"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatalf("cluster quorum --json: %v\n%s", err, r.stdout)
	}
	if len(st.Voters) != voters || st.HighWatermark <= 0 {
		t.Fatalf("cluster quorum --json: %s", r.stdout)
	}
	for _, v := range st.Voters {
		if v.LogEndOffset <= 0 || v.Lag < 0 || v.LastFetch <= 0 || (v.ID == st.Leader) != (v.Role == "leader") {
			t.Fatalf("cluster quorum --json: voter %d: %+v\n%s", v.ID, v, r.stdout)
		}
	}
	t.Logf("cluster quorum --json:\n%s", r.stdout)
}
