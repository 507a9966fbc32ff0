package client_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/runnel-io/runnel/client"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestConsumerSeek reads a real node's partition from each Position, seeks an
// assigned partition back, and reads past records deleted under it.
func TestConsumerSeek(t *testing.T) {
	n := startNode(t)
	topic := n.topic(t, "seek")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Ten records in partition 0, record i stamped 10-i minutes ago.
	now := time.Now()
	cl := n.c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 10 {
		r := &kgo.Record{Topic: topic, Partition: 0, Value: []byte(strconv.Itoa(i)), Timestamp: now.Add(-time.Duration(10-i) * time.Minute)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		pos  client.Position
		want int64
	}{
		{client.AtOffset(3), 3},
		{client.AtStart(), 0},
		{client.AtTime(now.Add(-5*time.Minute - 30*time.Second)), 5},
		{client.Rewind(3*time.Minute + 30*time.Second), 7},
	} {
		c := newConsumer(t, n)
		if _, err := c.Seek(ctx, topic, 0, tc.pos); err != nil {
			t.Fatal(err)
		}
		if got, err := firstOffset(ctx, c); got != tc.want || err != nil {
			t.Errorf("%v: first record at %d (%v), want %d", tc.pos, got, err, tc.want)
		}
		if tc.pos.String() == "start" { // seek an assigned partition back
			if _, err := c.Seek(ctx, topic, 0, client.AtOffset(1)); err != nil {
				t.Fatal(err)
			}
			if got, err := firstOffset(ctx, c); got != 1 || err != nil {
				t.Errorf("seek back to offset 1: first record at %d (%v)", got, err)
			}
		}
	}

	c := newConsumer(t, n)
	if next, err := c.Seek(ctx, topic, 0, client.AtEnd()); next != 10 || err != nil {
		t.Fatalf("AtEnd: next offset %d (%v), want 10", next, err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: []byte("10")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if got, err := firstOffset(ctx, c); got != 10 || err != nil {
		t.Errorf("AtEnd: first record at %d (%v), want the one produced after, 10", got, err)
	}

	// Records 0-3 deleted: a consumer at offset 2 skips 2 and 3, and is told.
	var del kadm.Offsets
	del.Add(kadm.Offset{Topic: topic, Partition: 0, At: 4})
	if _, err := kadm.NewClient(cl).DeleteRecords(ctx, del); err != nil {
		t.Fatal(err)
	}
	c = newConsumer(t, n)
	if _, err := c.Seek(ctx, topic, 0, client.AtOffset(2)); err != nil {
		t.Fatal(err)
	}
	_, err := c.Poll(ctx)
	var loss *client.DataLossError
	if !errors.Is(err, client.ErrDataLoss) || !errors.As(err, &loss) || loss.Offset != 2 || loss.ResetTo != 4 || loss.Topic != topic {
		t.Fatalf("poll at a deleted offset: %v, want a DataLossError from 2 to 4", err)
	}
	if got, err := firstOffset(ctx, c); got != 4 || err != nil {
		t.Errorf("after the data loss: first record at %d (%v), want 4", got, err)
	}
}

func newConsumer(t *testing.T, n *node) *client.Consumer {
	t.Helper()
	c, err := client.NewConsumer(client.WithClientOptions(n.c.ClientDefaults()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// firstOffset polls until records arrive and returns the first one's offset.
func firstOffset(ctx context.Context, c *client.Consumer) (int64, error) {
	for {
		recs, err := c.Poll(ctx)
		if err != nil {
			return -1, err
		}
		if len(recs) > 0 {
			return recs[0].Offset, nil
		}
	}
}
