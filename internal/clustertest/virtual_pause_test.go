package clustertest_test

import (
	"context"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/clustertest"
)

// TestVirtualPauseLeader pauses a partition's leader under an acks=all load, in
// virtual time (Pause: the node keeps its connections and answers nothing, as under
// SIGSTOP). The cluster must fence it once its broker session has expired and elect
// another leader from the ISR, the load goes on there; after Resume the old leader
// learns it was replaced, follows, and rejoins the ISR; every acknowledged record is
// on all three replicas.
func TestVirtualPauseLeader(t *testing.T) {
	inVirtualTime(t, func(t *testing.T) {
		c := startVirtual(t, 3)
		topic := "paused"
		createTopic(t, c, topic, 1, 3)
		h := clustertest.NewHistory()
		load := c.StartLoad(t, h, clustertest.LoadOptions{Topic: topic, Rate: 200})
		waitAcks(t, h, 200, "before the pause")
		leader, epoch := c.WaitLeader(t, topic, 0, waitTimeout)

		paused := time.Now()
		c.Pause(int(leader))
		if !c.Node(int(leader)).Paused() || c.Node(int(leader)).Alive() {
			t.Fatalf("node %d: Paused %v, Alive %v after Pause", leader, c.Node(int(leader)).Paused(), c.Node(int(leader)).Alive())
		}
		next, nextEpoch := c.WaitLeader(t, topic, 0, waitTimeout)
		took := time.Since(paused)
		if next == leader || nextEpoch <= epoch {
			t.Fatalf("after pausing leader %d (epoch %d) the leader is %d (epoch %d)", leader, epoch, next, nextEpoch)
		}
		t.Logf("node %d took over from paused node %d after %v (virtual), epoch %d -> %d", next, leader, took, epoch, nextEpoch)
		// The cluster can only learn of a silent node through its session, which runs
		// from the last heartbeat the controller had: up to one heartbeat interval
		// (broker.heartbeat.interval.ms, 500 ms in FastFailureDetection) before the pause.
		if took < sessionTimeout-heartbeatInterval {
			t.Errorf("leadership moved %v after the pause, before the broker session (%v, less one heartbeat interval %v) could expire", took, sessionTimeout, heartbeatInterval)
		}
		waitAcks(t, h, h.Len()+200, "with the old leader paused")

		resumed := time.Now()
		c.Resume(int(leader))
		// Right after Resume the node still answers with what it knew when it was
		// paused (itself leader at the old epoch, as a process after SIGCONT does)
		// until the controller's answer reaches it; the waits would take that stale
		// view for the partition's, so wait for the node to learn first.
		deadline := time.Now().Add(waitTimeout)
		for {
			st, err := c.PartitionFrom(context.Background(), int(leader), topic, 0)
			if err == nil && st.Leader != leader && st.LeaderEpoch >= nextEpoch {
				t.Logf("resumed node %d follows node %d at epoch %d %v after Resume", leader, st.Leader, st.LeaderEpoch, time.Since(resumed))
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("resumed node %d still sees %+v (%v) %v after Resume, want a leader other than itself at epoch %d or later", leader, st, err, waitTimeout, nextEpoch)
			}
			time.Sleep(10 * time.Millisecond)
		}
		isr := c.WaitISR(t, topic, 0, 3, waitTimeout)
		t.Logf("node %d back in the ISR %v %v after Resume", leader, isr, time.Since(resumed))
		if l, e := c.WaitLeader(t, topic, 0, waitTimeout); l == leader || e < nextEpoch {
			t.Errorf("after Resume the leader is %d at epoch %d: the paused node %d took it back from %d (epoch %d)", l, e, leader, next, nextEpoch)
		}
		waitAcks(t, h, h.Len()+200, "after the resume")
		stopLoad(t, load, h)
		if res := h.Check(t, c, topic); len(res.ISR[0]) != 3 {
			t.Errorf("checked ISR %v, want all three replicas", res.ISR[0])
		}
	})
}

// heartbeatInterval is broker.heartbeat.interval.ms in cluster.FastFailureDetection.
const heartbeatInterval = 500 * time.Millisecond
