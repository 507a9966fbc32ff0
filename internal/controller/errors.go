package controller

import "errors"

// Sentinel errors returned by the Controller's operations, wrapped with details; check
// them with errors.Is. internal/kafka maps each to a Kafka error code.
var (
	// ErrNotController is returned by every proposing operation on a node that is not the
	// Raft leader, or that lost leadership before its proposal committed (the proposal
	// may then still commit). Kafka: NOT_CONTROLLER.
	ErrNotController = errors.New("not the active controller")
	// ErrTopicExists is returned by CreateTopics for a name already in the image.
	ErrTopicExists = errors.New("topic already exists")
	// ErrUnknownTopic is returned for a topic (or partition) not in the image.
	// Kafka: UNKNOWN_TOPIC_OR_PARTITION.
	ErrUnknownTopic = errors.New("unknown topic or partition")
	// ErrInvalidTopic is returned by ValidateTopicName and CreateTopics for a name that
	// breaks Kafka's rules or collides with an existing one after '.'/'_' folding.
	ErrInvalidTopic = errors.New("invalid topic")
	// ErrInvalidPartitions is returned for a partition count that is not positive, too
	// large, or (CreatePartitions) not above the current count.
	ErrInvalidPartitions = errors.New("invalid partitions")
	// ErrInvalidReplicationFactor is returned for a replication factor that is not
	// positive or exceeds the number of unfenced brokers.
	ErrInvalidReplicationFactor = errors.New("invalid replication factor")
	// ErrInvalidReplicaAssignment is returned for a manual assignment with gaps,
	// duplicates, unknown brokers or uneven replica counts.
	ErrInvalidReplicaAssignment = errors.New("invalid replica assignment")
	// ErrInvalidConfig wraps the error of Config.ValidateTopicConfig (or
	// ValidateBrokerConfig) for a rejected config entry.
	ErrInvalidConfig = errors.New("invalid config")
	// ErrInvalidRequest is returned for requests that are malformed as a whole: a topic
	// named twice in one CreateTopics, both a manual assignment and a partition count,
	// an AlterPartition from a broker that is not the leader or with an ISR that does
	// not contain it. Kafka: INVALID_REQUEST.
	ErrInvalidRequest = errors.New("invalid request")
	// ErrIneligibleReplica is returned by AlterPartition when the new ISR names a
	// replica that is not registered or is fenced. Kafka: INELIGIBLE_REPLICA.
	ErrIneligibleReplica = errors.New("ineligible replica")
	// ErrTopicDeletionDisabled is returned by DeleteTopics when
	// Config.DisableTopicDeletion is set (Kafka delete.topic.enable=false).
	ErrTopicDeletionDisabled = errors.New("topic deletion is disabled")
	// ErrFencedLeaderEpoch is returned by AlterPartition when the request's leader epoch
	// is not the partition's current one.
	ErrFencedLeaderEpoch = errors.New("fenced leader epoch")
	// ErrInvalidUpdateVersion is returned by AlterPartition when the request's partition
	// epoch is not the partition's current one (a stale or concurrent ISR change).
	ErrInvalidUpdateVersion = errors.New("invalid partition epoch")
	// ErrTimeout is returned when the caller's context ends before a proposal is
	// applied (it may still be applied later), or before Start sees a leader.
	// Kafka: REQUEST_TIMED_OUT.
	ErrTimeout = errors.New("controller operation timed out")
	// ErrBrokerNotRegistered is returned by BrokerHeartbeat and AllocateProducerIDBlock
	// for a broker id with no registration. Kafka: BROKER_ID_NOT_REGISTERED.
	ErrBrokerNotRegistered = errors.New("broker not registered")
	// ErrStaleBrokerEpoch is returned by BrokerHeartbeat and AllocateProducerIDBlock when
	// the broker's epoch is not its current registration's: it must register again.
	// Kafka: STALE_BROKER_EPOCH.
	ErrStaleBrokerEpoch = errors.New("stale broker epoch")
	// ErrInconsistentClusterID is returned by RegisterBroker for a broker that names
	// another cluster. Kafka: INCONSISTENT_CLUSTER_ID.
	ErrInconsistentClusterID = errors.New("inconsistent cluster id")
	// ErrClosed is returned by operations on a closed Controller.
	ErrClosed = errors.New("controller closed")
)
