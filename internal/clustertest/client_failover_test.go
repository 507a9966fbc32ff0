package clustertest_test

import (
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/clustertest"
)

// clientFailoverBound is issue 11's promise: a producer with default settings gets
// acknowledgements again within 3 s of a kill -9 of a leader or of the controller.
const clientFailoverBound = 3 * time.Second

// TestDefaultClientFailover kills (kill -9) a partition leader, then the active
// controller's node, under producers with DEFAULT settings (franz-go and, where
// confluent-kafka imports, librdkafka), and requires each to be acknowledged again on
// every partition the victim led within clientFailoverBound. It failed before the
// controller fenced a killed node at once (franz-go: 5.3 s; its first metadata
// refresh named the dead leader, and it refreshes at most every 5 s).
func TestDefaultClientFailover(t *testing.T) {
	python := librdkafkaPython(t)
	c := clustertest.Start(t, clustertest.Options{Nodes: 3, StartTimeout: startTimeout})
	topic := topicName(t)
	createTopic(t, c, topic, 3, 3)
	for _, controller := range []bool{false, true} {
		// Fresh clients per fault: a franz-go client refreshes its metadata at most
		// every MetadataMinAge (5 s), so one that refreshed after the previous fault
		// less than 5 s before this one could not learn the new leader sooner, whatever
		// the nodes do.
		t.Run(map[bool]string{false: "kill-leader", true: "kill-controller"}[controller], func(t *testing.T) {
			killUnderDefaultClients(t, c, topic, python, controller)
		})
	}
}

// killUnderDefaultClients starts the default clients, lets them produce for longer
// than MetadataMinAge, kills (kill -9) a leader that is (controller) or is not the
// active controller, requires every client to be acknowledged again on the victim's
// partitions within clientFailoverBound, and restarts the victim.
func killUnderDefaultClients(t *testing.T, c *clustertest.Cluster, topic, python string, controller bool) {
	clients := []*clientAcks{startFranzDefault(t, c, topic)}
	if python != "" {
		clients = append(clients, startLibrdkafka(t, python, c, topic))
	}
	for _, cl := range clients {
		if !cl.waitAll(time.Time{}, []int32{0, 1, 2}, time.Now().Add(waitTimeout)) {
			t.Fatalf("%s: no acknowledgement on every partition within %v: %s", cl.name, waitTimeout, cl.failures())
		}
	}
	// Longer than franz-go's MetadataMinAge, so that its last refresh is old (see
	// clientSteady and waitMetadataOld).
	time.Sleep(clientSteady / 2 * 11 / 10)
	waitMetadataOld(t, clients)
	ctrl := c.WaitController(t, -1, waitTimeout)
	victim, led := pickVictim(t, c, topic, ctrl, controller)
	if victim < 0 {
		// Every partition is led by the controller, or none is: kill any leader.
		victim, led = pickVictim(t, c, topic, ctrl, !controller)
	}
	fault := time.Now()
	c.Kill(int(victim))
	deadline := fault.Add(clientFailoverBound)
	for _, cl := range clients {
		if !cl.waitAll(fault, led, deadline) {
			t.Errorf("kill -9 of node %d (leader of partitions %v, controller %v): %s", victim, led, victim == ctrl, cl.report(fault, led))
		} else {
			t.Logf("kill -9 of node %d (controller %v): %s", victim, victim == ctrl, cl.report(fault, led))
		}
	}
	c.Restart(int(victim))
	for p := range int32(3) {
		c.WaitISR(t, topic, p, 3, waitTimeout)
	}
}
