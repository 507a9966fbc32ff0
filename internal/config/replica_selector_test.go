package config

import (
	"errors"
	"strings"
	"testing"
)

// TestReplicaSelectorClass: replica.selector.class takes Kafka's two selector class
// names (the default, unset, behaves as the leader selector), and any other class stops
// the node at start-up with an error naming the property.
func TestReplicaSelectorClass(t *testing.T) {
	b, err := Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if b.ReplicaSelectorClass != "" {
		t.Fatalf("default replica.selector.class = %q; want unset (consumers read from the leader)", b.ReplicaSelectorClass)
	}
	for _, class := range []string{LeaderReplicaSelector, RackAwareReplicaSelector} {
		b, err := Load("", []string{"replica.selector.class=" + class})
		if err != nil {
			t.Fatalf("replica.selector.class=%s: %v", class, err)
		}
		if b.ReplicaSelectorClass != class {
			t.Fatalf("replica.selector.class=%s gave %q", class, b.ReplicaSelectorClass)
		}
	}
	for _, bad := range []string{"com.example.ClosestReplicaSelector", "org.apache.kafka.common.replica.MostCaughtUpReplicaSelector", ""} {
		_, err := Load("", []string{"replica.selector.class=" + bad})
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "replica.selector.class") ||
			!strings.Contains(err.Error(), RackAwareReplicaSelector) {
			t.Fatalf("replica.selector.class=%q: error %v; want an invalid config naming the property and the selectors Runnel has", bad, err)
		}
	}
}
