package interop_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"net"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/recordbatch"
	"github.com/runnel-io/runnel/internal/testutil"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The produce and fetch paths must not allocate per record: at a million records a
// second the broker has about a microsecond of CPU per record, so only per-batch work
// is affordable. These tests count every allocation of the process (the node runs in
// it) while a raw client, which itself allocates nothing, sends pre-encoded requests
// and reads the responses into a reused buffer. A batch of 5,000 records must cost
// the same allocations as a batch of 500. (A batch of one takes the other fetch path:
// records under 32 KiB are copied into the response, larger ones are sent from the
// segment with sendfile; each path is checked against a budget.)

// rawConn is a Kafka connection that sends pre-encoded request frames and reads
// response frames into one reused buffer, allocating nothing per round trip.
type rawConn struct {
	nc   net.Conn
	size [4]byte
	buf  []byte
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	testutil.NoError(t, err, "dial %s", addr)
	t.Cleanup(func() { nc.Close() })
	return &rawConn{nc: nc, buf: make([]byte, 4<<20)}
}

// roundTrip writes frame and returns the response body (after the correlation id),
// valid until the next call.
func (c *rawConn) roundTrip(frame []byte) ([]byte, error) {
	if _, err := c.nc.Write(frame); err != nil {
		return nil, err
	}
	if _, err := io.ReadFull(c.nc, c.size[:]); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint32(c.size[:]))
	if n > len(c.buf) {
		return nil, fmt.Errorf("response of %d bytes is larger than the test's buffer", n)
	}
	if _, err := io.ReadFull(c.nc, c.buf[:n]); err != nil {
		return nil, err
	}
	return c.buf[4:n], nil
}

// encodeFrame encodes req (at its set version) as a request frame with kmsg, with
// correlation id 1.
func encodeFrame(req kmsg.Request) []byte { return encodeFrameWith(1, req) }

// encodeFrameWith encodes req as a request frame with correlation id corr.
func encodeFrameWith(corr int32, req kmsg.Request) []byte {
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("interop")).AppendRequest(nil, req, corr)
}

// decodeResponse parses a response body read by roundTrip for the version of req.
func decodeResponse[R kmsg.Response](t *testing.T, req kmsg.Request, body []byte) R {
	t.Helper()
	resp := req.ResponseKind().(R)
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() {
		body = body[1:] // response header v1: an empty tag section
	}
	testutil.NoError(t, resp.ReadFrom(bytes.Clone(body)), "decoding %T", resp)
	return resp
}

// batchOf returns a v2 batch of n 100-byte records without a producer id.
func batchOf(n int) []byte {
	b := recordbatch.NewBuilder(n * 120)
	value := bytes.Repeat([]byte("v"), 100)
	now := time.Now().UnixMilli()
	for i := range n {
		b.Add([]byte(fmt.Sprintf("key-%d", i)), value, nil, now)
	}
	return bytes.Clone(b.Build())
}

func produceFrame(topic string, batch []byte) (kmsg.Request, []byte) {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9) // flexible
	req.Acks = 1
	req.TimeoutMillis = 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req, encodeFrame(req)
}

// fetchFrame fetches topic's partition 0 from offset 0 without a session and
// without waiting; PartitionMaxBytes 1 returns exactly the first batch (KIP-74).
func fetchFrame(topic string) (kmsg.Request, []byte) {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(12) // flexible, topics by name
	req.ReplicaID = -1
	req.MaxBytes = 10 << 20
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req, encodeFrame(req)
}

// allocsPerRoundTrip is the process's allocations per round trip of frame: the least
// of three averages of 100 round trips. AllocsPerRun counts every goroutine of the
// process, and the node's background work (Raft, heartbeats, metrics) lands in some
// windows and not others; it only ever adds, so the least average is the path's own.
func allocsPerRoundTrip(t *testing.T, c *rawConn, frame []byte) float64 {
	t.Helper()
	var err error
	least := math.Inf(1)
	for range 3 {
		least = min(least, testing.AllocsPerRun(100, func() {
			if err == nil {
				_, err = c.roundTrip(frame)
			}
		}))
	}
	testutil.NoError(t, err, "round trip")
	return least
}

func TestProduceAndFetchAllocationsDoNotGrowWithRecords(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counts need a quiet process")
	}
	n := startNode(t)
	adm := newAdmin(t, bootstrap(n))
	c := dialRaw(t, bootstrap(n))
	allocs := map[string]float64{}
	for _, records := range []int{1, 500, 5000} {
		topic := fmt.Sprintf("%s-%d", topicName(t), records)
		createTopic(t, adm, topic, 1)
		req, frame := produceFrame(topic, batchOf(records))
		body, err := c.roundTrip(frame)
		testutil.NoError(t, err, "produce to %s", topic)
		presp := decodeResponse[*kmsg.ProduceResponse](t, req, body)
		testutil.Equal(t, presp.Topics[0].Partitions[0].ErrorCode, int16(0), "produce to %s: error code", topic)
		allocs[fmt.Sprintf("produce %d", records)] = allocsPerRoundTrip(t, c, frame)

		req, frame = fetchFrame(topic)
		body, err = c.roundTrip(frame)
		testutil.NoError(t, err, "fetch from %s", topic)
		fresp := decodeResponse[*kmsg.FetchResponse](t, req, body)
		fp := fresp.Topics[0].Partitions[0]
		testutil.Equal(t, fp.ErrorCode, int16(0), "fetch from %s: error code", topic)
		got := recordbatch.Batch(fp.RecordBatches)
		testutil.NoError(t, got.Verify(), "first batch of %s", topic)
		testutil.Equal(t, int(got.RecordCount()), records, "records in the first batch of %s", topic)
		allocs[fmt.Sprintf("fetch %d", records)] = allocsPerRoundTrip(t, c, frame)
	}
	t.Logf("allocations per request: %v", allocs)
	// Per-record allocation would add thousands; background work of the node
	// (heartbeats, metrics) adds a fraction of one on average.
	for _, api := range []string{"produce", "fetch"} {
		small, large := allocs[api+" 500"], allocs[api+" 5000"]
		if large > small+2 {
			t.Errorf("%s: %.1f allocations for a batch of 5,000 records, %.1f for 500: the path allocates per record", api, large, small)
		}
	}
	// A budget, so that per-request garbage does not creep back (the e2e tail is the
	// collector's): today's counts with some room.
	for api, budget := range map[string]float64{"produce 1": 40, "fetch 1": 40, "produce 500": 40, "fetch 500": 40} {
		if allocs[api] > budget {
			t.Errorf("%s: %.1f allocations per request, budget %.0f", api, allocs[api], budget)
		}
	}
}
