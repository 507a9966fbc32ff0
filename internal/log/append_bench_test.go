package log

import (
	"bytes"
	"testing"

	"github.com/runnel-io/runnel/internal/log/logtest"
)

// BenchmarkAppendManyBatches appends 16 batches of 10 records of 100 bytes at once, as a
// follower's fetch or a producer with small batches brings them: the per-batch steps of
// an append (framing, stamping, indexing) weigh more than with one large batch.
func BenchmarkAppendManyBatches(b *testing.B) {
	l := benchLog(b)
	records := bytes.Repeat(logtest.Batch(10, 100), 16)
	b.SetBytes(int64(len(records)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.AppendAsLeader(records, 1); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)*160/b.Elapsed().Seconds(), "records/s")
}
