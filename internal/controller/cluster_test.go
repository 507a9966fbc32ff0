package controller

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/metadata"
)

// startQuorum starts n voters on loopback, all bootstrapping the same configuration.
func startQuorum(t *testing.T, n int) []*Controller {
	t.Helper()
	return startQuorumWith(t, n, func(*Config) {})
}

// startQuorumWith is startQuorum with each node's config changed by mod.
func startQuorumWith(t *testing.T, n int, mod func(*Config)) []*Controller {
	t.Helper()
	var voters []Voter
	for i := 1; i <= n; i++ {
		voters = append(voters, Voter{ID: metadata.NodeID(i), Addr: freeAddr(t)})
	}
	cs := make([]*Controller, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		cfg := Config{NodeID: voters[i].ID, DataDir: t.TempDir(), Listen: voters[i].Addr, Voters: voters, Logger: testLogger(t)}
		if i == 0 {
			// A wildcard listener advertises its address from Voters.
			_, port, _ := net.SplitHostPort(voters[i].Addr)
			cfg.Listen = "0.0.0.0:" + port
		}
		mod(&cfg)
		c, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		cs[i] = c
		t.Cleanup(func() { c.Close() })
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			errs[i] = c.Start(ctx)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("start node %d: %v", i+1, err)
		}
	}
	return cs
}

func leaderOf(t *testing.T, cs []*Controller) *Controller {
	t.Helper()
	var leader *Controller
	eventually(t, 10*time.Second, func() error {
		for _, c := range cs {
			if c != nil && c.IsLeader() {
				leader = c
				return nil
			}
		}
		return fmt.Errorf("no leader among %d nodes", len(cs))
	})
	return leader
}

func TestThreeVoters(t *testing.T) {
	cs := startQuorum(t, 3)
	leader := leaderOf(t, cs)
	clusterID := leader.Image().ClusterID
	for i := 1; i <= 3; i++ {
		registerLive(t, leader, metadata.Broker{ID: metadata.NodeID(i)})
	}
	mustCreate(t, leader, topicSpec("replicated", 3, 3))
	pid, err := leader.AllocateProducerID(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	id, _ := leader.LeaderID()
	for _, c := range cs {
		if c.Image().ClusterID != clusterID {
			t.Fatalf("node %d cluster id %q, want %q", c.cfg.NodeID, c.Image().ClusterID, clusterID)
		}
		if c == leader {
			continue
		}
		wantErr(t, "create on a follower", c.CreateTopics(testCtx(t), []metadata.TopicSpec{topicSpec("x", 1, 1)}, false)[0], ErrNotController)
		if err := c.WaitApplied(testCtx(t), leader.Image().Offset); err != nil {
			t.Fatal(err)
		}
		checkNewTopic(t, c.Image().Topic("replicated"), 3, 3)
		if got, _ := c.LeaderID(); got != id {
			t.Fatalf("node %d thinks the leader is %d, want %d", c.cfg.NodeID, got, id)
		}
	}

	// The leader stops; the other two elect a new one, which carries on.
	leader.Close()
	var rest []*Controller
	for _, c := range cs {
		if c != leader {
			rest = append(rest, c)
		}
	}
	next := leaderOf(t, rest)
	mustCreate(t, next, topicSpec("after-failover", 1, 2))
	pid2, err := next.AllocateProducerID(testCtx(t))
	if err != nil || pid2 < pid+producerIDBlockSize {
		t.Fatalf("new leader's producer id %d (%v) is inside the old leader's block starting at %d", pid2, err, pid)
	}
}
