package clustertest_test

import (
	"fmt"
	"net"
	"slices"
	"testing"
)

// TestNetnsAddNode: a node added to a cluster of namespaces (Options.Netns) gets a
// namespace of its own on the cluster's bridge, joins as a broker, and the cuts of
// Partition cover it. Cut off with voter 1 from voters 2 and 3, both are cut off (one
// voter of three is no majority; counting the four nodes, every node would be, two of
// four being no majority either), and the majority side fences both; after Heal both
// are registered and unfenced again.
func TestNetnsAddNode(t *testing.T) {
	skipIfShort(t)
	c := startNetns(t, 3)
	n := c.AddNode(t)
	host, _, err := net.SplitHostPort(n.KafkaAddr)
	if err != nil || n.Netns == "" || net.ParseIP(host).To4()[3] != 4 {
		t.Fatalf("node 4: Kafka address %q (%v), namespace %q: want 10.213.X.4 in a namespace of its own", n.KafkaAddr, err, n.Netns)
	}
	c.WaitBrokers(t, []int32{1, 2, 3, 4}, waitTimeout)

	c.Partition(1, 4)
	var cut []string
	for i := 1; i <= 4; i++ {
		cut = append(cut, fmt.Sprintf("%d:%v", i, c.CutOff(i)))
	}
	if !c.CutOff(1) || !c.CutOff(4) || c.CutOff(2) || c.CutOff(3) {
		t.Fatalf("after Partition(1, 4), cut off: %v; want nodes 1 and 4 only", cut)
	}
	if live := c.LiveIDs(); !slices.Equal(live, []int32{2, 3}) {
		t.Fatalf("live nodes %v, want [2 3]", live)
	}
	// Node 4's heartbeats no longer reach the controller on the majority side: its
	// namespace is cut too, not only node 1's.
	c.WaitBrokers(t, []int32{2, 3}, waitTimeout)
	c.Heal()
	c.WaitBrokers(t, []int32{1, 2, 3, 4}, waitTimeout)
}
