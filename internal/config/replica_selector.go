package config

// The values replica.selector.class takes: Kafka's class names, so that a Kafka
// server.properties that sets one loads unchanged. Runnel has no plug-in classes; these
// two name the behaviours it has (internal/replica, PreferredReadReplica).
const (
	// LeaderReplicaSelector is Kafka's default selector: every consumer reads from the
	// leader, and a Fetch never names a preferred read replica.
	LeaderReplicaSelector = "org.apache.kafka.common.replica.LeaderReplicaSelector"
	// RackAwareReplicaSelector is KIP-392's "fetch from the closest replica": a consumer
	// whose client.rack (Fetch v11+ RackID) matches the broker.rack of a live in-sync
	// follower holding its offset, and not the leader's, is told to read from that
	// follower (the most caught-up one when several match).
	RackAwareReplicaSelector = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
)

// checkReplicaSelector accepts the replica selectors Runnel has. Kafka would load any
// class on its class path; a class Runnel does not have stops the node at start-up with
// the property named (config.Error), rather than silently serving every consumer from
// the leader.
func checkReplicaSelector(v string) string {
	if v == LeaderReplicaSelector || v == RackAwareReplicaSelector {
		return ""
	}
	return "is not a replica selector Runnel has: use " + RackAwareReplicaSelector +
		" (fetch from the closest replica, KIP-392) or " + LeaderReplicaSelector + " (the default: consumers read from the leader)"
}
