package group

import (
	"context"
	"errors"
	"fmt"

	"github.com/runnel-io/runnel/internal/replica"
)

// PartitionLog is the local leader replica of one __consumer_offsets partition, as the
// coordinator uses it. ReplicaLog adapts a *replica.Partition; tests use an in-memory
// one.
type PartitionLog interface {
	// Append appends batches (one or more v2 batches) as leader and returns once every
	// in-sync replica has them (acks=-1).
	Append(ctx context.Context, batches []byte) error
	// Offsets returns the log start offset, the high watermark and the log end offset.
	Offsets() (logStart, highWatermark, logEnd int64)
	// Read appends to dst whole batches from offset (a batch boundary), below the high
	// watermark: about maxBytes, and at least one batch.
	Read(dst []byte, offset int64, maxBytes int32) ([]byte, error)
}

// ReplicaLog is a PartitionLog over a local replica.
type ReplicaLog struct{ P *replica.Partition }

func (r ReplicaLog) Append(ctx context.Context, batches []byte) error {
	_, err := r.P.AppendToLeader(ctx, batches, -1)
	return err
}

func (r ReplicaLog) Offsets() (int64, int64, int64) {
	l := r.P.Log()
	return l.LogStartOffset(), r.P.HighWatermark(), l.LogEndOffset()
}

func (r ReplicaLog) Read(dst []byte, offset int64, maxBytes int32) ([]byte, error) {
	res, err := r.P.Read(replica.ReadOptions{
		FetchOffset: offset, MaxBytes: maxBytes, MinOneBatch: true, CurrentLeaderEpoch: -1, ReplicaID: -1,
	})
	if err != nil {
		return dst, err
	}
	return res.Info.AppendTo(dst)
}

// appendError turns an append failure into the error a group client acts on, as Kafka's
// GroupMetadataManager does: the partition moved (NOT_COORDINATOR), a retry may succeed
// (COORDINATOR_NOT_AVAILABLE), or the commit is too large.
func appendError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, replica.ErrNotLeader), errors.Is(err, replica.ErrShuttingDown),
		errors.Is(err, replica.ErrKafkaStorage), errors.Is(err, replica.ErrClosed),
		errors.Is(err, replica.ErrFencedLeaderEpoch), errors.Is(err, context.Canceled):
		return fmt.Errorf("%w: %v", ErrNotCoordinator, err)
	case errors.Is(err, replica.ErrRecordTooLarge):
		return fmt.Errorf("%w: %v", ErrInvalidCommitOffsetSize, err)
	default: // not enough replicas, timeouts, unknown partition
		return fmt.Errorf("%w: %v", ErrCoordinatorNotAvailable, err)
	}
}
