package clustertest_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// TestReassignWithSarama: a Kafka tool's reassignment through sarama's ClusterAdmin
// (AlterPartitionReassignments, ListPartitionReassignments), unchanged, against a
// three-node cluster: every partition moves onto the node it did not use.
func TestReassignWithSarama(t *testing.T) {
	skipIfShort(t)
	c := startCluster(t, 3)
	topic := topicName(t)
	const parts = 2
	createTopic(t, c, topic, parts, 2)
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_6_0_0
	adm, err := sarama.NewClusterAdmin(strings.Split(c.Bootstrap(), ","), cfg)
	if err != nil {
		t.Fatalf("sarama.NewClusterAdmin: %v", err)
	}
	defer adm.Close()
	assignment := make([][]int32, parts)
	for p := range int32(parts) {
		st, err := c.PartitionFrom(context.Background(), int(c.LiveIDs()[0]), topic, p)
		if err != nil {
			t.Fatal(err)
		}
		assignment[p] = []int32{spareNode(st.Replicas, 3), st.Replicas[0]}
	}
	if err := adm.AlterPartitionReassignments(topic, assignment); err != nil {
		t.Fatalf("sarama AlterPartitionReassignments %v: %v", assignment, err)
	}
	deadline := time.Now().Add(reassignTimeout)
	for {
		status, err := adm.ListPartitionReassignments(topic, []int32{0, 1})
		if err != nil {
			t.Fatalf("sarama ListPartitionReassignments: %v", err)
		}
		if len(status[topic]) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still reassigning after %v: %v", reassignTimeout, status[topic])
		}
		time.Sleep(50 * time.Millisecond)
	}
	for p := range int32(parts) {
		waitReplicas(t, c, topic, p, assignment[p])
	}
}
