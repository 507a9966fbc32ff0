package kafka_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/config"
	"github.com/runnel-io/runnel/internal/recordbatch"
	"github.com/runnel-io/runnel/internal/server"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A real node, partitions above and below the sendfile threshold, fetched at
// non-flexible and flexible versions over a raw socket, several requests pipelined on
// one connection: every partition's bytes are whole verified batches with contiguous
// offsets, and identical across versions.
func TestReviewSplicedFetchEndToEnd(t *testing.T) {
	cfg := config.Default()
	for _, s := range []string{"listen=127.0.0.1:0", "controller.listen=127.0.0.1:0", "http.listen=127.0.0.1:0",
		"log.dirs=" + t.TempDir()} {
		k, v, _ := strings.Cut(s, "=")
		if err := cfg.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	n, err := server.Start(ctx, cfg, server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	addr := n.KafkaAddr().String()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("rv"), kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 3, 1, nil, "rv"); err != nil {
		t.Fatal(err)
	}
	// p0: 120 KiB, p1: 2 KiB, p2: 70 KiB.
	sizes := map[int32]int{0: 12, 1: 2, 2: 7}
	for p, k := range sizes {
		for i := range k {
			v := bytes.Repeat([]byte{byte(p*10 + int32(i))}, 10<<10)
			if p == 1 {
				v = v[:1000]
			}
			if err := cl.ProduceSync(ctx, &kgo.Record{Partition: p, Value: v}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	versions := []int16{4, 11, 12, 16}
	var out []byte
	for i, v := range versions {
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(v)
		req.ReplicaID, req.ReplicaState.ID = -1, -1
		req.MaxWaitMillis, req.MaxBytes, req.SessionEpoch = 100, 10<<20, -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "rv"
		if v >= 13 {
			md := kmsg.NewPtrMetadataRequest()
			resp, err := md.RequestWith(ctx, cl)
			if err != nil {
				t.Fatal(err)
			}
			rt.TopicID = resp.Topics[0].TopicID
		}
		for p := range int32(3) {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = p, 1<<20, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		out = append(out, frameOf(int32(100+i), req)...)
		out = append(out, frameOf(int32(200+i), kmsg.NewPtrApiVersionsRequest())...)
	}
	if _, err := nc.Write(out); err != nil {
		t.Fatal(err)
	}
	var first map[int32][]byte
	for i, v := range versions {
		body := readFrame(t, nc, int32(100+i))
		resp := kmsg.NewPtrFetchResponse()
		resp.SetVersion(v)
		if resp.IsFlexible() {
			body = body[1:]
		}
		if err := resp.ReadFrom(body); err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		got := map[int32][]byte{}
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				if rp.ErrorCode != 0 {
					t.Fatalf("v%d p%d: error %d", v, rp.Partition, rp.ErrorCode)
				}
				checkBatches(t, fmt.Sprintf("v%d p%d", v, rp.Partition), rp.RecordBatches, int64(sizes[rp.Partition]))
				got[rp.Partition] = rp.RecordBatches
			}
		}
		if first == nil {
			first = got
		} else {
			for p, b := range got {
				if !bytes.Equal(b, first[p]) {
					t.Fatalf("v%d p%d: bytes differ from v%d's", v, p, versions[0])
				}
			}
		}
		readFrame(t, nc, int32(200+i))
	}
}

func checkBatches(t *testing.T, what string, b []byte, records int64) {
	t.Helper()
	next := int64(0)
	for len(b) > 0 {
		batch, rest, err := recordbatch.Next(b, 0)
		if err != nil {
			t.Fatalf("%s: at offset %d: %v", what, next, err)
		}
		if err := batch.Verify(); err != nil {
			t.Fatalf("%s: batch at %d: %v", what, next, err)
		}
		if batch.BaseOffset() != next {
			t.Fatalf("%s: batch at %d, want %d", what, batch.BaseOffset(), next)
		}
		next = batch.NextOffset()
		b = rest
	}
	if next != records {
		t.Fatalf("%s: %d records, want %d", what, next, records)
	}
}

func frameOf(corr int32, req kmsg.Request) []byte {
	if req.GetVersion() == 0 && req.Key() == 18 {
		req.SetVersion(3)
	}
	b := make([]byte, 4, 256)
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = binary.BigEndian.AppendUint16(b, 2)
	b = append(b, "rv"...)
	if req.IsFlexible() {
		b = append(b, 0)
	}
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// readFrame reads one response frame and returns its body after the correlation id.
func readFrame(t *testing.T, nc net.Conn, corr int32) []byte {
	t.Helper()
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(nc, size[:]); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(nc, b); err != nil {
		t.Fatal(err)
	}
	if got := int32(binary.BigEndian.Uint32(b)); got != corr {
		t.Fatalf("correlation id %d, want %d", got, corr)
	}
	return b[4:]
}

// A spliced response far larger than the socket buffers, read slowly: sendfile meets
// EAGAIN and partial sends and must resume where it stopped.
func TestReviewSplicedFetchSlowReader(t *testing.T) {
	cfg := config.Default()
	for _, s := range []string{"listen=127.0.0.1:0", "controller.listen=127.0.0.1:0", "http.listen=127.0.0.1:0",
		"log.dirs=" + t.TempDir()} {
		k, v, _ := strings.Cut(s, "=")
		if err := cfg.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	n, err := server.Start(ctx, cfg, server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	addr := n.KafkaAddr().String()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("slow"), kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "slow"); err != nil {
		t.Fatal(err)
	}
	const records = 96
	for i := range records {
		v := make([]byte, 100<<10)
		for j := range v {
			v[j] = byte(i*7 + j*13)
		}
		cl.Produce(ctx, &kgo.Record{Value: v}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(11)
	req.ReplicaID = -1
	req.MaxWaitMillis, req.MaxBytes, req.SessionEpoch = 100, 64<<20, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "slow"
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 64<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	if _, err := nc.Write(append(frameOf(1, req), frameOf(2, req)...)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	for corr := int32(1); corr <= 2; corr++ {
		var size [4]byte
		if _, err := io.ReadFull(nc, size[:]); err != nil {
			t.Fatal(err)
		}
		b := make([]byte, binary.BigEndian.Uint32(size[:]))
		for off := 0; off < len(b); {
			nc.SetReadDeadline(time.Now().Add(10 * time.Second))
			end := min(off+256<<10, len(b))
			m, err := io.ReadFull(nc, b[off:end])
			if err != nil {
				t.Fatal(err)
			}
			off += m
			time.Sleep(time.Millisecond)
		}
		resp := kmsg.NewPtrFetchResponse()
		resp.SetVersion(11)
		if err := resp.ReadFrom(b[4:]); err != nil {
			t.Fatal(err)
		}
		checkBatches(t, fmt.Sprintf("response %d", corr), resp.Topics[0].Partitions[0].RecordBatches, records)
	}
}
