// Package clitext is the wording runnel's commands share: a count with its noun,
// and a record that failed to produce. `runnel produce` (internal/cli) and the load
// generator behind `runnel bench` (internal/bench, which does not import cli) say
// both the same way through it.
//
// It is a leaf: it imports nothing of the module.
package clitext

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Plural is n and the noun in the number n takes: "1 partition", "2 partitions",
// "0 partitions". Every count a command prints in a sentence goes through it, so
// that none reads "1 partitions moving".
func Plural[N ~int | ~int32 | ~int64](n N, one, many string) string {
	if n == 1 || n == -1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

// ErrTopicNotFound is what an error naming a topic the cluster does not have
// wraps, after the topic: `topic "t" does not exist`.
var ErrTopicNotFound = errors.New("does not exist")

// RecordError is err, the failure of producing r, naming r's topic and, once the
// partitioner chose it, its partition. UNKNOWN_TOPIC_OR_PARTITION says the topic
// does not exist (ErrTopicNotFound).
func RecordError(r *kgo.Record, err error) error {
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		return fmt.Errorf("produce: topic %q %w (%w)", r.Topic, ErrTopicNotFound, err)
	}
	where := fmt.Sprintf("produce to %q", r.Topic)
	if r.Partition >= 0 {
		where += fmt.Sprintf(" partition %d", r.Partition)
	}
	return fmt.Errorf("%s: %w", where, err)
}
