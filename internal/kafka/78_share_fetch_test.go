package kafka

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/share"
)

// TestSharePartError: a share partition's failure in a ShareFetch or
// ShareAcknowledge answer carries a message naming the group and the topic partition
// with the reason, and a failure of the share-state store is logged at Warn with the
// group, topic and partition (the client sees only COORDINATOR_NOT_AVAILABLE).
func TestSharePartError(t *testing.T) {
	var logs bytes.Buffer
	id := [16]byte{9}
	sm := &shareMember{
		s:     &Server{logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))},
		group: "g1", member: "m1",
		im: &metadata.Image{Topics: map[string]*metadata.Topic{"orders": {Name: "orders", ID: id, Partitions: make([]metadata.Partition, 4)}}},
	}
	p := share.PartitionID{TopicID: id, Partition: 3}

	storeErr := fmt.Errorf("%w: writing the acknowledgements of share group g1: disk full", share.ErrStore)
	code, msg := sm.partError(p, storeErr)
	if code != kerr.CoordinatorNotAvailable.Code || msg == nil || !strings.HasPrefix(*msg, "share group g1 on orders-3: ") || !strings.Contains(*msg, "disk full") {
		t.Fatalf("store failure: code %d message %v, want COORDINATOR_NOT_AVAILABLE naming g1, orders-3 and the reason", code, msg)
	}
	for _, want := range []string{"level=WARN", "group=g1", "topic=orders", "partition=3", "disk full"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log %q lacks %q", logs.String(), want)
		}
	}

	logs.Reset()
	stateErr := fmt.Errorf("%w: offset 7 is Available", share.ErrInvalidRecordState)
	if code, msg = sm.partError(p, stateErr); code != kerr.InvalidRecordState.Code || msg == nil || *msg != "share group g1 on orders-3: "+stateErr.Error() {
		t.Fatalf("state error: code %d message %v", code, msg)
	}
	if logs.Len() != 0 {
		t.Errorf("a member's own error logged: %q", logs.String())
	}
	if code, msg = sm.partError(share.PartitionID{TopicID: [16]byte{1}, Partition: 0}, kerr.UnknownTopicID); code != kerr.UnknownTopicID.Code || msg == nil || !strings.HasPrefix(*msg, "share group g1 on unknown topic id AQAAAAAAAAAAAAAAAAAAAA partition 0: ") {
		t.Fatalf("unknown topic id: code %d message %v", code, msg)
	}
	if code, msg = sm.partError(p, nil); code != 0 || msg != nil {
		t.Fatalf("no error: code %d message %v", code, msg)
	}
}
