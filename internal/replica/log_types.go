package replica

import "github.com/runnel-io/runnel/internal/log"

// The log's results, control types and errors as the layers above see them. They are
// the log's own (aliases and the same sentinel values, so errors.Is matches either
// name), re-exported so that internal/kafka and internal/group depend on replica alone
// and never reach the log directly (DESIGN.md).

type (
	// AppendInfo describes an append: its offsets, sizes and whether it was a duplicate.
	AppendInfo = log.AppendInfo
	// ReadInfo is a range of batches read from the log, ready to be sent.
	ReadInfo = log.ReadInfo
	// AbortedTxn is an aborted transaction overlapping a read_committed range.
	AbortedTxn = log.AbortedTxn
	// ControlType is a transaction marker's kind.
	ControlType = log.ControlType
	// RecordErrors is a produce refused because of some of its records (a record
	// without a key on a compacted topic), each named by its index in its batch.
	RecordErrors = log.RecordErrors
	// RecordError is one refused record of RecordErrors.
	RecordError = log.RecordError
	// DamagedRange is a stretch of a segment that failed its checks (log/damage.go).
	DamagedRange = log.DamagedRange
)

const (
	ControlAbort  = log.ControlAbort
	ControlCommit = log.ControlCommit
)

// ParseControl reads a control batch's marker: its type and coordinator epoch; ok is
// false for a batch that is not a transaction marker.
var ParseControl = log.ParseControl

var (
	ErrOffsetOutOfRange     = log.ErrOffsetOutOfRange
	ErrRecordTooLarge       = log.ErrRecordTooLarge
	ErrOutOfOrderSequence   = log.ErrOutOfOrderSequence
	ErrInvalidProducerEpoch = log.ErrInvalidProducerEpoch
	ErrInvalidRecord        = log.ErrInvalidRecord
	ErrKafkaStorage         = log.ErrKafkaStorage
	ErrClosed               = log.ErrClosed
	ErrCorruption           = log.ErrCorruption
	ErrInvalidTxnState      = log.ErrInvalidTxnState
	ErrTxnCoordinatorFenced = log.ErrTxnCoordinatorFenced
)
