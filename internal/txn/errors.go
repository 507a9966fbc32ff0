package txn

import "errors"

// Errors returned by the Coordinator; internal/kafka maps each to its Kafka code.
var (
	// ErrNotCoordinator: this node does not lead the id's __transaction_state
	// partition (NOT_COORDINATOR).
	ErrNotCoordinator = errors.New("not the transaction coordinator")
	// ErrLoadInProgress: the partition is being replayed (COORDINATOR_LOAD_IN_PROGRESS).
	ErrLoadInProgress = errors.New("transaction coordinator loading")
	// ErrCoordinatorNotAvailable: a state append failed and may succeed later
	// (COORDINATOR_NOT_AVAILABLE).
	ErrCoordinatorNotAvailable = errors.New("transaction coordinator not available")
	// ErrConcurrentTransactions: the previous transaction is still completing
	// (CONCURRENT_TRANSACTIONS, retriable).
	ErrConcurrentTransactions = errors.New("concurrent transactions")
	// ErrProducerFenced: a newer producer with the same transactional id exists
	// (PRODUCER_FENCED; INVALID_PRODUCER_EPOCH for old request versions).
	ErrProducerFenced = errors.New("producer fenced")
	// ErrInvalidProducerIDMapping: the producer id is not the transactional id's
	// (INVALID_PRODUCER_ID_MAPPING).
	ErrInvalidProducerIDMapping = errors.New("invalid producer id mapping")
	// ErrInvalidTxnState: the request does not fit the transaction's state, or a
	// transactional write targets a partition not added to the transaction
	// (INVALID_TXN_STATE).
	ErrInvalidTxnState = errors.New("invalid transaction state")
	// ErrInvalidTimeout: the timeout is not in (0, transaction.max.timeout.ms]
	// (INVALID_TRANSACTION_TIMEOUT).
	ErrInvalidTimeout = errors.New("invalid transaction timeout")
	// ErrTransactionalIDNotFound: DescribeTransactions of an unknown id
	// (TRANSACTIONAL_ID_NOT_FOUND).
	ErrTransactionalIDNotFound = errors.New("transactional id not found")
)
