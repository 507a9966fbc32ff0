package interop_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/recordbatch"
	"github.com/runnel-io/runnel/internal/testutil"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Fetches that take the sendfile path (partitions with 32 KiB or more of records),
// checked end to end over a raw socket against a real node.

// TestSplicedFetchEndToEnd fetches partitions above and below the sendfile threshold at
// non-flexible and flexible versions, pipelined on one connection with other requests
// between them: every partition's bytes are whole verified batches with contiguous
// offsets, identical at every version.
func TestSplicedFetchEndToEnd(t *testing.T) {
	n := startNode(t)
	topic := topicName(t)
	cl := newClient(t, bootstrap(n), kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	createTopic(t, newAdmin(t, bootstrap(n)), topic, 3)
	// Records of 10 KiB, one batch each: p0 120 KiB, p1 2 KiB (copied), p2 70 KiB.
	records := map[int32]int{0: 12, 1: 2, 2: 7}
	for p, k := range records {
		for i := range k {
			v := bytes.Repeat([]byte{byte(p*10 + int32(i))}, 10<<10)
			if p == 1 {
				v = v[:1000]
			}
			testutil.NoError(t, cl.ProduceSync(ctxT(t), &kgo.Record{Partition: p, Value: v}).FirstErr(), "produce to %s-%d", topic, p)
		}
	}
	md, err := kmsg.NewPtrMetadataRequest().RequestWith(ctxT(t), cl)
	testutil.NoError(t, err, "metadata")
	var topicID [16]byte
	for _, mt := range md.Topics {
		if mt.Topic != nil && *mt.Topic == topic {
			topicID = mt.TopicID
		}
	}
	nc := dialConn(t, bootstrap(n))
	versions := []int16{4, 11, 12, 16}
	var out []byte
	for i, v := range versions {
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(v)
		req.ReplicaID, req.ReplicaState.ID = -1, -1
		req.MaxWaitMillis, req.MaxBytes, req.SessionEpoch = 100, 10<<20, -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, topicID
		for p := range int32(3) {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = p, 1<<20, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		apiVersions := kmsg.NewPtrApiVersionsRequest()
		apiVersions.SetVersion(3)
		out = append(out, encodeFrameWith(int32(100+i), req)...)
		out = append(out, encodeFrameWith(int32(200+i), apiVersions)...)
	}
	_, err = nc.Write(out)
	testutil.NoError(t, err, "write pipelined requests")
	var first map[int32][]byte
	for i, v := range versions {
		resp := kmsg.NewPtrFetchResponse()
		resp.SetVersion(v)
		body := readResponse(t, nc, int32(100+i), 0)
		if resp.IsFlexible() {
			body = body[1:]
		}
		testutil.NoError(t, resp.ReadFrom(body), "decode fetch v%d", v)
		got := map[int32][]byte{}
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				testutil.Equal(t, rp.ErrorCode, int16(0), "fetch v%d %s-%d error code", v, topic, rp.Partition)
				checkBatches(t, fmt.Sprintf("fetch v%d %s-%d", v, topic, rp.Partition), rp.RecordBatches, int64(records[rp.Partition]))
				got[rp.Partition] = rp.RecordBatches
			}
		}
		if first == nil {
			first = got
		}
		for p, b := range got {
			testutil.True(t, bytes.Equal(b, first[p]), "fetch v%d %s-%d: bytes differ from v%d's", v, topic, p, versions[0])
		}
		readResponse(t, nc, int32(200+i), 0)
	}
}

// TestSplicedFetchSlowReader reads two pipelined spliced responses far larger than the
// socket buffers slowly: sendfile meets EAGAIN and partial sends, and must resume
// where it stopped.
func TestSplicedFetchSlowReader(t *testing.T) {
	n := startNode(t)
	topic := topicName(t)
	cl := newClient(t, bootstrap(n), kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(1<<20))
	createTopic(t, newAdmin(t, bootstrap(n)), topic, 1)
	const records = 96
	for i := range records {
		v := make([]byte, 100<<10)
		for j := range v {
			v[j] = byte(i*7 + j*13)
		}
		cl.Produce(ctxT(t), &kgo.Record{Value: v}, nil)
	}
	testutil.NoError(t, cl.Flush(ctxT(t)), "produce %d records to %s", records, topic)
	nc := dialConn(t, bootstrap(n))
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(11)
	req.ReplicaID = -1
	req.MaxWaitMillis, req.MaxBytes, req.SessionEpoch = 100, 64<<20, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 64<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	_, err := nc.Write(append(encodeFrameWith(1, req), encodeFrameWith(2, req)...))
	testutil.NoError(t, err, "write pipelined fetches")
	time.Sleep(300 * time.Millisecond) // the node fills the socket buffers and waits
	for corr := int32(1); corr <= 2; corr++ {
		body := readResponse(t, nc, corr, time.Millisecond)
		resp := kmsg.NewPtrFetchResponse()
		resp.SetVersion(11)
		testutil.NoError(t, resp.ReadFrom(body), "decode response %d", corr)
		checkBatches(t, fmt.Sprintf("response %d %s-0", corr, topic), resp.Topics[0].Partitions[0].RecordBatches, records)
	}
}

// checkBatches fails unless b is whole, CRC-verified batches with contiguous offsets
// from 0 to records.
func checkBatches(t *testing.T, what string, b []byte, records int64) {
	t.Helper()
	next := int64(0)
	for len(b) > 0 {
		batch, rest, err := recordbatch.Next(b, 0)
		testutil.NoError(t, err, "%s: batch at offset %d", what, next)
		testutil.NoError(t, batch.Verify(), "%s: batch at offset %d", what, next)
		testutil.Equal(t, batch.BaseOffset(), next, "%s: base offset", what)
		next = batch.NextOffset()
		b = rest
	}
	testutil.Equal(t, next, records, "%s: records", what)
}

func dialConn(t *testing.T, addr string) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	testutil.NoError(t, err, "dial %s", addr)
	t.Cleanup(func() { nc.Close() })
	return nc
}

// readResponse reads one response frame, in chunks of 256 KiB with pause between
// them (0: at once), checks its correlation id and returns the body after it.
func readResponse(t *testing.T, nc net.Conn, corr int32, pause time.Duration) []byte {
	t.Helper()
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	var size [4]byte
	_, err := io.ReadFull(nc, size[:])
	testutil.NoError(t, err, "read the size of response %d", corr)
	b := make([]byte, binary.BigEndian.Uint32(size[:]))
	for off := 0; off < len(b); {
		nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		m, err := io.ReadFull(nc, b[off:min(off+256<<10, len(b))])
		testutil.NoError(t, err, "read response %d at byte %d", corr, off)
		off += m
		time.Sleep(pause)
	}
	testutil.Equal(t, int32(binary.BigEndian.Uint32(b)), corr, "correlation id")
	return b[4:]
}
