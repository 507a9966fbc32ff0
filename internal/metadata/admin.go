package metadata

import "time"

// The arguments and answers of the controller's admin operations. The protocol layer
// decodes them from Kafka requests, the node's control plane runs or forwards them,
// and the controller carries them out: one definition, so that no layer copies them
// field by field on the way.

// TopicSpec is one topic of a CreateTopics request.
type TopicSpec struct {
	Name string
	// NumPartitions is the partition count; -1 means the broker default. Must be -1
	// when Assignments is set.
	NumPartitions int32
	// ReplicationFactor is the replica count; -1 means the broker default. Must be -1
	// when Assignments is set.
	ReplicationFactor int16
	// Assignments optionally fixes each partition's replicas (the first is the leader).
	// Keys must be 0..n-1; every list the same length, of distinct unfenced brokers.
	Assignments map[int32][]NodeID
	// Configs are the topic's config overrides.
	Configs map[string]string
}

// Reassignment is one partition of an AlterPartitionReassignments request: move it to
// Target, or cancel its reassignment in progress when Target is nil.
type Reassignment struct {
	TP     TopicPartition
	Target []NodeID
	// Throttle (bytes/s, 0: none) throttles the copy the change starts (KIP-73), with
	// throttles the controller owns and removes when the moves end.
	Throttle int64
}

// QuotaAlteration is one entity of an AlterClientQuotas request: each key of Set gets
// its value, a nil value removes the key.
type QuotaAlteration struct {
	Entity QuotaEntity
	Set    map[string]*float64
}

// ScramDeletion removes User's credential for Mechanism (a SASL name such as
// "SCRAM-SHA-256", or "mechanism type N" for a type Kafka does not define).
type ScramDeletion struct {
	User, Mechanism string
}

// ScramUpsertion sets User's credential for Mechanism from the salted password the
// client derived (AlterUserScramCredentials never carries the password).
type ScramUpsertion struct {
	User, Mechanism      string
	Iterations           int
	Salt, SaltedPassword []byte
}

// QuorumState is the active controller's view of the metadata quorum (DescribeQuorum).
type QuorumState struct {
	Leader NodeID
	// Term is the Raft term (Kafka's leader epoch of __cluster_metadata).
	Term uint64
	// HighWatermark is one past the last committed metadata offset.
	HighWatermark int64
	// Voters and Observers (the non-voters) in id order.
	Voters, Observers []QuorumMember
}

// QuorumMember is one member of the Raft configuration as DescribeQuorum reports it.
type QuorumMember struct {
	ID NodeID
	// Addr is its Raft address in the configuration (host:port).
	Addr  string
	Voter bool
	// LogEndOffset is one past the last metadata offset (the Raft index of a metadata
	// record) the member is known to hold; -1: unknown.
	LogEndOffset int64
	// LastFetch is the time of its last heartbeat to the active controller,
	// LastCaughtUp the time of the last one that reported every record the controller
	// had; zero when unknown.
	LastFetch, LastCaughtUp time.Time
}
