package interop_test

import (
	"testing"

	"github.com/runnel-io/runnel/internal/log/logtest"
	"github.com/runnel-io/runnel/internal/testutil"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// initProducerID asks the node for a new idempotent producer id and epoch.
func initProducerID(t *testing.T, cl *kgo.Client) (int64, int16) {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionTimeoutMillis = -1
	resp := request[*kmsg.InitProducerIDResponse](t, cl, req)
	testutil.Equal(t, resp.ErrorCode, int16(0), "InitProducerID error code")
	testutil.True(t, resp.ProducerID >= 0 && resp.ProducerEpoch >= 0, "InitProducerID gave id %d epoch %d", resp.ProducerID, resp.ProducerEpoch)
	return resp.ProducerID, resp.ProducerEpoch
}

// testIdempotentProduce sends hand-built batches with a producer id: a retried batch
// (same id, epoch and sequence) is acknowledged with its first base offset and not
// written again; a sequence gap is OUT_OF_ORDER_SEQUENCE_NUMBER; a bumped epoch starts
// again at sequence 0 and fences the old epoch.
func testIdempotentProduce(t *testing.T, addr string) {
	topic := topicName(t)
	adm := newAdmin(t, addr)
	createTopic(t, adm, topic, 1)
	cl := newClient(t, addr)
	pid, epoch := initProducerID(t, cl)
	pid2, _ := initProducerID(t, cl)
	testutil.True(t, pid2 != pid, "InitProducerID gave id %d twice", pid)

	batch := func(epoch int16, seq int32, records int) []byte {
		return logtest.BatchWith(logtest.BatchOptions{Records: records, Idempotent: true,
			ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq})
	}
	steps := []struct {
		what     string
		batch    []byte
		base     int64 // want, when wantCode is nil
		wantEnd  int64 // end offset after the step
		wantCode error
	}{
		{what: "first batch (seq 0-2)", batch: batch(epoch, 0, 3), base: 0, wantEnd: 3},
		{what: "the same batch again", batch: batch(epoch, 0, 3), base: 0, wantEnd: 3},
		{what: "next batch (seq 3-4)", batch: batch(epoch, 3, 2), base: 3, wantEnd: 5},
		{what: "the first batch a third time", batch: batch(epoch, 0, 3), base: 0, wantEnd: 5},
		{what: "the second batch again", batch: batch(epoch, 3, 2), base: 3, wantEnd: 5},
		{what: "a gap (seq 10, expected 5)", batch: batch(epoch, 10, 1), wantCode: kerr.OutOfOrderSequenceNumber, wantEnd: 5},
		{what: "in sequence after the gap was refused (seq 5)", batch: batch(epoch, 5, 1), base: 5, wantEnd: 6},
		{what: "a new epoch not at seq 0", batch: batch(epoch+1, 6, 1), wantCode: kerr.OutOfOrderSequenceNumber, wantEnd: 6},
		{what: "a new epoch at seq 0", batch: batch(epoch+1, 0, 2), base: 6, wantEnd: 8},
		{what: "the old epoch after the bump", batch: batch(epoch, 6, 1), wantCode: kerr.InvalidProducerEpoch, wantEnd: 8},
	}
	for _, st := range steps {
		pr := rawProduce(t, cl, topic, 0, -1, st.batch)
		if st.wantCode != nil {
			testutil.Equal(t, pr.ErrorCode, st.wantCode.(*kerr.Error).Code, "%s: error code", st.what)
		} else {
			testutil.Equal(t, [2]int64{int64(pr.ErrorCode), pr.BaseOffset}, [2]int64{0, st.base}, "%s: error code and base offset", st.what)
		}
		testutil.Equal(t, endOffsets(t, adm, topic)[0], st.wantEnd, "end offset after %s", st.what)
	}
	// The log holds each batch once: 3 + 2 + 1 + 2 records at offsets 0-7.
	got := consumePartitions(t, addr, topic, map[int32]int{0: 8})[0]
	checkContiguous(t, map[int32][]*kgo.Record{0: got}, 0)
	for i, wantSeqInBatch := range []int{0, 1, 2, 0, 1, 0, 0, 1} {
		testutil.Equal(t, got[i].ProducerID, pid, "producer id of offset %d", i)
		testutil.Equal(t, got[i].Value[7], byte(wantSeqInBatch), "index in its batch of the record at offset %d", i)
	}
}
