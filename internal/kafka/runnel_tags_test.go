package kafka

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A Runnel tagged field goes through a flexible request's encoding and back; an absent
// one is reported absent, and a payload that is not the expected JSON names its tag.
func TestJSONTagRoundTrip(t *testing.T) {
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	SetReassignmentThrottle(req, 4096)
	wire := req.AppendTo(nil)
	got := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	got.SetVersion(req.GetVersion())
	if err := got.ReadFrom(wire); err != nil {
		t.Fatal(err)
	}
	if rate, err := reassignmentThrottle(got); err != nil || rate != 4096 {
		t.Fatalf("throttle after a round trip: %d, %v", rate, err)
	}
	var none ReassignmentThrottle
	if found, err := JSONTag(&kmsg.Tags{}, ReassignmentThrottleTag, &none); found || err != nil {
		t.Fatalf("absent tag: found %v, %v", found, err)
	}
	var bad kmsg.Tags
	bad.Set(ReassignmentThrottleTag, []byte("not json"))
	got.UnknownTags = bad
	if _, err := reassignmentThrottle(got); err == nil || !strings.Contains(err.Error(), "10002") {
		t.Fatalf("garbage payload: %v, want an error naming tag 10002", err)
	}
}
