package kafka

import (
	"testing"

	"github.com/runnel-io/runnel/internal/group"
	"github.com/twmb/franz-go/pkg/kerr"
)

func TestRequireStableMarksPendingTransactionalOffsets(t *testing.T) {
	offsets := []group.CommittedOffset{
		{Topic: "a", Partition: 0, Offset: 5, LeaderEpoch: -1},
		{Topic: "a", Partition: 1, Offset: 7, LeaderEpoch: -1, Unstable: true},
		{Topic: "b", Partition: 0, Offset: 9, LeaderEpoch: -1},
	}
	topics := offsetTopics(offsets, 0)
	markUnstable(topics, offsets)
	got := map[string][2]int64{}
	for _, tp := range topics {
		for _, p := range tp.Partitions {
			got[tp.Topic+string(rune('0'+p.Partition))] = [2]int64{int64(p.ErrorCode), p.Offset}
		}
	}
	want := map[string][2]int64{
		"a0": {0, 5},
		"a1": {int64(kerr.UnstableOffsetCommit.Code), -1},
		"b0": {0, 9},
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: (code, offset) = %v, want %v", k, got[k], w)
		}
	}
}
