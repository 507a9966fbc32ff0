package share_test

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestShareErrorMessages: a ShareFetch or ShareAcknowledge failing on a partition
// says why, naming the group and the topic partition: a partition the topic lacks
// (ErrorMessage), acknowledgements of offsets the member does not hold (ShareFetch's
// AcknowledgeErrorMessage, ShareAcknowledge's ErrorMessage, with the state machine's
// reason), and a session epoch out of order (the top-level ErrorMessage).
func TestShareErrorMessages(t *testing.T) {
	const topic, group = "share-err", "share-err-g"
	_, ctx, cl, topicID := startShareNode(t, 30*time.Second, topic, 1)
	setGroupConfig(t, ctx, cl, group, "share.auto.offset.reset", "earliest")
	var recs []*kgo.Record
	for range 5 {
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte("v")})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	member := "share-err-member-0000000000000000000"
	if _, err := joinRaw(ctx, cl, group, member, topic, 0); err != nil {
		t.Fatalf("join of share group %s: %v", group, err)
	}
	wantMsg := func(what string, code, wantCode int16, msg *string, want ...string) {
		t.Helper()
		if code != wantCode || msg == nil {
			t.Fatalf("%s: %v message %v, want %v with a message", what, kerr.ErrorForCode(code), msg, kerr.ErrorForCode(wantCode))
		}
		for _, w := range want {
			if !strings.Contains(*msg, w) {
				t.Errorf("%s: message %q lacks %q", what, *msg, w)
			}
		}
	}
	fetch := func(epoch int32, parts ...kmsg.ShareFetchRequestTopicPartition) map[int32]kmsg.ShareFetchResponseTopicPartition {
		t.Helper()
		f := kmsg.NewPtrShareFetchRequest()
		f.GroupID, f.MemberID, f.ShareSessionEpoch = kmsg.StringPtr(group), &member, epoch
		f.MaxRecords, f.MaxWaitMillis, f.MaxBytes = 100, 0, 1<<20
		f.Topics = []kmsg.ShareFetchRequestTopic{{TopicID: topicID, Partitions: parts}}
		resp, err := f.RequestWith(ctx, cl)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("share fetch at session epoch %d: %v %v", epoch, err, kerr.ErrorForCode(resp.ErrorCode))
		}
		out := map[int32]kmsg.ShareFetchResponseTopicPartition{}
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				out[rp.Partition] = rp
			}
		}
		return out
	}

	got := fetch(0, kmsg.ShareFetchRequestTopicPartition{Partition: 0}, kmsg.ShareFetchRequestTopicPartition{Partition: 7})
	wantMsg("fetch of "+topic+"-7", got[7].ErrorCode, kerr.UnknownTopicOrPartition.Code, got[7].ErrorMessage, "share group "+group+" on "+topic+"-7")
	if p0 := got[0]; p0.ErrorCode != 0 || len(p0.AcquiredRecords) != 1 || p0.AcquiredRecords[0].LastOffset != 4 {
		t.Fatalf("fetch of %s-0: %+v, want offsets 0-4 acquired", topic, p0)
	}

	ack := kmsg.NewShareFetchRequestTopicPartitionAcknowledgementBatch()
	ack.FirstOffset, ack.LastOffset, ack.AcknowledgeTypes = 10, 12, []int8{1}
	got = fetch(1, kmsg.ShareFetchRequestTopicPartition{Partition: 0, AcknowledgementBatches: []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{ack}})
	wantMsg("piggybacked ack of "+topic+"-0 offsets 10-12", got[0].AcknowledgeErrorCode, kerr.InvalidRecordState.Code, got[0].AcknowledgeErrorMessage,
		"share group "+group+" on "+topic+"-0", "offsets 10-12")

	acknowledge := func(epoch int32, first, last int64) *kmsg.ShareAcknowledgeResponse {
		t.Helper()
		a := kmsg.NewPtrShareAcknowledgeRequest()
		a.GroupID, a.MemberID, a.ShareSessionEpoch = kmsg.StringPtr(group), &member, epoch
		b := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
		b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = first, last, []int8{1}
		a.Topics = []kmsg.ShareAcknowledgeRequestTopic{{TopicID: topicID, Partitions: []kmsg.ShareAcknowledgeRequestTopicPartition{{Partition: 0, AcknowledgementBatches: []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{b}}}}}
		resp, err := a.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := acknowledge(2, 20, 20)
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 {
		t.Fatalf("acknowledge at session epoch 2: %v %+v", kerr.ErrorForCode(resp.ErrorCode), resp)
	}
	rp := resp.Topics[0].Partitions[0]
	wantMsg("acknowledge of "+topic+"-0 offset 20", rp.ErrorCode, kerr.InvalidRecordState.Code, rp.ErrorMessage, "share group "+group+" on "+topic+"-0", "offsets 20-20")

	resp = acknowledge(9, 0, 0)
	wantMsg("acknowledge at session epoch 9 (want 3)", resp.ErrorCode, kerr.InvalidShareSessionEpoch.Code, resp.ErrorMessage, member, group)
}
