package controlplane

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/replica"
	"github.com/runnel-io/runnel/internal/testutil"
	"github.com/runnel-io/runnel/internal/txn"
)

// A marker to a peer is not queued behind a check the peer holds back: the peer (a
// kfake broker, which like Runnel answers a connection's requests in order) keeps an
// AddPartitionsToTxn waiting, as a coordinator does while it writes that
// transaction's markers, and a WriteTxnMarkers to the same peer still completes. On
// one shared connection the marker waited behind the check until its deadline.
func TestTxnPeersMarkerNotBehindCheck(t *testing.T) {
	fake, err := kfake.NewCluster(kfake.NumBrokers(1))
	testutil.NoError(t, err, "kfake cluster")
	defer fake.Close()

	release := make(chan struct{})
	checkArrived := make(chan struct{})
	// The check is held until release, then answered as kfake answers it: what it
	// says does not matter here, only that it is still unanswered while the marker
	// goes.
	fake.ControlKey(kmsg.AddPartitionsToTxn.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		close(checkArrived)
		fake.SleepControl(func() { <-release })
		return nil, nil, false
	})
	fake.ControlKey(kmsg.WriteTxnMarkers.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		fake.KeepControl()
		r := req.(*kmsg.WriteTxnMarkersRequest)
		resp := r.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
		for _, rm := range r.Markers {
			sm := kmsg.NewWriteTxnMarkersResponseMarker()
			sm.ProducerID = rm.ProducerID
			for _, rt := range rm.Topics {
				st := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
				st.Topic = rt.Topic
				for _, p := range rt.Partitions {
					sp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
					sp.Partition = p
					st.Partitions = append(st.Partitions, sp)
				}
				sm.Topics = append(sm.Topics, st)
			}
			resp.Markers = append(resp.Markers, sm)
		}
		return resp, nil, true
	})

	// The peer is kfake's broker 0; this node is 1. Both the data partition and the
	// transactional id's coordinator partition are led by the peer.
	host, portStr, err := net.SplitHostPort(fake.ListenAddrs()[0])
	testutil.NoError(t, err, "kfake address")
	port, err := strconv.Atoi(portStr)
	testutil.NoError(t, err, "kfake port")
	im := metadata.Empty()
	im.Brokers[0] = metadata.Broker{ID: 0, Host: host, Port: int32(port)}
	im.Topics["data"] = &metadata.Topic{Name: "data", Partitions: []metadata.Partition{{Replicas: []metadata.NodeID{0}, Leader: 0}}}
	im.Topics[txn.StateTopic] = &metadata.Topic{Name: txn.StateTopic, Partitions: []metadata.Partition{{Replicas: []metadata.NodeID{0}, Leader: 0}}}
	peers := NewTxnPeers(TxnPeersConfig{
		Self:                 1,
		Image:                func() *metadata.Image { return im },
		Partition:            func(metadata.TopicPartition) (*replica.Partition, error) { return nil, replica.ErrNotLeader },
		CoordinatorPartition: func(string) int32 { return 0 },
	})
	defer peers.Close()
	defer close(release) // before peers.Close: the check's answer lets its client close

	tp := metadata.TopicPartition{Topic: "data", Partition: 0}
	checked := make(chan error, 1)
	go func() { checked <- peers.Add(context.Background(), "tx", 7, 1, tp) }()
	select {
	case <-checkArrived:
	case <-time.After(10 * time.Second):
		t.Fatal("the check did not reach the peer within 10 s")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = peers.WriteMarker(ctx, tp, 8, 2, 0, true)
	testutil.NoError(t, err, "a marker to the peer while the peer holds back a check (the marker must not wait behind it)")
	select {
	case err := <-checked:
		t.Fatalf("the check returned (%v) before the peer released it", err)
	default:
	}
}
