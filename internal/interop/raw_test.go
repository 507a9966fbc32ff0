package interop_test

import (
	"context"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/testutil"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// requester is a *kgo.Client (which routes sharded requests itself) or a *kgo.Broker
// (which sends to that broker as is).
type requester interface {
	Request(context.Context, kmsg.Request) (kmsg.Response, error)
}

// request sends req through cl (which picks the highest version both sides support,
// unless the client pins a lower one) and returns the typed response.
func request[R kmsg.Response](t *testing.T, cl requester, req kmsg.Request) R {
	t.Helper()
	resp, err := cl.Request(ctxT(t), req)
	testutil.NoError(t, err, "%T", req)
	r, ok := resp.(R)
	testutil.True(t, ok, "%T answered with %T", req, resp)
	return r
}

// rawProduce sends one ProduceRequest with batch for topic[partition] and returns that
// partition's response.
func rawProduce(t *testing.T, cl *kgo.Client, topic string, partition int32, acks int16, batch []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks = acks
	req.TimeoutMillis = 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := request[*kmsg.ProduceResponse](t, cl, req)
	testutil.Equal(t, len(resp.Topics), 1, "produce response topics")
	testutil.Equal(t, len(resp.Topics[0].Partitions), 1, "produce response partitions")
	return resp.Topics[0].Partitions[0]
}

// rawFetch sends one FetchRequest for topic[partition] at offset (by topic id from
// version 13 on, so id must be the topic's id), waiting at most maxWait for data, and
// returns that partition's response.
func rawFetch(t *testing.T, cl *kgo.Client, topic string, id [16]byte, partition int32, offset int64, maxWait time.Duration) kmsg.FetchResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = int32(maxWait.Milliseconds())
	req.MaxBytes = 10 << 20
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition = partition
	rp.FetchOffset = offset
	rp.PartitionMaxBytes = 1 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := request[*kmsg.FetchResponse](t, cl, req)
	testutil.Equal(t, resp.ErrorCode, int16(0), "fetch response error code")
	testutil.Equal(t, len(resp.Topics), 1, "fetch response topics")
	testutil.Equal(t, len(resp.Topics[0].Partitions), 1, "fetch response partitions")
	return resp.Topics[0].Partitions[0]
}

// rawListOffset sends one ListOffsetsRequest for topic[partition] at timestamp (or -1
// latest, -2 earliest, -3 max timestamp) and returns that partition's response.
func rawListOffset(t *testing.T, cl requester, topic string, partition int32, timestamp int64) kmsg.ListOffsetsResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition = partition
	rp.Timestamp = timestamp
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := request[*kmsg.ListOffsetsResponse](t, cl, req)
	testutil.Equal(t, len(resp.Topics), 1, "list offsets response topics")
	testutil.Equal(t, len(resp.Topics[0].Partitions), 1, "list offsets response partitions")
	return resp.Topics[0].Partitions[0]
}

// topicID asks the node for topic's id.
func topicID(t *testing.T, cl *kgo.Client, topic string) [16]byte {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, mt)
	resp := request[*kmsg.MetadataResponse](t, cl, req)
	testutil.Equal(t, len(resp.Topics), 1, "metadata topics")
	testutil.Equal(t, resp.Topics[0].ErrorCode, int16(0), "metadata error for %s", topic)
	testutil.True(t, resp.Topics[0].TopicID != [16]byte{}, "topic %s has a zero id", topic)
	return resp.Topics[0].TopicID
}
