package kafka

import (
	"errors"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// reasonMessage is the ErrorMessage of the admin responses (CreateTopics, AlterConfigs,
// IncrementalAlterConfigs, CreatePartitions): the reason alone, naming the topic or
// config key, as Kafka fills it (`Invalid value abc for configuration retention.ms`).
// The code travels in ErrorCode, so the text of the *kerr.Error the error wraps is cut
// off the front; clients print code and message side by side, and would otherwise
// repeat the code. nil for no error.
func reasonMessage(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	var ke *kerr.Error
	if errors.As(err, &ke) {
		s = strings.TrimPrefix(s, ke.Error())
		s = strings.TrimPrefix(s, ": ")
	}
	if s == "" {
		return nil
	}
	return &s
}
