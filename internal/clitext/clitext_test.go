package clitext

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Counts read as English: "1 partition moving", "2 partitions moving".
func TestPlural(t *testing.T) {
	for _, tt := range []struct {
		n    int
		want string
	}{{0, "0 partitions"}, {1, "1 partition"}, {-1, "-1 partition"}, {2, "2 partitions"}} {
		if got := Plural(tt.n, "partition", "partitions"); got != tt.want {
			t.Errorf("Plural(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

// A failed record names its topic, and its partition once one was chosen; a topic
// that does not exist is said so, and is ErrTopicNotFound.
func TestRecordError(t *testing.T) {
	boom := errors.New("boom")
	for _, tt := range []struct {
		r    *kgo.Record
		err  error
		want string
	}{
		{&kgo.Record{Topic: "t", Partition: 2}, boom, `produce to "t" partition 2: boom`},
		{&kgo.Record{Topic: "t", Partition: -1}, boom, `produce to "t": boom`},
		{&kgo.Record{Topic: "t", Partition: 0}, kerr.UnknownTopicOrPartition, `produce: topic "t" does not exist (` + kerr.UnknownTopicOrPartition.Error() + `)`},
	} {
		got := RecordError(tt.r, tt.err)
		if got.Error() != tt.want || !errors.Is(got, tt.err) {
			t.Errorf("RecordError(%s/%d, %v) = %q; want %q, wrapping the cause", tt.r.Topic, tt.r.Partition, tt.err, got, tt.want)
		}
	}
	if err := RecordError(&kgo.Record{Topic: "t"}, kerr.UnknownTopicOrPartition); !errors.Is(err, ErrTopicNotFound) {
		t.Errorf("%v is not ErrTopicNotFound", err)
	}
}
