package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/testutil"
)

// TestShareMetrics: the share partition's leader exports its in-flight records by
// state and the group's redeliveries. A raw member acquires 5 records, releases 2 and
// acquires them again: 5 acquired, none available, 2 redelivered.
func TestShareMetrics(t *testing.T) {
	const topic, group = "mt", "mg"
	n, ctx, _, ct := nodeWithTopic(t, topic, 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	testutil.NoError(t, err, "kgo.NewClient")
	defer cl.Close()

	cfg := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	earliest := "earliest"
	res.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "share.auto.offset.reset", Value: &earliest}}
	cfg.Resources = append(cfg.Resources, res)
	if resp, err := cfg.RequestWith(ctx, cl); err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("share.auto.offset.reset of group %s: %v %+v", group, err, resp)
	}
	for i := range 5 {
		testutil.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte{byte('0' + i)}}).FirstErr(), "produce")
	}

	member := "metrics-member-00000000000000000000"
	epoch := int32(0)
	fetch := func(acks ...kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) int {
		t.Helper()
		req := kmsg.NewPtrShareFetchRequest()
		req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr(group), &member, epoch
		req.MaxRecords, req.MaxWaitMillis, req.MaxBytes = 100, 1000, 1<<20
		rt := kmsg.NewShareFetchRequestTopic()
		rt.TopicID = ct.ID
		rp := kmsg.NewShareFetchRequestTopicPartition()
		rp.AcknowledgementBatches = acks
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("share fetch (session epoch %d): %v %v", epoch, err, kerr.ErrorForCode(resp.ErrorCode))
		}
		epoch++
		got := 0
		for _, p := range resp.Topics[0].Partitions {
			if p.ErrorCode != 0 || p.AcknowledgeErrorCode != 0 {
				t.Fatalf("share fetch of %s-0: %v / acknowledgement %v", topic, kerr.ErrorForCode(p.ErrorCode), kerr.ErrorForCode(p.AcknowledgeErrorCode))
			}
			for _, a := range p.AcquiredRecords {
				got += int(a.LastOffset - a.FirstOffset + 1)
			}
		}
		return got
	}
	if got := fetch(); got != 5 {
		t.Fatalf("first fetch acquired %d records, want 5", got)
	}
	release := kmsg.NewShareFetchRequestTopicPartitionAcknowledgementBatch()
	release.FirstOffset, release.LastOffset, release.AcknowledgeTypes = 0, 1, []int8{2}
	if got := fetch(release); got != 2 {
		t.Fatalf("after releasing offsets 0-1 the fetch acquired %d records, want those 2", got)
	}

	resp, err := http.Get("http://" + n.c.Node(1).HTTPAddr + "/metrics")
	testutil.NoError(t, err, "GET /metrics")
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, want := range []string{
		`runnel_share_inflight_records{group="mg",partition="0",state="acquired",topic="mt"} 5`,
		`runnel_share_inflight_records{group="mg",partition="0",state="available",topic="mt"} 0`,
		`runnel_share_redelivered_records_total{group="mg"} 2`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
