package kafka

import (
	"fmt"
	"testing"

	"github.com/runnel-io/runnel/internal/replica"
)

// A produce refused for some of its records answers them as Kafka's RecordErrors, and
// Kafka's message without the partition prefix the produce path puts on other errors.
func TestProduceRecordErrors(t *testing.T) {
	re := &replica.RecordErrors{Errors: []replica.RecordError{{BatchIndex: 2, Message: "Compacted topic cannot accept message without key in topic partition t-0."}}}
	wrapped := fmt.Errorf("t-0: %w", re)
	got := produceRecordErrors(wrapped)
	if len(got) != 1 || got[0].RelativeOffset != 2 || got[0].ErrorMessage == nil || *got[0].ErrorMessage != re.Errors[0].Message {
		t.Fatalf("RecordErrors %+v", got)
	}
	if msg := errorMessage(wrapped); msg == nil || *msg != re.Error() {
		t.Fatalf("message %v, want Kafka's %q", msg, re.Error())
	}
	if errorCode(wrapped) != 87 { // INVALID_RECORD
		t.Fatalf("code %d, want INVALID_RECORD", errorCode(wrapped))
	}
	if produceRecordErrors(fmt.Errorf("other")) != nil {
		t.Fatal("RecordErrors for another error")
	}
}
