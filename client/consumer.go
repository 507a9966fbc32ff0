package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ErrDataLoss is what every *DataLossError is (errors.Is(err, ErrDataLoss)): a
// partition's next offset was not in the log, and the consumer moved on.
var ErrDataLoss = errors.New("data loss")

// DataLossError reports a partition whose next offset was out of the log's range.
// When ResetTo > Offset, records Offset to ResetTo-1 were deleted (retention,
// DeleteRecords) before they were read, and the consumer resumed at the log start,
// ResetTo. When ResetTo < Offset, the log ends before Offset (it was truncated, or
// Offset was never written) and the consumer resumed at the log end, ResetTo.
type DataLossError struct {
	Topic     string
	Partition int32
	Offset    int64 // the offset the consumer was to read next
	ResetTo   int64 // where it reads next now
}

func (e *DataLossError) Error() string {
	if e.ResetTo > e.Offset {
		return fmt.Sprintf("data loss: %s/%d: offsets %d to %d were deleted before they were read; resuming at %d",
			e.Topic, e.Partition, e.Offset, e.ResetTo-1, e.ResetTo)
	}
	return fmt.Sprintf("data loss: %s/%d: offset %d is past the log end; resuming at the end, %d",
		e.Topic, e.Partition, e.Offset, e.ResetTo)
}

// Is makes errors.Is(err, ErrDataLoss) true.
func (e *DataLossError) Is(target error) bool { return target == ErrDataLoss }

// Position is where Assign starts reading a partition.
type Position struct {
	kind   positionKind
	offset int64         // posOffset
	at     time.Time     // posTime
	back   time.Duration // posRewind
}

type positionKind uint8

const (
	posOffset positionKind = iota
	posStart
	posEnd
	posTime
	posRewind
)

// AtOffset is offset o (0 or more). An offset no longer in the log gives a
// DataLossError from Poll.
func AtOffset(o int64) Position { return Position{kind: posOffset, offset: o} }

// AtStart is the log start: the oldest record still in the log.
func AtStart() Position { return Position{kind: posStart} }

// AtEnd is the log end (the high watermark): only records produced from now on.
func AtEnd() Position { return Position{kind: posEnd} }

// AtTime is the first record whose timestamp is t or later (the log end if none).
func AtTime(t time.Time) Position { return Position{kind: posTime, at: t} }

// Rewind is AtTime(time.Now().Add(-d)), with now taken when Assign runs: the last d
// of the log.
func Rewind(d time.Duration) Position { return Position{kind: posRewind, back: d} }

func (p Position) String() string {
	switch p.kind {
	case posStart:
		return "start"
	case posEnd:
		return "end"
	case posTime:
		return "time " + p.at.Format(time.RFC3339Nano)
	case posRewind:
		return "rewind " + p.back.String()
	}
	return fmt.Sprintf("offset %d", p.offset)
}

// consumerConfig is what the Options of NewConsumer set.
type consumerConfig struct {
	kgoOpts []kgo.Opt
}

// Consumer reads the partitions it is assigned, each from the Position it was given.
// Poll must be called from one goroutine at a time; Assign may run concurrently.
type Consumer struct {
	cl  *kgo.Client  // immutable
	adm *kadm.Client // immutable; over cl

	mu   sync.Mutex                 // guards next
	next map[string]map[int32]int64 // per assigned partition, the offset of the next record to return
}

// NewConsumer builds a Consumer with nothing assigned and its kgo.Client.
func NewConsumer(opts ...Option) (*Consumer, error) {
	var cfg consumerConfig
	for _, o := range opts {
		if o.consumer == nil {
			return nil, fmt.Errorf("client: %s applies to a Producer, not a Consumer", o.name)
		}
		o.consumer(&cfg)
	}
	// Out-of-range offsets come back to Poll, which reports the loss and resets.
	kopts := append(cfg.kgoOpts[:len(cfg.kgoOpts):len(cfg.kgoOpts)], kgo.ConsumeResetOffset(kgo.NoResetOffset()))
	cl, err := kgo.NewClient(kopts...)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	return &Consumer{cl: cl, adm: kadm.NewClient(cl), next: make(map[string]map[int32]int64)}, nil
}

// Client is the underlying kgo.Client.
func (c *Consumer) Client() *kgo.Client { return c.cl }

// Close closes the client.
func (c *Consumer) Close() { c.cl.Close() }

// Assign reads partitions of topic (every partition when none is given) from pos; a
// partition already assigned is moved there (a seek). It returns the offset each
// partition reads next.
func (c *Consumer) Assign(ctx context.Context, topic string, pos Position, partitions ...int32) (map[int32]int64, error) {
	offsets, err := c.resolve(ctx, topic, pos, partitions)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.next[topic] == nil {
		c.next[topic] = make(map[int32]int64)
	}
	add := make(map[int32]kgo.Offset)
	set := make(map[int32]kgo.EpochOffset)
	for p, o := range offsets {
		if _, assigned := c.next[topic][p]; assigned {
			set[p] = kgo.EpochOffset{Epoch: -1, Offset: o}
		} else {
			add[p] = kgo.NewOffset().At(o)
		}
		c.next[topic][p] = o
	}
	if len(add) > 0 {
		c.cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{topic: add})
	}
	if len(set) > 0 {
		c.cl.SetOffsets(map[string]map[int32]kgo.EpochOffset{topic: set})
	}
	return offsets, nil
}

// Seek moves one partition to pos (assigning it if it is not); see Assign.
func (c *Consumer) Seek(ctx context.Context, topic string, partition int32, pos Position) (int64, error) {
	offsets, err := c.Assign(ctx, topic, pos, partition)
	if err != nil {
		return 0, err
	}
	return offsets[partition], nil
}

// resolve turns pos into an exact offset per partition.
func (c *Consumer) resolve(ctx context.Context, topic string, pos Position, partitions []int32) (map[int32]int64, error) {
	var listed kadm.ListedOffsets
	var err error
	switch pos.kind {
	case posOffset:
		if pos.offset < 0 {
			return nil, fmt.Errorf("client: AtOffset(%d): want 0 or more", pos.offset)
		}
		listed, err = c.adm.ListStartOffsets(ctx, topic) // for the partitions' list only
	case posStart:
		listed, err = c.adm.ListStartOffsets(ctx, topic)
	case posEnd:
		listed, err = c.adm.ListEndOffsets(ctx, topic)
	case posTime, posRewind:
		at := pos.at
		if pos.kind == posRewind {
			at = time.Now().Add(-pos.back)
		}
		listed, err = c.adm.ListOffsetsAfterMilli(ctx, at.UnixMilli(), topic)
	}
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("client: %s: listing offsets: %w", topic, err)
	}
	if len(listed[topic]) == 0 {
		return nil, fmt.Errorf("client: %s: %w", topic, kerr.UnknownTopicOrPartition)
	}
	if len(partitions) == 0 {
		for p := range listed[topic] {
			partitions = append(partitions, p)
		}
	}
	offsets := make(map[int32]int64, len(partitions))
	for _, p := range partitions {
		lo, ok := listed.Lookup(topic, p)
		if !ok {
			return nil, fmt.Errorf("client: %s has no partition %d", topic, p)
		}
		offsets[p] = lo.Offset
		if pos.kind == posOffset {
			offsets[p] = pos.offset
		}
	}
	return offsets, nil
}

// Poll waits until records arrive, an error happens or ctx is done, and returns the
// records (in order within each partition). The error joins what went wrong; each
// *DataLossError in it (errors.Is(err, ErrDataLoss)) says where a partition resumed,
// and the next Poll goes on from there. ctx's error or kgo.ErrClientClosed means the
// poll ended.
func (c *Consumer) Poll(ctx context.Context) ([]*kgo.Record, error) {
	fetches := c.cl.PollFetches(ctx)
	records := fetches.Records()
	c.mu.Lock()
	for _, r := range records {
		if ps := c.next[r.Topic]; ps != nil {
			ps[r.Partition] = r.Offset + 1
		}
	}
	c.mu.Unlock()
	var errs []error
	for _, fe := range fetches.Errors() {
		errs = append(errs, c.fetchError(ctx, fe))
	}
	return records, errors.Join(errs...)
}

// fetchError turns a partition's fetch error into what Poll reports, resetting a
// partition whose offset is out of range.
func (c *Consumer) fetchError(ctx context.Context, fe kgo.FetchError) error {
	var loss *kgo.ErrDataLoss
	switch {
	case errors.As(fe.Err, &loss):
		c.setNext(fe.Topic, fe.Partition, loss.ResetTo)
		return &DataLossError{Topic: fe.Topic, Partition: fe.Partition, Offset: loss.ConsumedTo, ResetTo: loss.ResetTo}
	case errors.Is(fe.Err, kerr.OffsetOutOfRange):
		return c.resetOutOfRange(ctx, fe.Topic, fe.Partition)
	case fe.Topic == "":
		return fe.Err // the client is closed or ctx is done
	}
	return fmt.Errorf("%s/%d: %w", fe.Topic, fe.Partition, fe.Err)
}

func (c *Consumer) resetOutOfRange(ctx context.Context, topic string, partition int32) error {
	c.mu.Lock()
	from := c.next[topic][partition]
	c.mu.Unlock()
	start, err := c.adm.ListStartOffsets(ctx, topic)
	if err == nil {
		err = start.Error()
	}
	end, err2 := c.adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = errors.Join(err2, end.Error())
	}
	so, ok1 := start.Lookup(topic, partition)
	eo, ok2 := end.Lookup(topic, partition)
	if err != nil || !ok1 || !ok2 {
		return fmt.Errorf("%s/%d: offset %d out of range, and listing the log's range failed: %v", topic, partition, from, err)
	}
	resetTo := from // back in range by now: read it again, nothing is lost
	switch {
	case from < so.Offset:
		resetTo = so.Offset
	case from > eo.Offset:
		resetTo = eo.Offset
	}
	c.setNext(topic, partition, resetTo)
	c.cl.SetOffsets(map[string]map[int32]kgo.EpochOffset{topic: {partition: {Epoch: -1, Offset: resetTo}}})
	if resetTo == from {
		return nil
	}
	return &DataLossError{Topic: topic, Partition: partition, Offset: from, ResetTo: resetTo}
}

func (c *Consumer) setNext(topic string, partition int32, offset int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ps := c.next[topic]; ps != nil {
		ps[partition] = offset
	}
}
