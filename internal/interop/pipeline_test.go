package interop_test

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// pipelinedConn is one TCP connection that sends kmsg requests back to back, without
// waiting for their responses, and reads the responses in order: what a client that
// pipelines (librdkafka, the Java client with max.in.flight > 1) does on a broker
// connection.
type pipelinedConn struct {
	t    *testing.T
	nc   net.Conn
	br   *bufio.Reader
	bw   *bufio.Writer
	f    *kmsg.RequestFormatter
	corr int32
	sent []kmsg.Request // requests whose responses are not read yet, in order
}

func dialPipelined(t *testing.T, addr string) *pipelinedConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	testutil.NoError(t, err, "dialing %s", addr)
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(testTimeout))
	return &pipelinedConn{t: t, nc: nc, br: bufio.NewReader(nc), bw: bufio.NewWriter(nc),
		f: kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw-pipeline"))}
}

// send buffers req (at the version set on it); flush writes what is buffered.
func (c *pipelinedConn) send(req kmsg.Request) {
	c.corr++
	_, err := c.bw.Write(c.f.AppendRequest(nil, req, c.corr))
	testutil.NoError(c.t, err, "writing %T", req)
	c.sent = append(c.sent, req)
}

func (c *pipelinedConn) flush() {
	testutil.NoError(c.t, c.bw.Flush(), "flushing requests")
}

// recv reads the response to the oldest request not answered yet.
func (c *pipelinedConn) recv() kmsg.Response {
	c.t.Helper()
	req := c.sent[0]
	c.sent = c.sent[1:]
	var size [4]byte
	_, err := io.ReadFull(c.br, size[:])
	testutil.NoError(c.t, err, "reading the size of the response to %T", req)
	frame := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err = io.ReadFull(c.br, frame)
	testutil.NoError(c.t, err, "reading the response to %T", req)
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	body := frame[4:]
	if resp.IsFlexible() {
		body = body[1:] // the response header's tagged fields: none
	}
	testutil.NoError(c.t, resp.ReadFrom(body), "decoding the response to %T", req)
	return resp
}

func offsetCommit(group, topic string, partition int32, offset int64) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.SetVersion(8)
	req.Group = group
	req.Generation = -1 // a simple (assign-mode) consumer's commit
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset, rp.LeaderEpoch = partition, offset, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func offsetFetch(group, topic string, partition int32) *kmsg.OffsetFetchRequest {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.SetVersion(7)
	req.Group = group
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic = topic
	rt.Partitions = []int32{partition}
	req.Topics = append(req.Topics, rt)
	return req
}

// TestPipelinedOffsetCommitsLastWins sends 200 OffsetCommits of offsets 1..200 back to
// back on one connection, then an OffsetFetch on the same connection: as in Kafka,
// requests of one connection take effect in the order sent, so the group's committed
// offset is the last one, 200, also as a new client reads it. Before per-connection
// order (internal/kafka/pipeline.go) each request ran on its own goroutine and the
// last commit was lost in about one run in three.
func TestPipelinedOffsetCommitsLastWins(t *testing.T) {
	const commits, rounds = 200, 20
	n := startNode(t)
	adm := newAdmin(t, bootstrap(n))
	topic := topicName(t)
	createTopic(t, adm, topic, 1)
	c := dialPipelined(t, bootstrap(n))
	for round := range rounds {
		group := fmt.Sprintf("%s-g%d", topic, round)
		// Through a client first: it finds the coordinator and waits while the offsets
		// partition loads, which the raw connection does not.
		first := kadm.Offsets{}
		first.Add(kadm.Offset{Topic: topic, Partition: 0, At: 0, LeaderEpoch: -1})
		resps, err := adm.CommitOffsets(ctxT(t), group, first)
		testutil.NoError(t, err, "first commit of group %s", group)
		testutil.NoError(t, resps.Error(), "first commit of group %s", group)
		for i := int64(1); i <= commits; i++ {
			c.send(offsetCommit(group, topic, 0, i))
		}
		c.send(offsetFetch(group, topic, 0))
		c.flush()
		for i := int64(1); i <= commits; i++ {
			resp := c.recv().(*kmsg.OffsetCommitResponse)
			code := resp.Topics[0].Partitions[0].ErrorCode
			testutil.Equal(t, code, int16(0), "round %d: error code of the commit of offset %d", round, i)
		}
		fetched := c.recv().(*kmsg.OffsetFetchResponse)
		got := fetched.Topics[0].Partitions[0]
		testutil.Equal(t, got.ErrorCode, int16(0), "round %d: OffsetFetch error code", round)
		testutil.Equal(t, got.Offset, int64(commits), "round %d: offset fetched on the committing connection", round)
		later, err := adm.FetchOffsets(ctxT(t), group)
		testutil.NoError(t, err, "round %d: fetching the offsets of %s", round, group)
		o, ok := later.Lookup(topic, 0)
		testutil.True(t, ok, "round %d: %s has no offset for %s[0]", round, group, topic)
		testutil.Equal(t, o.At, int64(commits), "round %d: offset a new client reads", round)
	}
}

// TestLibrdkafkaAsyncCommitsKeepOrder runs py/confluent_commit_order.py: librdkafka
// commits offsets 1..50 asynchronously (pipelined on its coordinator connection) and
// committed() must read 50. An outside client test suite found it reading 49, 12 or 48
// before per-connection order.
func TestLibrdkafkaAsyncCommitsKeepOrder(t *testing.T) {
	python := pythonInterpreter(t)
	dir, err := filepath.Abs("py")
	testutil.NoError(t, err, "locating internal/interop/py")
	addr := bootstrap(startNode(t))
	topic := topicName(t)
	createTopic(t, newAdmin(t, addr), topic, 1)
	for range 5 {
		runPython(t, python, dir, "confluent_commit_order", addr, topic, 1)
	}
}
