package kafka

import (
	"context"
	"errors"

	"github.com/runnel-io/runnel/internal/recordbatch"
	"github.com/runnel-io/runnel/internal/replica"
	"github.com/twmb/franz-go/pkg/kerr"
)

// errorTable maps internal sentinels to Kafka error codes. It is the only place that
// does: handlers call errorCode and never pick codes for internal errors themselves.
var errorTable = []struct {
	err  error
	kerr *kerr.Error
}{
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
	{context.DeadlineExceeded, kerr.RequestTimedOut},
	{context.Canceled, kerr.RequestTimedOut},
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
