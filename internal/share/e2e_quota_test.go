package share_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestShareFetchLongPollIsNotRequestTime: a share consumer waiting on an idle
// partition is not throttled by a request_percentage quota, as a consumer's fetch is
// not: the long poll is parked, not request handling time. First the control: the
// same client's share fetches that do not wait (MaxWaitMillis 0), sent back to back,
// are throttled at request_percentage=5 (50 ms of handling per second), so the quota
// does apply to the client. Then five 400 ms polls, which would be throttled if their
// wait counted, are not.
func TestShareFetchLongPollIsNotRequestTime(t *testing.T) {
	const topic, group = "share-idle-q", "share-idle-g"
	addr, ctx, admin, topicID := startShareNode(t, 30*time.Second, topic, 1)
	adm := kadm.NewClient(admin)
	name := "share-idle"
	res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: &name}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "request_percentage", Value: 5}},
	}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("set request_percentage of client-id %s: %v %v", name, err, res)
	}
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.GroupID, hb.MemberID, hb.SubscribedTopicNames = group, "idle-member-00000000000000000000000", []string{topic}
	hresp, err := hb.RequestWith(ctx, admin)
	if err != nil || hresp.ErrorCode != 0 {
		t.Fatalf("join of share group %s: %v %v", group, err, kerr.ErrorForCode(hresp.ErrorCode))
	}
	// The quota's client fetches only: the setup's requests (a topic creation
	// waits for the topic, the group's first heartbeat for its coordinator) are
	// request time.
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID(name))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	fetch := func(cl *kgo.Client, epoch, wait int32) *kmsg.ShareFetchResponse {
		t.Helper()
		f := kmsg.NewPtrShareFetchRequest()
		f.GroupID, f.MemberID = &hb.GroupID, &hb.MemberID
		f.ShareSessionEpoch = epoch
		f.MaxRecords, f.MaxWaitMillis, f.MaxBytes = 100, wait, 1<<20
		ft := kmsg.NewShareFetchRequestTopic()
		ft.TopicID = topicID
		ft.Partitions = append(ft.Partitions, kmsg.ShareFetchRequestTopicPartition{Partition: 0})
		f.Topics = append(f.Topics, ft)
		resp, err := f.RequestWith(ctx, cl)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("share fetch at session epoch %d of %s partition 0: %v %v", epoch, topic, err, kerr.ErrorForCode(resp.ErrorCode))
		}
		return resp
	}
	// The session's first fetch initializes the share partition (a write to
	// __share_group_state): request time, not the quota client's.
	fetch(admin, 0, 0)
	epoch := int32(0)
	// Back to back, requests that do not wait spend well over 5 % of the time being
	// handled (about 15 % here): the quota's burst (one window, 50 ms of handling) is
	// used up within a second or so of them.
	const most = 10 * time.Second
	throttled := int32(0)
	for start := time.Now(); throttled == 0; {
		if time.Since(start) > most {
			t.Fatalf("%d share fetches of %s partition 0 without a wait in %v never throttled at request_percentage=5: the quota does not apply to client-id %s", epoch, topic, most, name)
		}
		epoch++
		throttled = fetch(cl, epoch, 0).ThrottleMillis
	}
	t.Logf("share fetches without a wait: throttled %d ms after %d of them", throttled, epoch)
	for i := range 5 {
		start := time.Now()
		epoch++
		resp := fetch(cl, epoch, 400)
		if waited := time.Since(start); waited < 300*time.Millisecond {
			t.Fatalf("share fetch %d of idle %s partition 0 answered after %v, want its 400 ms long poll", i, topic, waited)
		}
		if resp.ThrottleMillis > 0 {
			t.Fatalf("share fetch %d of idle %s partition 0 throttled %d ms at request_percentage=5: its long poll counted as request time", i, topic, resp.ThrottleMillis)
		}
	}
}
