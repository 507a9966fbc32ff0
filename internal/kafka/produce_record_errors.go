package kafka

import (
	"errors"

	"github.com/runnel-io/runnel/internal/replica"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// produceRecordErrors is a produce partition's RecordErrors (v8+) for err: the records
// the leader refused, each by its index in its batch with Kafka's message, when err is
// a replica.RecordErrors (a record without a key on a compacted topic); nil
// otherwise. Kafka fills them the same way (ReplicaManager, from LogValidator's
// RecordValidationException); older versions drop the field on encoding.
func produceRecordErrors(err error) []kmsg.ProduceResponseTopicPartitionErrorRecord {
	var re *replica.RecordErrors
	if !errors.As(err, &re) {
		return nil
	}
	out := make([]kmsg.ProduceResponseTopicPartitionErrorRecord, len(re.Errors))
	for i, e := range re.Errors {
		out[i] = kmsg.NewProduceResponseTopicPartitionErrorRecord()
		out[i].RelativeOffset = e.BatchIndex
		msg := e.Message
		out[i].ErrorMessage = &msg
	}
	return out
}
