package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/runnel-io/runnel/client"
	"github.com/twmb/franz-go/pkg/kgo"
)

// These examples need a broker on localhost:9092, so they are compiled, not run.

// Block: wait for buffer room for ever (the default), as queue.enqueue.timeout.ms=-1.
// Nothing is lost; a stalled cluster slows the producer down to its pace.
func ExampleWithOnFull_block() {
	p, err := client.NewProducer(client.WithSeedBrokers("localhost:9092"),
		client.WithClientOptions(kgo.DefaultProduceTopic("events")),
		client.WithMaxBufferedRecords(10000), client.WithOnFull(client.Block))
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	if err := p.Produce(ctx, &kgo.Record{Value: []byte("hello")}, func(r *kgo.Record, err error) {
		if err != nil {
			log.Printf("record failed: %v", err)
		}
	}); err != nil {
		log.Fatal(err) // only ctx's error or ErrClosed under Block for ever
	}
	p.Flush(ctx)
}

// Block with an enqueue timeout: wait up to 500 ms for room, then fail the record.
func ExampleWithEnqueueTimeout() {
	p, err := client.NewProducer(client.WithSeedBrokers("localhost:9092"),
		client.WithClientOptions(kgo.DefaultProduceTopic("events")),
		client.WithOnFull(client.Block), client.WithEnqueueTimeout(500*time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	err = p.Produce(context.Background(), &kgo.Record{Value: []byte("hello")}, nil)
	if errors.Is(err, client.ErrBufferFull) {
		log.Printf("cluster too slow: %v (%d refused so far)", err, p.Stats().Refused)
	}
}

// Error: fail fast, at once, when the buffer is full.
func ExampleWithOnFull_error() {
	p, err := client.NewProducer(client.WithSeedBrokers("localhost:9092"),
		client.WithClientOptions(kgo.DefaultProduceTopic("events")), client.WithOnFull(client.Error))
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	if err := p.Produce(context.Background(), &kgo.Record{Value: []byte("hello")}, nil); errors.Is(err, client.ErrBufferFull) {
		log.Print("buffer full: back off and retry later")
	}
}

// Drop: drop what does not fit (logs, metrics), counted and reported, never silently.
func ExampleWithOnFull_drop() {
	p, err := client.NewProducer(client.WithSeedBrokers("localhost:9092"),
		client.WithClientOptions(kgo.DefaultProduceTopic("metrics")), client.WithOnFull(client.Drop),
		client.WithOnDrop(func(r *kgo.Record) { log.Printf("dropped %q", r.Value) }))
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	for i := range 1000 {
		err := p.Produce(context.Background(), &kgo.Record{Value: fmt.Appendf(nil, "cpu=%d", i)}, nil)
		if err != nil && !errors.Is(err, client.ErrDropped) {
			log.Fatal(err)
		}
	}
	st := p.Stats()
	log.Printf("%d dropped, %d buffered, %d delivered", st.Dropped, st.BufferedRecords, st.Delivered)
}

// Slow down: at most 1,000 records and 1 MB per second; a record over the rate waits.
func ExampleWithRate() {
	p, err := client.NewProducer(client.WithSeedBrokers("localhost:9092"),
		client.WithClientOptions(kgo.DefaultProduceTopic("events")),
		client.WithRate(1000), client.WithByteRate(1<<20))
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	p.Produce(context.Background(), &kgo.Record{Value: []byte("paced")}, nil)
	log.Printf("waited %v for the rate", p.Stats().RateWait)
}

func ExampleAtOffset() {
	c, err := client.NewConsumer(client.WithSeedBrokers("localhost:9092"))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if _, err := c.Seek(ctx, "orders", 0, client.AtOffset(42)); err != nil {
		log.Fatal(err)
	}
	recs, err := c.Poll(ctx)
	if errors.Is(err, client.ErrDataLoss) {
		log.Printf("records skipped: %v", err) // offset 42 was deleted; reading from the log start
	}
	for _, r := range recs {
		fmt.Printf("%d %s\n", r.Offset, r.Value)
	}
}

func ExampleAtStart() {
	c, err := client.NewConsumer(client.WithSeedBrokers("localhost:9092"))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	// Every partition of the topic, from its oldest record.
	if _, err := c.Assign(context.Background(), "orders", client.AtStart()); err != nil {
		log.Fatal(err)
	}
}

func ExampleAtEnd() {
	c, err := client.NewConsumer(client.WithSeedBrokers("localhost:9092"))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	// Partitions 0 and 1, only records produced from now on.
	next, err := c.Assign(context.Background(), "orders", client.AtEnd(), 0, 1)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("reading from %v", next)
}

func ExampleAtTime() {
	c, err := client.NewConsumer(client.WithSeedBrokers("localhost:9092"))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	since := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := c.Assign(context.Background(), "orders", client.AtTime(since)); err != nil {
		log.Fatal(err)
	}
}

func ExampleRewind() {
	c, err := client.NewConsumer(client.WithSeedBrokers("localhost:9092"))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	// The last ten minutes of partition 0.
	if _, err := c.Seek(context.Background(), "orders", 0, client.Rewind(10*time.Minute)); err != nil {
		log.Fatal(err)
	}
}
