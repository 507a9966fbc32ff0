package link

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// listOffsetsFailing starts a kfake cluster with topic t (1 partition) whose
// ListOffsets answers partition 0 with code (as a broker that cannot answer for it).
func listOffsetsFailing(t *testing.T, code int16) *kgo.Client {
	t.Helper()
	return listOffsetsAnswering(t, func() (int16, int64) { return code, -1 })
}

// listOffsetsAnswering is listOffsetsFailing with each answer's code and offset
// from answer.
func listOffsetsAnswering(t *testing.T, answer func() (int16, int64)) *kgo.Client {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	c.ControlKey(int16(kmsg.ListOffsets), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := r.(*kmsg.ListOffsetsRequest)
		resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewListOffsetsResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewListOffsetsResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.ErrorCode, sp.Offset = answer()
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// TestFailbackWaitsNameThePartitionError: a wait that times out on a partition whose
// ListOffsets answers an error says which partition and which error, not the
// offset -1 that came with it.
func TestFailbackWaitsNameThePartitionError(t *testing.T) {
	ctx := context.Background()
	cl := listOffsetsFailing(t, kerr.KafkaStorageError.Code)
	adm := kadm.NewClient(cl)
	want := func(what string, err error, has ...string) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s: no error", what)
		}
		for _, h := range has {
			if !strings.Contains(err.Error(), h) {
				t.Errorf("%s: %q does not say %q", what, err, h)
			}
		}
		if strings.Contains(err.Error(), "-1") {
			t.Errorf("%s: %q prints the offset that came with the error", what, err)
		}
	}

	err := awaitReplicated(ctx, adm, FailbackTopic{Topic: "t", Partitions: []FailbackPartition{{Partition: 0, MirroredEnd: 5}}}, 300*time.Millisecond)
	want("awaitReplicated", err, "t-0", kerr.KafkaStorageError.Message)

	_, err = settledEnds(ctx, adm, "t", 300*time.Millisecond)
	want("settledEnds", err, "t-0", kerr.KafkaStorageError.Message)

	// The destination answers the error; the source (another cluster) answers 0.
	src, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	scl, err := kgo.NewClient(kgo.SeedBrokers(src.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer scl.Close()
	_, err = awaitNoLag(ctx, SwitchoverConfig{Link: "l", Source: scl, SourceBootstrap: src.ListenAddrs()[0], Dest: cl, Timeout: 300 * time.Millisecond}, []string{"t"})
	want("awaitNoLag", err, "t-0 on the destination", kerr.KafkaStorageError.Message, src.ListenAddrs()[0])
}

// TestSettledEndsNamesLastReadings: ends that keep moving time out with the last two
// readings, not "(<nil>)".
func TestSettledEndsNamesLastReadings(t *testing.T) {
	var n atomic.Int64
	cl := listOffsetsAnswering(t, func() (int16, int64) { return 0, n.Add(1) })
	_, err := settledEnds(context.Background(), kadm.NewClient(cl), "t", 300*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "the last two readings were map[0:") || strings.Contains(err.Error(), "<nil>") {
		t.Fatalf("settledEnds of moving ends: %v, want the last two readings", err)
	}
}

// TestAwaitMirroringNamesWhatWaits: a failed-back partition that never mirrors times
// out naming it, its leader, state, end and error, and a broker that refused link
// status is named rather than silently left out.
func TestAwaitMirroringNamesWhatWaits(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(2))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Node 0 leads t-0, still failing back; node 1 refuses link status.
	c.ControlKey(int16(kmsg.DescribeCluster), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		resp := r.(*kmsg.DescribeClusterRequest).ResponseKind().(*kmsg.DescribeClusterResponse)
		ans := Response{Node: c.CurrentNode(), Partitions: []PartitionStatus{{Topic: "t", Partition: 0, State: "failing_back",
			End: 40, SourceEnd: -1, Leader: c.CurrentNode(), Error: "fetch: NOT_LEADER_OR_FOLLOWER"}}}
		if c.CurrentNode() == 1 {
			ans = Response{Node: 1, Error: "node 1 is shutting down"}
		}
		resp.UnknownTags.Set(OpTag, Encode(ans))
		return resp, nil, true
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()[0]))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	rows := []PartitionStatus{{Topic: "t", Partition: 0, TruncatedTo: 50}}
	err = awaitMirroring(context.Background(), FailbackConfig{Link: "dr", Old: cl, OldBootstrap: "old:9092", Timeout: 300 * time.Millisecond}, rows)
	for _, h := range []string{"old:9092", "t-0 on leader 0", "state failing_back", "end 40", "cut to 50", "NOT_LEADER_OR_FOLLOWER",
		"node 1: node 1 is shutting down"} {
		if err == nil || !strings.Contains(err.Error(), h) {
			t.Errorf("awaitMirroring: %v, want it to say %q", err, h)
		}
	}
}

// TestSwitchoverPromoteWaitNamesPartition: a destination whose partition never takes
// the promote times out naming the partition, its leader, state and error.
func TestSwitchoverPromoteWaitNamesPartition(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var promoted atomic.Bool
	c.ControlKey(int16(kmsg.DescribeCluster), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		kreq := r.(*kmsg.DescribeClusterRequest)
		var req Request
		kreq.UnknownTags.Each(func(tag uint32, b []byte) {
			if tag == OpTag {
				req, _ = DecodeRequest(b)
			}
		})
		ans := Response{Node: c.CurrentNode()}
		switch req.Op {
		case OpStatus:
			st := "mirroring"
			if promoted.Load() {
				st = "promoting" // its leader never takes the promote epoch
			}
			ans.Partitions = []PartitionStatus{{Topic: "t", Partition: 0, State: st, Leader: 0, Error: "leader epoch 3 not taken", WritableFrom: -1}}
		case OpPromote:
			promoted.Store(true)
		}
		resp := kreq.ResponseKind().(*kmsg.DescribeClusterResponse)
		resp.UnknownTags.Set(OpTag, Encode(ans))
		return resp, nil, true
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	_, err = RunSwitchover(context.Background(), SwitchoverConfig{Link: "dr", All: true, Dest: cl, Source: cl, Timeout: 500 * time.Millisecond})
	for _, h := range []string{"did not take the promote", "t-0 on leader 0 is promoting", "leader epoch 3 not taken"} {
		if err == nil || !strings.Contains(err.Error(), h) {
			t.Errorf("switchover: %v, want it to say %q", err, h)
		}
	}
}
