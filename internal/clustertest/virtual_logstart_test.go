package clustertest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/internal/clustertest"
)

// TestVirtualFollowerRestartsInsideBatch: while a follower is down, DeleteRecords
// moves the leader's log start inside a batch (105, in a batch of offsets 100-109,
// which the leader keeps whole). The follower comes back below that start, restarts
// its log at it, and is then fetched the whole batch, which begins below: it stores it
// and rejoins the ISR with every record from the log start on. (It refused the batch
// at every fetch and never rejoined; a cluster link's mirror of a source DeleteRecords'd
// inside a batch stayed at its start the same way.)
func TestVirtualFollowerRestartsInsideBatch(t *testing.T) {
	inVirtualTime(t, func(t *testing.T) {
		c := startVirtual(t, 3)
		topic := "logstart"
		createTopic(t, c, topic, 1, 3)
		leader, _ := c.WaitLeader(t, topic, 0, waitTimeout)
		down := 1
		for down == int(leader) {
			down++
		}
		c.Kill(down)
		c.WaitISR(t, topic, 0, 2, waitTimeout)

		// Batches of 10 records: a linger longer than it takes to buffer them.
		h := clustertest.NewHistory()
		cl := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(50*time.Millisecond),
			kgo.ProducerBatchCompression(kgo.NoCompression()))
		ctx := context.Background()
		for range 20 {
			var rs []*kgo.Record
			for range 10 {
				rs = append(rs, &kgo.Record{Topic: topic, Partition: 0, Value: h.NextValue(0)})
			}
			for _, r := range cl.ProduceSync(ctx, rs...) {
				h.Record(r.Record, r.Err)
				if r.Err != nil {
					t.Fatalf("produce to %s-0: %v", topic, r.Err)
				}
			}
		}
		var del kadm.Offsets
		del.Add(kadm.Offset{Topic: topic, Partition: 0, At: 105})
		if res, err := c.Admin(t).DeleteRecords(ctx, del); err != nil || res.Error() != nil {
			t.Fatalf("DeleteRecords %s-0 to 105: %v %v", topic, err, res.Error())
		}
		c.Restart(down)
		c.WaitISR(t, topic, 0, 3, waitTimeout)
		// The copy of the follower's log is opened without the node's log start
		// checkpoint: it starts at its first segment's base, where the batch begins.
		rl, lead := c.ReadReplica(t, down, topic, 0), c.ReadReplica(t, int(leader), topic, 0)
		if rl.Start != 100 || rl.End != 200 {
			t.Fatalf("node %d's replica holds [%d, %d), want the whole batch holding the log start 105 and the rest: [100, 200)", down, rl.Start, rl.End)
		}
		for off := int64(100); off < 200; off++ {
			if rl.Values[off] != lead.Values[off] {
				t.Fatalf("node %d's replica holds %q at offset %d, the leader %q", down, rl.Values[off], off, lead.Values[off])
			}
		}
		t.Logf("%s", fmt.Sprintf("node %d back in the ISR, its log [%d, %d)", down, rl.Start, rl.End))
	})
}
