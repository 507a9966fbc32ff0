package clustertest_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/runnel-io/runnel/internal/clustertest"
)

// inVirtualTime runs f in a synctest bubble and logs the virtual time it simulated
// beside the wall time it took (time.Now is the fake clock inside the bubble and the
// real one outside).
func inVirtualTime(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	var simulated time.Duration
	wall := time.Now()
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		t.Cleanup(func() { simulated = time.Since(start) })
		f(t)
	})
	t.Logf("virtual time %v, wall time %v", simulated.Round(time.Millisecond), time.Since(wall).Round(time.Millisecond))
}

// startVirtual starts n in-process nodes on a virtual network; call it inside
// synctest.Test.
func startVirtual(t *testing.T, n int) *clustertest.Cluster {
	t.Helper()
	return clustertest.Start(t, clustertest.Options{Nodes: n, Virtual: true, Sets: clustertest.FastFailureDetection, StartTimeout: startTimeout})
}

// TestVirtualLeaderKill kills the leader of a partition under an acks=all idempotent
// load, in virtual time: a new leader is elected from the ISR, the load goes on, the
// old leader restarts on its data directory and rejoins the ISR, and every record
// acknowledged is on every ISR replica's disk (History.Check).
//
// Plain kills the leader wherever the load is. On the virtual network a follower
// fetches what the leader appends before the clock moves, so a plain kill rarely
// leaves records only on the leader; WithTail makes sure it does: the leader is cut
// off from its followers for half of replica.lag.time.max.ms (they stay in the ISR)
// while the load appends to it, and is killed before the heal. Those records were
// never acknowledged (the high watermark could not pass them), and the new leader,
// which lacks them, must not lose an acknowledged one.
func TestVirtualLeaderKill(t *testing.T) {
	t.Run("Plain", func(t *testing.T) { testVirtualLeaderKill(t, false) })
	t.Run("WithTail", func(t *testing.T) { testVirtualLeaderKill(t, true) })
}

func testVirtualLeaderKill(t *testing.T, tail bool) {
	inVirtualTime(t, func(t *testing.T) {
		c := startVirtual(t, 3)
		topic := "orders"
		createTopic(t, c, topic, 1, 3)
		h := clustertest.NewHistory()
		load := c.StartLoad(t, h, clustertest.LoadOptions{Topic: topic, Rate: 200})
		waitAcks(t, h, 200, "before the kill")
		leader, epoch := c.WaitLeader(t, topic, 0, waitTimeout)
		if tail {
			c.Isolate(int(leader))
			time.Sleep(replicaLagMax / 2)
			st, err := c.PartitionFrom(context.Background(), int(leader), topic, 0)
			if err != nil || len(st.ISR) != 3 {
				t.Fatalf("leader %d after %v cut off: ISR %v (%v), want all three replicas still", leader, replicaLagMax/2, st.ISR, err)
			}
		}
		acked := h.Len()
		c.Kill(int(leader))
		killed := time.Now()
		if tail {
			c.Heal()
		}
		next, nextEpoch := c.WaitLeader(t, topic, 0, waitTimeout)
		if next == leader || nextEpoch <= epoch {
			t.Fatalf("after killing leader %d (epoch %d) the leader is %d (epoch %d)", leader, epoch, next, nextEpoch)
		}
		t.Logf("node %d took over from node %d %v (virtual) after the kill; %d records acknowledged before it", next, leader, time.Since(killed), acked)
		waitAcks(t, h, h.Len()+200, "after the kill")
		c.Restart(int(leader))
		c.WaitISR(t, topic, 0, 3, waitTimeout)
		waitAcks(t, h, h.Len()+200, "after the restart")
		stopLoad(t, load, h)
		res := h.Check(t, c, topic)
		if len(res.ISR[0]) != 3 {
			t.Errorf("checked ISR %v, want all three replicas", res.ISR[0])
		}
	})
}

// TestVirtualRestartAfterLongKill: a metadata voter killed for a long time (45 s of
// virtual time, with the cluster serving meanwhile) is ready again soon after its
// restart. Ready needs the node to have caught up with the metadata log, which the
// active controller's Raft replication sends; hashicorp/raft backs a failing follower
// off by doubling waits of up to 10.24 s, one doubling per failed attempt, so without
// the transport waiting for a refusing peer (controller/transport.go) the restarted
// node waited up to 10 s for its first entries (6.4-6.6 s measured here).
func TestVirtualRestartAfterLongKill(t *testing.T) {
	inVirtualTime(t, func(t *testing.T) {
		c := startVirtual(t, 3)
		ctrl := c.WaitController(t, -1, waitTimeout)
		victim := ctrl%3 + 1 // a voter that is not the active controller
		c.Kill(int(victim))
		time.Sleep(45 * time.Second)
		topic := "after-kill" // a metadata change the restarted node must catch up with
		createTopic(t, c, topic, 1, 2)
		restarted := time.Now()
		c.Restart(int(victim))
		took := time.Since(restarted)
		t.Logf("node %d, killed for 45 s, ready %v (virtual) after its restart", victim, took)
		if took > restartReadyBound {
			t.Errorf("node %d, killed for 45 s, took %v (virtual) to be ready after its restart, want at most %v", victim, took, restartReadyBound)
		}
	})
}

// restartReadyBound is how long a restarted voter may take to be ready: its own start
// (log recovery, a Raft election timeout's worth of catching up) with room to spare,
// far under Raft's 10.24 s replication backoff.
const restartReadyBound = 2 * time.Second
