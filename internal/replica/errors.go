package replica

import "errors"

var (
	// ErrUnknownTopicOrPartition: the partition is not hosted here and not in the metadata.
	ErrUnknownTopicOrPartition = errors.New("unknown topic or partition")
	// ErrNotLeader: this node hosts the partition but does not lead it (retriable; the
	// client refreshes metadata).
	ErrNotLeader = errors.New("not the leader for this partition")
	// ErrNotEnoughReplicas: acks=all with fewer than min.insync.replicas in the ISR;
	// nothing was appended.
	ErrNotEnoughReplicas = errors.New("not enough in-sync replicas")
	// ErrNotEnoughReplicasAfterAppend: the batch was appended but the ISR shrank below
	// min.insync.replicas before it was replicated.
	ErrNotEnoughReplicasAfterAppend = errors.New("not enough in-sync replicas after append")
	// ErrFencedLeaderEpoch: the request carries an older leader epoch than this replica's.
	ErrFencedLeaderEpoch = errors.New("fenced leader epoch")
	// ErrUnknownLeaderEpoch: the request carries a newer leader epoch than this replica knows.
	ErrUnknownLeaderEpoch = errors.New("unknown leader epoch")
	// ErrInvalidRequiredAcks: acks other than -1, 0 or 1.
	ErrInvalidRequiredAcks = errors.New("invalid required acks")
	// ErrTimeout: the request's timeout passed before the ISR acknowledged.
	ErrTimeout = errors.New("request timed out waiting for replication")
	// ErrShuttingDown: the node is stopping.
	ErrShuttingDown = errors.New("node is shutting down")
)
