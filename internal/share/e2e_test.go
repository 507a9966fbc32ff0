package share_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/clustertest"
)

// startShareNode starts one node with sets and creates topic with partitions there.
// It returns the node's address, the test's context (ended after timeout) and an
// admin client (manual partitioner: records go to their Partition).
func startShareNode(t *testing.T, timeout time.Duration, topic string, partitions int32, sets ...string) (string, context.Context, *kgo.Client, [16]byte) {
	t.Helper()
	addr := clustertest.StartOne(t, sets...)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	admin, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admin.Close)
	ct, err := kadm.NewClient(admin).CreateTopic(ctx, partitions, 1, nil, topic)
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
	return addr, ctx, admin, ct.ID
}

// setGroupConfig sets a GROUP config (Kafka 4's group configs) with IncrementalAlterConfigs.
func setGroupConfig(t *testing.T, ctx context.Context, cl *kgo.Client, group, name, value string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = name, &value
	r.Configs = append(r.Configs, c)
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.Resources[0].ErrorCode); err != nil {
		t.Fatalf("set %s of group %s: %v", name, group, err)
	}
}

// stuckMember joins group as a raw member and acquires up to n records of topic's
// partition 0 with ShareFetch, never acknowledging them: as a consumer that hangs.
func stuckMember(t *testing.T, ctx context.Context, cl *kgo.Client, group, topic string, topicID [16]byte, n int32) []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord {
	t.Helper()
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.GroupID, hb.MemberID, hb.SubscribedTopicNames = group, "stuck-member-0000000000000000000000", []string{topic}
	hresp, err := hb.RequestWith(ctx, cl)
	if err != nil || hresp.ErrorCode != 0 {
		t.Fatalf("stuck member's join: %v %v", err, kerr.ErrorForCode(hresp.ErrorCode))
	}
	for {
		f := kmsg.NewPtrShareFetchRequest()
		f.GroupID, f.MemberID = &group, &hb.MemberID
		f.MaxRecords, f.MaxWaitMillis, f.MaxBytes = n, 1000, 1<<20
		ft := kmsg.NewShareFetchRequestTopic()
		ft.TopicID = topicID
		ft.Partitions = append(ft.Partitions, kmsg.ShareFetchRequestTopicPartition{Partition: 0})
		f.Topics = append(f.Topics, ft)
		resp, err := f.RequestWith(ctx, cl)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("stuck member's fetch: %v %v", err, kerr.ErrorForCode(resp.ErrorCode))
		}
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				if rp.ErrorCode != 0 {
					t.Fatalf("stuck member's fetch of partition 0: %v", kerr.ErrorForCode(rp.ErrorCode))
				}
				if len(rp.AcquiredRecords) > 0 {
					return rp.AcquiredRecords
				}
			}
		}
	}
}

// TestShareGroupFourConsumersOnePartition: a share group of four franz-go share
// consumers (kgo.ShareGroup) on one partition, plus a raw member that acquires the
// first 20 records and hangs. Every record is delivered; records released by a
// consumer come back with delivery count 2; the hung member's records come back after
// its 2 s lock with a delivery count of at least 2; rejected records never come back;
// no record is accepted twice and none is lost.
func TestShareGroupFourConsumersOnePartition(t *testing.T) {
	const topic, group, n = "share-q", "share-g", 300
	addr, ctx, admin, topicID := startShareNode(t, 40*time.Second, topic, 1, "group.share.record.lock.duration.ms=2000")
	setGroupConfig(t, ctx, admin, group, "share.auto.offset.reset", "earliest")
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(strconv.Itoa(i))})
	}
	if err := admin.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	stuck := stuckMember(t, ctx, admin, group, topic, topicID, 20)
	if stuck[0].FirstOffset != 0 || stuck[len(stuck)-1].LastOffset != 19 || stuck[0].DeliveryCount != 1 {
		t.Fatalf("stuck member acquired %+v, want offsets 0-19 at delivery 1", stuck)
	}

	var (
		mu       sync.Mutex
		accepted = map[int]int32{} // value -> delivery count when accepted
		rejected = map[int]bool{}
		errs     []string
	)
	done := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(accepted)+len(rejected) == n
	}
	var wg sync.WaitGroup
	for c := range 4 {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ShareGroup(group), kgo.ConsumeTopics(topic),
			kgo.ClientID(fmt.Sprintf("share-consumer-%d", c)), kgo.FetchMaxWait(200*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cl.Close()
			for !done() && ctx.Err() == nil {
				pctx, pcancel := context.WithTimeout(ctx, 500*time.Millisecond)
				fs := cl.PollFetches(pctx)
				pcancel()
				fs.EachRecord(func(r *kgo.Record) {
					i, _ := strconv.Atoi(string(r.Value))
					mu.Lock()
					defer mu.Unlock()
					if rejected[i] {
						errs = append(errs, fmt.Sprintf("rejected record %d delivered again (delivery %d)", i, r.DeliveryCount()))
					}
					if _, ok := accepted[i]; ok {
						errs = append(errs, fmt.Sprintf("accepted record %d delivered again (delivery %d)", i, r.DeliveryCount()))
					}
					switch {
					case i%10 == 3:
						rejected[i] = true
						r.Ack(kgo.AckReject)
					case i%10 == 5 && r.DeliveryCount() == 1 && i >= 20:
						r.Ack(kgo.AckRelease)
					default:
						accepted[i] = r.DeliveryCount()
						r.Ack(kgo.AckAccept)
					}
				})
				if err := cl.FlushAcks(ctx); err != nil && ctx.Err() == nil {
					mu.Lock()
					errs = append(errs, "flush acks: "+err.Error())
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatalf("timed out: %d accepted, %d rejected of %d", len(accepted), len(rejected), n)
	}
	for _, e := range errs {
		t.Error(e)
	}
	for i := range n {
		d, ok := accepted[i]
		switch {
		case i%10 == 3:
			if !rejected[i] {
				t.Errorf("record %d never rejected", i)
			}
		case !ok:
			t.Errorf("record %d never accepted", i)
		case i < 20 && d < 2:
			t.Errorf("record %d (locked by the hung member) accepted at delivery %d, want >= 2", i, d)
		case i >= 20 && i%10 == 5 && d != 2:
			t.Errorf("released record %d accepted at delivery %d, want 2", i, d)
		}
	}
}
