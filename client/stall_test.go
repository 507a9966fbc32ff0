package client_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/runnel-io/runnel/client"
	"github.com/runnel-io/runnel/internal/clustertest"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestMain(m *testing.M) { os.Exit(clustertest.Main(m)) }

// node is one real runnel node (a process of this checkout's binary) that the test can
// stall with SIGSTOP.
type node struct {
	c *clustertest.Cluster
}

func startNode(t *testing.T) *node {
	t.Helper()
	return &node{c: clustertest.Start(t, clustertest.Options{Nodes: 1})}
}

// topic creates a topic of 3 partitions and returns its name.
func (n *node) topic(t *testing.T, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := n.c.Admin(t).CreateTopic(ctx, 3, 1, nil, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", name, err)
	}
	return name
}

// producer builds a Producer of the node with a buffer of bufferRecords and opts.
func (n *node) producer(t *testing.T, topic string, bufferRecords int, opts ...client.Option) *client.Producer {
	t.Helper()
	kopts := append(n.c.ClientDefaults(), kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(time.Millisecond),
		kgo.RecordDeliveryTimeout(time.Minute))
	p, err := client.NewProducer(append([]client.Option{client.WithClientOptions(kopts...),
		client.WithMaxBufferedRecords(bufferRecords)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// ledger records what became of every record a test produced, by sequence number.
type ledger struct {
	mu       sync.Mutex
	next     int
	accepted map[int]bool  // Produce returned nil
	refused  map[int]error // Produce returned an error
	acked    map[int]bool  // the promise saw success
	failed   map[int]error // the promise saw an error
	dropped  map[int]bool  // WithOnDrop saw it
}

func newLedger() *ledger {
	return &ledger{accepted: map[int]bool{}, refused: map[int]error{}, acked: map[int]bool{},
		failed: map[int]error{}, dropped: map[int]bool{}}
}

// record returns the next record: key k<seq%3>, value its sequence number.
func (l *ledger) record() (*kgo.Record, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	seq := l.next
	l.next++
	return &kgo.Record{Key: []byte(fmt.Sprintf("k%d", seq%3)), Value: []byte(strconv.Itoa(seq))}, seq
}

func (l *ledger) promise(r *kgo.Record, err error) {
	seq, _ := strconv.Atoi(string(r.Value))
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.failed[seq] = err
		return
	}
	l.acked[seq] = true
}

func (l *ledger) onDrop(r *kgo.Record) {
	seq, _ := strconv.Atoi(string(r.Value))
	l.mu.Lock()
	defer l.mu.Unlock()
	l.dropped[seq] = true
}

// produce produces one record and books the outcome; it returns Produce's error and
// how long the call took.
func (l *ledger) produce(p *client.Producer) (error, time.Duration) {
	r, seq := l.record()
	start := time.Now()
	err := p.Produce(context.Background(), r, l.promise)
	took := time.Since(start)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.refused[seq] = err
	} else {
		l.accepted[seq] = true
	}
	return err, took
}

// checkLog reads the topic from the start and checks that exactly the acknowledged
// records are in it, once each, in order within each partition.
func (l *ledger) checkLog(t *testing.T, n *node, topic string) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.failed) > 0 {
		t.Errorf("%d records failed after they were buffered: %v", len(l.failed), l.failed)
	}
	for seq := range l.accepted {
		if !l.acked[seq] {
			t.Errorf("record %d was buffered and never acknowledged", seq)
		}
	}
	c, err := client.NewConsumer(client.WithClientOptions(n.c.ClientDefaults()...))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := c.Assign(ctx, topic, client.AtStart()); err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	last := map[int32]int{}
	for len(seen) < len(l.acked) {
		recs, err := c.Poll(ctx)
		if err != nil {
			t.Fatalf("reading %s back after %d of %d records: %v", topic, len(seen), len(l.acked), err)
		}
		for _, r := range recs {
			seq, _ := strconv.Atoi(string(r.Value))
			switch {
			case !l.acked[seq]:
				t.Errorf("record %d is in the log but was not acknowledged (refused: %v, dropped: %v)", seq, l.refused[seq], l.dropped[seq])
			case seen[seq]:
				t.Errorf("record %d is in the log twice", seq)
			}
			if prev, ok := last[r.Partition]; ok && seq < prev {
				t.Errorf("partition %d: record %d after record %d", r.Partition, seq, prev)
			}
			seen[seq], last[r.Partition] = true, seq
		}
	}
}

// waitFor polls cond every millisecond until it holds, failing the test after d with
// what never happened.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s never happened", d, what)
		}
		time.Sleep(time.Millisecond)
	}
}

// rate produces n records under Block as fast as the node takes them and returns
// records per second.
func rate(t *testing.T, p *client.Producer, l *ledger, n int) float64 {
	t.Helper()
	start := time.Now()
	for range n {
		if err, _ := l.produce(p); err != nil {
			t.Fatal(err)
		}
	}
	flush(t, p)
	return float64(n) / time.Since(start).Seconds()
}

func flush(t *testing.T, p *client.Producer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.Flush(ctx); err != nil {
		t.Fatalf("flush: %v (stats %+v)", err, p.Stats())
	}
}

// TestOverloadStall stalls a real node with SIGSTOP under each OnFull policy and
// checks what became of every record, and that the producer recovers after SIGCONT.
func TestOverloadStall(t *testing.T) {
	n := startNode(t)
	t.Run("Block", func(t *testing.T) { testStallBlock(t, n) })
	t.Run("BlockTimeout", func(t *testing.T) { testStallBlockTimeout(t, n) })
	t.Run("Drop", func(t *testing.T) { testStallDrop(t, n) })
	t.Run("Error", func(t *testing.T) { testStallError(t, n) })
}

// Block loses nothing: a producer with a buffer of 100 blocks while the node is
// stopped, and once it continues the buffer drains and throughput recovers.
func testStallBlock(t *testing.T, n *node) {
	const buffer, total = 100, 2000
	topic := n.topic(t, "stall-block")
	p := n.producer(t, topic, buffer)
	l := newLedger()
	before := rate(t, p, l, 1000)

	n.c.Pause(1)
	paused := true
	defer func() {
		if paused {
			n.c.Resume(1)
		}
	}()
	done := make(chan time.Time, 1)
	go func() {
		for range total {
			if err, _ := l.produce(p); err != nil {
				t.Error(err)
				break
			}
		}
		done <- time.Now()
	}()
	waitFor(t, 10*time.Second, "the buffer filled up", func() bool { return p.Stats().BufferedRecords == buffer })
	// The stall lasts 300 ms more: Produce stays blocked and nothing is delivered.
	select {
	case <-done:
		t.Fatalf("Produce of %d records into a buffer of %d returned while the node was stopped", total, buffer)
	case <-time.After(300 * time.Millisecond):
	}
	st := p.Stats()
	if st.Enqueued != 1000+buffer || st.Delivered != 1000 || st.BufferedRecords != buffer {
		t.Fatalf("while the node was stopped: %+v; want %d enqueued, 1000 delivered, %d buffered", st, 1000+buffer, buffer)
	}
	resumed := time.Now()
	n.c.Resume(1)
	paused = false
	finished := <-done
	flush(t, p)
	drained := time.Since(resumed)
	after := rate(t, p, l, 1000)
	st = p.Stats()
	t.Logf("Block: %.0f records/s before the stall, %.0f after; %d records drained %v after SIGCONT (the last Produce returned after %v); blocked %v in all",
		before, after, total, drained.Round(time.Millisecond), finished.Sub(resumed).Round(time.Millisecond), st.Blocked.Round(time.Millisecond))
	if st.Delivered != 1000+total+1000 || st.Failed+st.Refused+st.Dropped+st.Canceled != 0 || st.BufferedRecords != 0 {
		t.Errorf("stats %+v; want %d delivered, nothing failed, refused, dropped or buffered", st, 1000+total+1000)
	}
	if st.Blocked <= 0 {
		t.Errorf("Stats().Blocked = %v after a stall", st.Blocked)
	}
	if after < before/4 {
		t.Errorf("throughput did not recover: %.0f records/s after the stall, %.0f before", after, before)
	}
	l.checkLog(t, n, topic)
}

// Block with an enqueue timeout fails exactly the records that found no room in
// time, each after the timeout, and counts them.
func testStallBlockTimeout(t *testing.T, n *node) {
	const buffer, timeout = 20, 150 * time.Millisecond
	topic := n.topic(t, "stall-block-timeout")
	p := n.producer(t, topic, buffer, client.WithEnqueueTimeout(timeout))
	l := newLedger()
	n.c.Pause(1)
	for i := range buffer + 5 {
		err, took := l.produce(p)
		switch {
		case i < buffer && err != nil:
			t.Errorf("record %d of a buffer of %d: %v", i, buffer, err)
		case i >= buffer && !errors.Is(err, client.ErrBufferFull):
			t.Errorf("record %d with the buffer full and the node stopped: %v, want ErrBufferFull", i, err)
		case i >= buffer && took < timeout:
			t.Errorf("record %d failed after %v, before the %v enqueue timeout", i, took, timeout)
		}
	}
	st := p.Stats()
	n.c.Resume(1)
	if st.Refused != 5 || st.Enqueued != buffer || st.Blocked < 5*timeout {
		t.Errorf("stats during the stall %+v; want 5 refused, %d enqueued, at least %v blocked", st, buffer, 5*timeout)
	}
	flush(t, p)
	for range 2 * buffer { // after the stall: room again, nothing refused
		if err, _ := l.produce(p); err != nil {
			t.Fatalf("after SIGCONT: %v", err)
		}
	}
	flush(t, p)
	if st := p.Stats(); st.Refused != 5 || st.Delivered != 3*buffer {
		t.Errorf("stats after the stall %+v; want still 5 refused, %d delivered", st, 3*buffer)
	}
	l.checkLog(t, n, topic)
}

// Drop drops exactly the records that found the buffer full, reports each to the
// callback and in Stats, and every record not dropped arrives once, in order.
func testStallDrop(t *testing.T, n *node) {
	const buffer = 20
	topic := n.topic(t, "stall-drop")
	l := newLedger()
	p := n.producer(t, topic, buffer, client.WithOnFull(client.Drop), client.WithOnDrop(l.onDrop))
	n.c.Pause(1)
	for i := range 50 {
		err, _ := l.produce(p)
		if want := i >= buffer; errors.Is(err, client.ErrDropped) != want || (!want && err != nil) {
			t.Errorf("record %d (buffer %d, node stopped): %v", i, buffer, err)
		}
	}
	n.c.Resume(1)
	flush(t, p)
	for range 200 { // after the stall, at full speed: whatever is dropped is reported
		l.produce(p)
	}
	flush(t, p)
	st := p.Stats()
	l.mu.Lock()
	for seq, err := range l.refused {
		if !errors.Is(err, client.ErrDropped) || !l.dropped[seq] {
			t.Errorf("record %d: Produce said %v, callback saw it dropped: %v", seq, err, l.dropped[seq])
		}
	}
	if int(st.Dropped) != len(l.dropped) || len(l.dropped) != len(l.refused) || st.Dropped < 30 || int(st.Delivered) != len(l.accepted) {
		t.Errorf("stats %+v; callback saw %d dropped, Produce refused %d, accepted %d; want equal counts, at least 30 dropped",
			st, len(l.dropped), len(l.refused), len(l.accepted))
	}
	if len(l.accepted) <= buffer {
		t.Errorf("after the stall no record was accepted (%d in all)", len(l.accepted))
	}
	l.mu.Unlock()
	t.Logf("Drop: %d of 250 records dropped (30 during the stall), %d delivered", st.Dropped, st.Delivered)
	l.checkLog(t, n, topic)
}

// Error fails fast: the first record that finds the buffer full fails at once.
func testStallError(t *testing.T, n *node) {
	const buffer = 20
	topic := n.topic(t, "stall-error")
	p := n.producer(t, topic, buffer, client.WithOnFull(client.Error))
	l := newLedger()
	n.c.Pause(1)
	for i := range buffer {
		if err, _ := l.produce(p); err != nil {
			t.Fatalf("record %d of a buffer of %d: %v", i, buffer, err)
		}
	}
	err, took := l.produce(p)
	n.c.Resume(1)
	if !errors.Is(err, client.ErrBufferFull) || took > 50*time.Millisecond {
		t.Errorf("Produce into a full buffer: %v after %v; want ErrBufferFull at once", err, took)
	}
	flush(t, p)
	if err, _ := l.produce(p); err != nil {
		t.Errorf("after SIGCONT and a flush: %v", err)
	}
	flush(t, p)
	if st := p.Stats(); st.Refused != 1 || st.Delivered != buffer+1 {
		t.Errorf("stats %+v; want 1 refused, %d delivered", st, buffer+1)
	}
	l.checkLog(t, n, topic)
}
