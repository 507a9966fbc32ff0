package kafka

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/recordbatch"
	"github.com/runnel-io/runnel/internal/replica"
	"github.com/runnel-io/runnel/internal/txn"
)

// TxnCoordinator is what the transaction APIs need; *txn.Coordinator implements it.
type TxnCoordinator interface {
	PartitionFor(txnID string) int32
	NumPartitions() int32
	InitProducerID(ctx context.Context, txnID string, timeout time.Duration, pid int64, epoch int16) (txn.ProducerIDAndEpoch, error)
	AddPartitions(txnID string, pid int64, epoch int16, tps []metadata.TopicPartition) error
	AddOffsets(txnID string, pid int64, epoch int16, groupID string) error
	EndTxn(ctx context.Context, txnID string, pid int64, epoch int16, commit, tv2 bool) (txn.ProducerIDAndEpoch, error)
	Verify(ctx context.Context, txnID string, pid int64, epoch int16, tp metadata.TopicPartition) error
	AddPartitionImplicit(ctx context.Context, txnID string, pid int64, epoch int16, tp metadata.TopicPartition) error
	Describe(txnID string) (txn.Description, error)
	List(states []txn.State, pids []int64) []txn.Description
}

// SetTxnCoordinator installs the transaction coordinator; call before Serve.
func (s *Server) SetTxnCoordinator(c TxnCoordinator) { s.txns = c }

// errNoTxnCoordinator answers transaction requests on a server without one.
var errNoTxnCoordinator = txn.ErrCoordinatorNotAvailable

// produceVerifyErrorCode is the produce error code for a failed transaction check.
// Up to Produce v11 the coordinator's retriable errors become NOT_ENOUGH_REPLICAS,
// with the real error in the message, as Kafka answers (KAFKA-15459): those versions
// predate KIP-890, and many clients (librdkafka, sarama, ...) treat a produce error
// code they do not expect there as fatal, though a retry would succeed. From v12
// (transaction version 2) clients know these codes (KAFKA-18662).
func produceVerifyErrorCode(err error, version int16) int16 {
	code := txnErrorCode(err, false)
	if version >= 12 {
		return code
	}
	switch code {
	case kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorLoadInProgress.Code, kerr.NotCoordinator.Code,
		kerr.ConcurrentTransactions.Code, kerr.NetworkException.Code, kerr.RequestTimedOut.Code:
		return kerr.NotEnoughReplicas.Code
	}
	return code
}

// verifyTxnProduce checks a transactional produce with the coordinator (KIP-890):
// up to v11 the partition must already be in the producer's ongoing transaction;
// from v12 (transaction version 2) the write adds it implicitly. A fenced producer
// gets INVALID_PRODUCER_EPOCH, as Kafka answers produces (PRODUCER_FENCED is not a
// produce error).
func (s *Server) verifyTxnProduce(ctx context.Context, txnID string, version int16, tp metadata.TopicPartition, records []byte) error {
	b, _, err := recordbatch.Next(records, 0)
	if err != nil {
		return err
	}
	if !b.IsTransactional() {
		return fmt.Errorf("%w: a produce with transactional id %q holds a non-transactional batch", txn.ErrInvalidTxnState, txnID)
	}
	if s.txns == nil {
		return errNoTxnCoordinator
	}
	check := s.txns.Verify
	if version >= 12 {
		check = s.txns.AddPartitionImplicit
	}
	err = check(ctx, txnID, b.ProducerID(), b.ProducerEpoch(), tp)
	if errors.Is(err, txn.ErrProducerFenced) {
		return fmt.Errorf("%w: %v", replica.ErrInvalidProducerEpoch, err)
	}
	return err
}
