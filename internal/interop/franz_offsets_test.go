package interop_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/log/logtest"
	"github.com/runnel-io/runnel/internal/testutil"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"
)

// testListOffsetsByTimestamp writes records 0-4 one batch each at base, base+1s, ...
// base+4s, then records 5-9 in one batch at base+10s, base+11s, ... base+14s, and looks
// offsets up by time: the answer is the first record (not batch) whose timestamp is at
// or after the one asked for.
func testListOffsetsByTimestamp(t *testing.T, addr string) {
	topic := topicName(t)
	adm := newAdmin(t, addr)
	createTopic(t, adm, topic, 1)
	cl := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	for i := range 5 {
		r := &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "v%d", i), Timestamp: base.Add(time.Duration(i) * time.Second)}
		testutil.NoError(t, cl.ProduceSync(ctxT(t), r).FirstErr(), "producing record %d", i)
	}
	ms := base.UnixMilli()
	batch := logtest.BatchWith(logtest.BatchOptions{Records: 5, Timestamp: ms + 10000, TimestampStep: 1000})
	pr := rawProduce(t, cl, topic, 0, -1, batch)
	testutil.Equal(t, pr.ErrorCode, int16(0), "raw produce error code")
	testutil.Equal(t, pr.BaseOffset, int64(5), "raw produce base offset")

	for _, tc := range []struct {
		at         int64 // ms after base
		offset, ts int64 // want; ts after base
		pastTheEnd bool
	}{
		{at: -1, offset: 0, ts: 0}, {at: 0, offset: 0, ts: 0}, {at: 1, offset: 1, ts: 1000},
		{at: 2500, offset: 3, ts: 3000}, {at: 4000, offset: 4, ts: 4000}, {at: 4001, offset: 5, ts: 10000},
		{at: 12000, offset: 7, ts: 12000}, {at: 12500, offset: 8, ts: 13000}, {at: 14000, offset: 9, ts: 14000},
		{at: 14001, pastTheEnd: true},
	} {
		wire := rawListOffset(t, cl, topic, 0, ms+tc.at)
		testutil.Equal(t, wire.ErrorCode, int16(0), "ListOffsets(base%+dms) error code", tc.at)
		if tc.pastTheEnd {
			// Kafka answers "no such record" with offset -1 and timestamp -1.
			testutil.Equal(t, [2]int64{wire.Offset, wire.Timestamp}, [2]int64{-1, -1}, "ListOffsets(base%+dms) offset and timestamp", tc.at)
			continue
		}
		testutil.Equal(t, [2]int64{wire.Offset, wire.Timestamp}, [2]int64{tc.offset, ms + tc.ts},
			"ListOffsets(base%+dms) offset and timestamp", tc.at)
		lo, err := adm.ListOffsetsAfterMilli(ctxT(t), ms+tc.at, topic)
		testutil.NoError(t, err, "ListOffsetsAfterMilli")
		got, _ := lo.Lookup(topic, 0)
		testutil.NoError(t, got.Err, "ListOffsetsAfterMilli(base%+dms)", tc.at)
		testutil.Equal(t, got.Offset, tc.offset, "ListOffsetsAfterMilli(base%+dms) offset", tc.at)
	}
	// -3: the record with the largest timestamp (KIP-734), -2 earliest, -1 latest.
	for _, tc := range []struct{ ts, offset int64 }{{-3, 9}, {-2, 0}, {-1, 10}} {
		wire := rawListOffset(t, cl, topic, 0, tc.ts)
		testutil.Equal(t, [2]int64{int64(wire.ErrorCode), wire.Offset}, [2]int64{0, tc.offset}, "ListOffsets(%d) error code and offset", tc.ts)
	}
	c := newClient(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AfterMilli(ms + 12500)}}))
	testutil.Equal(t, pollValues(t, c, 1)[0][:2], "8=", "consumer starting after base+12.5s")
}

// testFetchOutOfRange fetches past the end of a 3-record partition: with
// NoResetOffset franz-go surfaces OFFSET_OUT_OF_RANGE; raw fetches at each supported
// version family (by topic id at 16, by name at 11 and 4) get the code on the partition
// and the partition's watermarks, while a fetch at the end itself is fine and empty.
func testFetchOutOfRange(t *testing.T, addr string) {
	topic := topicName(t)
	createTopic(t, newAdmin(t, addr), topic, 1)
	cl := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceValues(t, cl, topic, 0, "a", "b", "c")

	c := newClient(t, addr, kgo.ConsumeResetOffset(kgo.NoResetOffset()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(100)}}))
	start := time.Now()
	fs := c.PollFetches(ctxT(t))
	var got error
	fs.EachError(func(_ string, _ int32, err error) { got = err })
	testutil.ErrorIs(t, got, kerr.OffsetOutOfRange, "consuming at offset 100 of 3")
	// The error is answered at once, not after the fetch's long poll (5 s in franz-go).
	testutil.True(t, time.Since(start) < 2*time.Second, "OFFSET_OUT_OF_RANGE came after %v", time.Since(start))

	id := topicID(t, cl, topic)
	for _, version := range []int16{16, 11, 4} {
		vs := kversion.Stable()
		vs.SetMaxKeyVersion(1, version)
		raw := newClient(t, addr, kgo.MaxVersions(vs))
		start := time.Now()
		p := rawFetch(t, raw, topic, id, 0, 100, 10*time.Second)
		testutil.Equal(t, p.ErrorCode, kerr.OffsetOutOfRange.Code, "fetch v%d at 100: error code", version)
		testutil.True(t, time.Since(start) < 2*time.Second, "fetch v%d at 100 (max wait 10 s) answered after %v", version, time.Since(start))
		testutil.Equal(t, p.HighWatermark, int64(3), "fetch v%d at 100: high watermark", version)
		p = rawFetch(t, raw, topic, id, 0, 3, 50*time.Millisecond)
		testutil.Equal(t, [2]int64{int64(p.ErrorCode), int64(len(p.RecordBatches))}, [2]int64{0, 0}, "fetch v%d at the end: error code and bytes", version)
		p = rawFetch(t, raw, topic, id, 0, 1, 50*time.Millisecond)
		testutil.Equal(t, p.ErrorCode, int16(0), "fetch v%d at 1: error code", version)
		recs, err := logtest.Decode(p.RecordBatches)
		testutil.NoError(t, err, "fetch v%d at 1: decoding", version)
		testutil.True(t, len(recs) >= 2 && recs[len(recs)-1].Offset == 2 && string(recs[len(recs)-1].Value) == "c",
			"fetch v%d at 1: got %d records, want through offset 2 = c", version, len(recs))
		if version >= 5 {
			testutil.Equal(t, p.LogStartOffset, int64(0), "fetch v%d log start offset", version)
			testutil.Equal(t, p.LastStableOffset, int64(3), "fetch v%d last stable offset", version)
		}
	}
}

// testCompression round-trips 200 records through each codec and checks the consumer
// sees batches still carrying the codec the producer used (the node stores and serves
// them as they came), including when it starts in the middle of a batch.
func testCompression(t *testing.T, addr string) {
	for _, tc := range []struct {
		name  string
		codec kgo.CompressionCodec
		attr  uint8
	}{
		{"gzip", kgo.GzipCompression(), 1}, {"snappy", kgo.SnappyCompression(), 2},
		{"lz4", kgo.Lz4Compression(), 3}, {"zstd", kgo.ZstdCompression(), 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic := topicName(t)
			createTopic(t, newAdmin(t, addr), topic, 1)
			cl := newClient(t, addr, kgo.ProducerBatchCompression(tc.codec), kgo.ProducerLinger(20*time.Millisecond),
				kgo.RecordPartitioner(kgo.ManualPartitioner()))
			recs := makeRecords(topic, 200, time.Now())
			produceAll(t, cl, recs)
			got := consumePartitions(t, addr, topic, map[int32]int{0: 200})[0]
			for i, r := range got {
				sameRecord(t, r, recs[i])
				testutil.Equal(t, r.Offset, int64(i), "offset of record %d", i)
				testutil.Equal(t, r.Attrs.CompressionType(), tc.attr, "compression of the batch holding offset %d", r.Offset)
			}
			mid := newClient(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(151)}}))
			testutil.Equal(t, pollValues(t, mid, 1)[0], fmt.Sprintf("151=%s", recs[151].Value), "consuming from offset 151")
		})
	}
}

// testLargeRecords writes a record just under message.max.bytes (1048588 by default)
// and one over it: the first is stored and read back whole (a fetch returns at least one
// batch even above the partition's byte limit), the second gets MESSAGE_TOO_LARGE, and
// the same client then produces again at the next offset.
func testLargeRecords(t *testing.T, addr string) {
	topic := topicName(t)
	createTopic(t, newAdmin(t, addr), topic, 1)
	cl := newClient(t, addr, kgo.ProducerBatchMaxBytes(4<<20), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression())) // franz-go compresses with snappy by default
	big := make([]byte, 1_000_000)
	for i := range big {
		big[i] = byte(i * 7 % 251)
	}
	r := &kgo.Record{Topic: topic, Value: big}
	testutil.NoError(t, cl.ProduceSync(ctxT(t), r).FirstErr(), "producing a 1,000,000-byte record")
	testutil.Equal(t, r.Offset, int64(0), "offset of the big record")

	tooBig := &kgo.Record{Topic: topic, Value: make([]byte, 1_100_000)}
	err := cl.ProduceSync(ctxT(t), tooBig).FirstErr()
	testutil.ErrorIs(t, err, kerr.MessageTooLarge, "producing a 1,100,000-byte record")

	produceValues(t, cl, topic, 1, "small after the rejected one")
	got := consumePartitions(t, addr, topic, map[int32]int{0: 2})[0]
	testutil.True(t, string(got[0].Value) == string(big), "the big record came back different (%d bytes)", len(got[0].Value))
	testutil.Equal(t, string(got[1].Value), "small after the rejected one", "record 1")
	checkContiguous(t, map[int32][]*kgo.Record{0: got}, 0)
}

// testTopicMaxMessageBytes checks the topic's max.message.bytes, not the broker's,
// bounds its batches.
func testTopicMaxMessageBytes(t *testing.T, addr string) {
	topic := topicName(t)
	createTopic(t, newAdmin(t, addr), topic, 1, "max.message.bytes", "2000")
	cl := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DisableIdempotentWrite(),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	err := cl.ProduceSync(ctxT(t), &kgo.Record{Topic: topic, Value: make([]byte, 3000)}).FirstErr()
	testutil.ErrorIs(t, err, kerr.MessageTooLarge, "a 3000-byte record on a topic with max.message.bytes=2000")
	produceValues(t, cl, topic, 0, string(make([]byte, 1000)))
}

// testMissingTopic: with auto-creation off, a topic that does not exist is
// UNKNOWN_TOPIC_OR_PARTITION for metadata, produce (raw and through the producer) and
// list offsets, and asking does not create it.
func testMissingTopic(t *testing.T, addr string) {
	topic := topicName(t)
	adm := newAdmin(t, addr)
	md, err := adm.Metadata(ctxT(t), topic)
	testutil.NoError(t, err, "metadata")
	testutil.ErrorIs(t, md.Topics[topic].Err, kerr.UnknownTopicOrPartition, "metadata for a missing topic")

	cl := newClient(t, addr, kgo.UnknownTopicRetries(1), kgo.RecordDeliveryTimeout(5*time.Second))
	pr := rawProduce(t, cl, topic, 0, -1, logtest.Batch(1, 10))
	testutil.Equal(t, pr.ErrorCode, kerr.UnknownTopicOrPartition.Code, "raw produce to a missing topic")
	err = cl.ProduceSync(ctxT(t), &kgo.Record{Topic: topic, Value: []byte("x")}).FirstErr()
	testutil.ErrorIs(t, err, kerr.UnknownTopicOrPartition, "producing to a missing topic")

	// Straight to the node: kgo would answer a sharded ListOffsets from its metadata.
	wire := rawListOffset(t, cl.Broker(1), topic, 0, -1)
	testutil.Equal(t, wire.ErrorCode, kerr.UnknownTopicOrPartition.Code, "list offsets of a missing topic")

	topics, err := adm.ListTopics(ctxT(t))
	testutil.NoError(t, err, "ListTopics")
	testutil.True(t, !topics.Has(topic), "the missing topic %s was created by asking about it", topic)
}
