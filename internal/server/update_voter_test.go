package server

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/testutil"
)

// TestVoterRestartsWithNewRaftAddress: three voters run as real `runnel server`
// processes. Voter 3 is killed -9 and started again with another --controller-listen.
// Raft's leader sends to the address in its configuration, so without
// UpdateRaftVoter (KIP-853) node 3 would wait for the quorum for ever; with it node 3
// becomes ready, DescribeQuorum shows its new address, and it applies a metadata
// change made after its restart (a topic created through node 1). UpdateRaftVoter
// itself answers VOTER_NOT_FOUND for a node that is not a voter and INVALID_REQUEST
// without a CONTROLLER listener.
func TestVoterRestartsWithNewRaftAddress(t *testing.T) {
	if testing.Short() {
		t.Skip("three server processes; skipped with -short")
	}
	type node struct{ kafka, raft, http, dir string }
	nodes := make([]node, 3)
	for i := range nodes {
		nodes[i] = node{testutil.FreeAddr(t), testutil.FreeAddr(t), testutil.FreeAddr(t), t.TempDir()}
	}
	controllers := func() string {
		var vs []string
		for i, n := range nodes {
			vs = append(vs, fmt.Sprintf("%d@%s", i+1, n.raft))
		}
		return strings.Join(vs, ",")
	}
	start := func(i int) *runnelProc {
		n := nodes[i]
		return startRunnel(t, "server", "--node-id", strconv.Itoa(i+1), "--data-dir", n.dir, "--listen", n.kafka,
			"--controller-listen", n.raft, "--controllers", controllers(), "--http-listen", n.http,
			"--set", "broker.session.timeout.ms=3000", "--set", "broker.heartbeat.interval.ms=500")
	}
	procs := make([]*runnelProc, 3)
	for i := range procs {
		procs[i] = start(i)
	}
	for i := range procs {
		waitReady(t, procs[i], nodes[i].http, 60*time.Second)
	}

	procs[2].cmd.Process.Signal(syscall.SIGKILL)
	<-procs[2].exited
	old := nodes[2].raft
	nodes[2].raft = testutil.FreeAddr(t)
	restarted := time.Now()
	procs[2] = start(2)
	waitReady(t, procs[2], nodes[2].http, 30*time.Second)
	t.Logf("voter 3 ready at its new Raft address %s (was %s) %v after its restart", nodes[2].raft, old, time.Since(restarted).Round(time.Millisecond))

	cl, err := kgo.NewClient(kgo.SeedBrokers(nodes[0].kafka))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if got := voterAddr(t, ctx, cl, 3); got != nodes[2].raft {
		t.Errorf("DescribeQuorum gives voter 3 at %q, want its new address %s", got, nodes[2].raft)
	}
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 3, nil, "after-restart"); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	cl3, err := kgo.NewClient(kgo.SeedBrokers(nodes[2].kafka))
	if err != nil {
		t.Fatal(err)
	}
	defer cl3.Close()
	testutil.Eventually(t, 10*time.Second, func() error {
		req := kmsg.NewPtrMetadataRequest()
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr("after-restart")
		req.Topics = append(req.Topics, mt)
		resp, err := req.RequestWith(ctx, cl3)
		if err != nil {
			return err
		}
		if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
			return fmt.Errorf("node 3 does not know topic after-restart: %+v", resp.Topics)
		}
		return nil
	})

	update := func(id int32, listeners ...kmsg.UpdateRaftVoterRequestListener) int16 {
		req := kmsg.NewPtrUpdateRaftVoterRequest()
		req.VoterID, req.Listeners = id, listeners
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("UpdateRaftVoter of %d: %v", id, err)
		}
		return resp.ErrorCode
	}
	l := kmsg.NewUpdateRaftVoterRequestListener()
	l.Name, l.Host, l.Port = "CONTROLLER", "127.0.0.1", 1
	if code := update(9, l); code != kerr.VoterNotFound.Code {
		t.Errorf("UpdateRaftVoter of a node that is not a voter: %v, want VOTER_NOT_FOUND", kerr.ErrorForCode(code))
	}
	if code := update(3); code != kerr.InvalidRequest.Code {
		t.Errorf("UpdateRaftVoter without a CONTROLLER listener: %v, want INVALID_REQUEST", kerr.ErrorForCode(code))
	}
}

// waitReady waits until the node's /readyz answers 200, failing if its process exits.
func waitReady(t *testing.T, p *runnelProc, httpAddr string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		if code, err := get("http://" + httpAddr + "/readyz"); err == nil && code == 200 {
			return
		}
		select {
		case <-p.exited:
			t.Fatalf("node at %s exited before it was ready: %v\n%s", httpAddr, p.err, p.output())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("node at %s not ready after %v\n%s", httpAddr, d, p.output())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// voterAddr is voter id's Raft address in DescribeQuorum (v2 lists the endpoints).
func voterAddr(t *testing.T, ctx context.Context, cl *kgo.Client, id int32) string {
	t.Helper()
	req := kmsg.NewPtrDescribeQuorumRequest()
	req.Version = 2
	dt := kmsg.NewDescribeQuorumRequestTopic()
	dt.Topic = "__cluster_metadata"
	dt.Partitions = append(dt.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	req.Topics = append(req.Topics, dt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("DescribeQuorum: %v", err)
	}
	for _, n := range resp.Nodes {
		if n.NodeID == id {
			for _, l := range n.Listeners {
				return net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port)))
			}
		}
	}
	return ""
}
