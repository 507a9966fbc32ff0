package kafka

import (
	"context"
	"errors"
	"fmt"

	"github.com/runnel-io/runnel/internal/controller"
	"github.com/runnel-io/runnel/internal/group"
	"github.com/runnel-io/runnel/internal/recordbatch"
	"github.com/runnel-io/runnel/internal/replica"
	"github.com/runnel-io/runnel/internal/share"
	"github.com/runnel-io/runnel/internal/txn"
	"github.com/twmb/franz-go/pkg/kerr"
)

// errorTable maps internal sentinels to Kafka error codes. It is the only place that
// does: handlers call errorCode (or one of the per-API adjustments below it) and never
// pick codes for internal errors themselves. No internal error wraps two sentinels of
// different codes, so the order of the rows does not matter.
var errorTable = []struct {
	err  error
	kerr *kerr.Error
}{
	// The log and the replicas.
	{replica.ErrUnknownTopicOrPartition, kerr.UnknownTopicOrPartition},
	{replica.ErrNotLeader, kerr.NotLeaderForPartition},
	{replica.ErrNotEnoughReplicas, kerr.NotEnoughReplicas},
	{replica.ErrNotEnoughReplicasAfterAppend, kerr.NotEnoughReplicasAfterAppend},
	{replica.ErrFencedLeaderEpoch, kerr.FencedLeaderEpoch},
	{replica.ErrUnknownLeaderEpoch, kerr.UnknownLeaderEpoch},
	{replica.ErrInvalidRequiredAcks, kerr.InvalidRequiredAcks},
	{replica.ErrTimeout, kerr.RequestTimedOut},
	{replica.ErrShuttingDown, kerr.NotLeaderForPartition},
	{replica.ErrOffsetOutOfRange, kerr.OffsetOutOfRange},
	{replica.ErrRecordTooLarge, kerr.MessageTooLarge},
	{replica.ErrOutOfOrderSequence, kerr.OutOfOrderSequenceNumber},
	{replica.ErrInvalidProducerEpoch, kerr.InvalidProducerEpoch},
	{replica.ErrInvalidRecord, kerr.InvalidRecord},
	{replica.ErrKafkaStorage, kerr.KafkaStorageError},
	{replica.ErrClosed, kerr.NotLeaderForPartition},
	{recordbatch.ErrUnsupportedMagic, kerr.UnsupportedForMessageFormat},
	{recordbatch.ErrCorrupt, kerr.CorruptMessage},
	{recordbatch.ErrTruncated, kerr.CorruptMessage},
	{replica.ErrCorruption, kerr.CorruptMessage},
	{replica.ErrInvalidTxnState, kerr.InvalidTxnState},
	{replica.ErrTxnCoordinatorFenced, kerr.TransactionCoordinatorFenced},

	// The group coordinator (groups.go).
	{group.ErrNotCoordinator, kerr.NotCoordinator},
	{group.ErrCoordinatorNotAvailable, kerr.CoordinatorNotAvailable},
	{group.ErrCoordinatorLoadInProgress, kerr.CoordinatorLoadInProgress},
	{group.ErrInvalidGroupID, kerr.InvalidGroupID},
	{group.ErrUnknownMemberID, kerr.UnknownMemberID},
	{group.ErrMemberIDRequired, kerr.MemberIDRequired},
	{group.ErrIllegalGeneration, kerr.IllegalGeneration},
	{group.ErrRebalanceInProgress, kerr.RebalanceInProgress},
	{group.ErrFencedInstanceID, kerr.FencedInstanceID},
	{group.ErrInconsistentGroupProtocol, kerr.InconsistentGroupProtocol},
	{group.ErrInvalidSessionTimeout, kerr.InvalidSessionTimeout},
	{group.ErrGroupMaxSizeReached, kerr.GroupMaxSizeReached},
	{group.ErrGroupIDNotFound, kerr.GroupIDNotFound},
	{group.ErrNonEmptyGroup, kerr.NonEmptyGroup},
	{group.ErrGroupSubscribedToTopic, kerr.GroupSubscribedToTopic},
	{group.ErrOffsetMetadataTooLarge, kerr.OffsetMetadataTooLarge},
	{group.ErrInvalidCommitOffsetSize, kerr.InvalidCommitOffsetSize},
	{group.ErrClosed, kerr.NotCoordinator},
	{group.ErrFencedMemberEpoch, kerr.FencedMemberEpoch},
	{group.ErrStaleMemberEpoch, kerr.StaleMemberEpoch},
	{group.ErrUnreleasedInstanceID, kerr.UnreleasedInstanceID},
	{group.ErrUnsupportedAssignor, kerr.UnsupportedAssignor},
	{group.ErrInvalidRegularExpression, kerr.InvalidRegularExpression},
	{group.ErrInvalidRequest, kerr.InvalidRequest},
	{group.ErrUnsupportedVersion, kerr.UnsupportedVersion},
	{group.ErrProducerFenced, kerr.ProducerFenced},

	// The transaction coordinator (txn.go).
	{txn.ErrNotCoordinator, kerr.NotCoordinator},
	{txn.ErrLoadInProgress, kerr.CoordinatorLoadInProgress},
	{txn.ErrCoordinatorNotAvailable, kerr.CoordinatorNotAvailable},
	{txn.ErrConcurrentTransactions, kerr.ConcurrentTransactions},
	{txn.ErrProducerFenced, kerr.ProducerFenced},
	{txn.ErrInvalidProducerIDMapping, kerr.InvalidProducerIDMapping},
	{txn.ErrInvalidTxnState, kerr.InvalidTxnState},
	{txn.ErrInvalidTimeout, kerr.InvalidTransactionTimeout},
	{txn.ErrTransactionalIDNotFound, kerr.TransactionalIDNotFound},

	// The share groups (share.go).
	{share.ErrNotCoordinator, kerr.NotCoordinator},
	{share.ErrUnknownMemberID, kerr.UnknownMemberID},
	{share.ErrFencedMemberEpoch, kerr.FencedMemberEpoch},
	{share.ErrGroupMaxSize, kerr.GroupMaxSizeReached},
	{share.ErrNotShareGroup, kerr.GroupIDNotFound},
	{share.ErrGroupNotEmpty, kerr.NonEmptyGroup},
	{share.ErrInvalidRecordState, kerr.InvalidRecordState},
	{share.ErrInvalidRequest, kerr.InvalidRequest},
	{share.ErrInvalidSessionEpoch, kerr.InvalidShareSessionEpoch},
	{share.ErrSessionNotFound, kerr.ShareSessionNotFound},
	{share.ErrStore, kerr.CoordinatorNotAvailable},

	// The controller: run on this node by controlplane, which wraps them with WithCode
	// so that a change run here answers as one forwarded to the active controller does.
	{controller.ErrNotController, kerr.NotController},
	{controller.ErrTopicExists, kerr.TopicAlreadyExists},
	{controller.ErrUnknownTopic, kerr.UnknownTopicOrPartition},
	{controller.ErrInvalidTopic, kerr.InvalidTopicException},
	{controller.ErrInvalidPartitions, kerr.InvalidPartitions},
	{controller.ErrInvalidReplicationFactor, kerr.InvalidReplicationFactor},
	{controller.ErrInvalidReplicaAssignment, kerr.InvalidReplicaAssignment},
	{controller.ErrInvalidConfig, kerr.InvalidConfig},
	{controller.ErrInvalidRequest, kerr.InvalidRequest},
	{controller.ErrIneligibleReplica, kerr.IneligibleReplica},
	{controller.ErrTopicDeletionDisabled, kerr.TopicDeletionDisabled},
	{controller.ErrFencedLeaderEpoch, kerr.FencedLeaderEpoch},
	{controller.ErrInvalidUpdateVersion, kerr.InvalidUpdateVersion},
	{controller.ErrBrokerNotRegistered, kerr.BrokerIDNotRegistered},
	{controller.ErrStaleBrokerEpoch, kerr.StaleBrokerEpoch},
	{controller.ErrInconsistentClusterID, kerr.InconsistentClusterID},
	{controller.ErrNoReassignmentInProgress, kerr.NoReassignmentInProgress},
	{controller.ErrElectionNotNeeded, kerr.ElectionNotNeeded},
	{controller.ErrPreferredLeaderNotAvailable, kerr.PreferredLeaderNotAvailable},
	{controller.ErrEligibleLeadersNotAvailable, kerr.EligibleLeadersNotAvailable},
	{controller.ErrTimeout, kerr.RequestTimedOut},
	{controller.ErrClosed, kerr.NotController},
	{controller.ErrDuplicateVoter, kerr.DuplicateVoter},
	{controller.ErrVoterNotFound, kerr.VoterNotFound},
	{controller.ErrUnsupportedSaslMechanism, kerr.UnsupportedSaslMechanism},
	{controller.ErrUnacceptableCredential, kerr.UnacceptableCredential},
	{controller.ErrCredentialNotFound, kerr.ResourceNotFound},
	{controller.ErrDuplicateUser, kerr.DuplicateResource},

	{context.DeadlineExceeded, kerr.RequestTimedOut},
	{context.Canceled, kerr.RequestTimedOut},
}

// WithCode wraps err with the Kafka error errorTable gives it, keeping err and its
// message, for errors that must carry their code before a handler answers them: the
// control plane's, whose callers handle a change run on this node and one forwarded
// to the active controller (whose answer is a code) alike. nil, and an error the table
// does not know, are returned as they are.
func WithCode(err error) error {
	if err == nil {
		return nil
	}
	for _, e := range errorTable {
		if errors.Is(err, e.err) {
			return fmt.Errorf("%w: %w", e.kerr, err)
		}
	}
	return err
}

// errorCode is the Kafka error code for err (0 for nil). Errors that wrap a *kerr.Error
// (the Admin implementation returns those) keep their code; anything unknown is
// UNKNOWN_SERVER_ERROR.
func errorCode(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	for _, e := range errorTable {
		if errors.Is(err, e.err) {
			return e.kerr.Code
		}
	}
	return kerr.UnknownServerError.Code
}

// groupErrorCode is errorCode for the group APIs: a request the stopping server cut
// short answers NOT_COORDINATOR, which sends the client to find the coordinator
// again, not REQUEST_TIMED_OUT.
func groupErrorCode(err error) int16 {
	if errors.Is(err, context.Canceled) {
		return kerr.NotCoordinator.Code
	}
	return errorCode(err)
}

// txnErrorCode is errorCode for the transaction APIs. fencedAsEpoch answers a fenced
// producer with INVALID_PRODUCER_EPOCH, for request versions older than
// PRODUCER_FENCED (KIP-588).
func txnErrorCode(err error, fencedAsEpoch bool) int16 {
	if fencedAsEpoch && (errors.Is(err, txn.ErrProducerFenced) || errors.Is(err, group.ErrProducerFenced)) {
		return kerr.InvalidProducerEpoch.Code
	}
	return errorCode(err)
}

// errorMessage is the text for responses that carry one (nil for no error). A produce
// refused because of some of its records answers Kafka's own text alone (it names
// the topic partition already), as clients that match on it expect.
func errorMessage(err error) *string {
	if err == nil {
		return nil
	}
	var re *replica.RecordErrors
	if errors.As(err, &re) {
		err = re
	}
	s := err.Error()
	return &s
}
