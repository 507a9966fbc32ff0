package kafka

import (
	"fmt"
	"testing"

	"github.com/runnel-io/runnel/internal/txn"
	"github.com/twmb/franz-go/pkg/kerr"
)

func TestProduceVerifyErrorCodeForOldClients(t *testing.T) {
	for _, tc := range []struct {
		err     error
		version int16
		want    int16
	}{
		{errNoTxnCoordinator, 9, kerr.NotEnoughReplicas.Code},
		{errNoTxnCoordinator, 12, kerr.CoordinatorNotAvailable.Code},
		{fmt.Errorf("wrapped: %w", txn.ErrConcurrentTransactions), 11, kerr.NotEnoughReplicas.Code},
		{txn.ErrConcurrentTransactions, 12, kerr.ConcurrentTransactions.Code},
		// Not retriable: passed on as they are at every version.
		{txn.ErrInvalidTxnState, 9, kerr.InvalidTxnState.Code},
		{txn.ErrProducerFenced, 9, kerr.ProducerFenced.Code},
	} {
		if got := produceVerifyErrorCode(tc.err, tc.version); got != tc.want {
			t.Errorf("produce v%d, %v: code %d (%v), want %d (%v)", tc.version, tc.err,
				got, kerr.ErrorForCode(got), tc.want, kerr.ErrorForCode(tc.want))
		}
	}
}
