package kafka_test

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/clustertest"
)

// TestDescribeTopicPartitionsPaging: DescribeTopicPartitions (75) pages through two
// topics (3 and 4 partitions) two partitions at a time, each answer's NextCursor
// leading to the next, every partition seen exactly once in (topic, index) order with
// its leader and empty ELR lists; a missing topic is UNKNOWN_TOPIC_OR_PARTITION and a
// cursor naming a topic the request does not list is INVALID_REQUEST.
func TestDescribeTopicPartitionsPaging(t *testing.T) {
	addr := clustertest.StartOne(t)
	cl := newClient(t, addr)
	ctx := testCtx(t)
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, "dtp-a"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 4, 1, nil, "dtp-b"); err != nil {
		t.Fatal(err)
	}

	var seen []string
	var cursor *kmsg.DescribeTopicPartitionsRequestCursor
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatalf("cursor never ends: %v", seen)
		}
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		for _, n := range []string{"dtp-b", "dtp-a"} { // answered sorted whatever the order asked
			rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
			rt.Topic = n
			req.Topics = append(req.Topics, rt)
		}
		req.ResponsePartitionLimit = 2
		req.Cursor = cursor
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, tp := range resp.Topics {
			if tp.ErrorCode != 0 {
				t.Fatalf("topic %s: %v", *tp.Topic, kerr.ErrorForCode(tp.ErrorCode))
			}
			for _, p := range tp.Partitions {
				n++
				if p.LeaderID != 1 || p.EligibleLeaderReplicas == nil || len(p.EligibleLeaderReplicas) != 0 || len(p.ISR) != 1 {
					t.Errorf("%s-%d: leader %d, isr %v, elr %v; want leader 1, isr [1], elr []", *tp.Topic, p.Partition, p.LeaderID, p.ISR, p.EligibleLeaderReplicas)
				}
				seen = append(seen, fmt.Sprintf("%s-%d", *tp.Topic, p.Partition))
			}
		}
		if n > 2 {
			t.Fatalf("page of %d partitions, limit 2", n)
		}
		if resp.NextCursor == nil {
			break
		}
		cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: resp.NextCursor.Topic, Partition: resp.NextCursor.Partition}
	}
	want := "[dtp-a-0 dtp-a-1 dtp-a-2 dtp-b-0 dtp-b-1 dtp-b-2 dtp-b-3]"
	if got := fmt.Sprint(seen); got != want {
		t.Fatalf("paged partitions %s, want %s", got, want)
	}

	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
	rt.Topic = "dtp-missing"
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("missing topic: %+v, want UNKNOWN_TOPIC_OR_PARTITION", resp.Topics)
	}
	req.Cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "dtp-a"}
	resp, err = req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("cursor outside the requested topics: %+v, want INVALID_REQUEST", resp.Topics)
	}
}
