package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// maxLineBytes bounds one input line (one record); Kafka's default message.max.bytes
// is about 1 MiB, so this leaves room for larger broker settings.
const maxLineBytes = 16 << 20

// kafkaMessageMaxBytes is Kafka's default message.max.bytes; the client's own
// default is a little lower, which would refuse records a default broker takes.
const kafkaMessageMaxBytes = 1048588

// produceFlags are `runnel produce`'s flags.
type produceFlags struct {
	keySep         string
	headers        []string
	acks           string
	idempotence    bool
	partition      int32
	compression    string
	linger         time.Duration
	delivery       time.Duration
	verbose        bool
	bufferRecords  int
	bufferBytes    int
	onFull         string
	enqueueTimeout string // empty when unset: the default depends on --on-full
	rate           float64
}

func newProduceCommand() *cobra.Command {
	f := &produceFlags{}
	cmd := &cobra.Command{
		Use:   "produce TOPIC",
		Short: "Produce one record per line of standard input",
		Long: `Produce one record per line of standard input (a trailing \r is dropped).

Records go to the partition of their key's hash, or stick to one partition while
keyless, unless --partition picks one. With --acks all (the default) writes are
idempotent.

Overload: the client buffers at most --buffer-records records and --buffer-bytes
bytes. When the buffer is full, --on-full block waits for room (for ever, or for
--enqueue-timeout, then fails), drop waits --enqueue-timeout (default 0) and then
drops the record, counting it, and error waits --enqueue-timeout (default 0) and
then fails. --rate caps records per second. Dropped records are reported on stderr
at the end.`,
		Args: exactArgs(1),
	}
	conn := addConnFlags(cmd.Flags())
	cmd.RunE = func(cmd *cobra.Command, args []string) error { return runProduce(cmd, conn, f, args[0]) }
	fs := cmd.Flags()
	fs.StringVarP(&f.keySep, "key-separator", "k", "", "split each line into key and value at the first SEP")
	fs.StringArrayVarP(&f.headers, "header", "H", nil, "add header K=V to every record (repeatable)")
	fs.StringVar(&f.acks, "acks", "all", "acknowledgements: 0, 1 or all")
	fs.BoolVar(&f.idempotence, "idempotence", true, "idempotent writes (only with --acks all)")
	fs.Int32Var(&f.partition, "partition", -1, "produce every record to this partition (default: by key hash, else sticky)")
	fs.StringVar(&f.compression, "compression", "none", "none, gzip, snappy, lz4 or zstd")
	fs.DurationVar(&f.linger, "linger", 10*time.Millisecond, "how long to wait for more records before sending a batch")
	fs.DurationVar(&f.delivery, "delivery-timeout", 2*time.Minute, "fail a record not acknowledged within this long (Kafka's delivery.timeout.ms)")
	fs.BoolVarP(&f.verbose, "verbose", "v", false, "print a summary to stderr at the end")
	fs.IntVar(&f.bufferRecords, "buffer-records", 50000, "most records buffered in the client")
	fs.IntVar(&f.bufferBytes, "buffer-bytes", 0, "most bytes buffered in the client (0: no limit)")
	fs.StringVar(&f.onFull, "on-full", "block", "when the buffer is full: block, drop or error")
	fs.StringVar(&f.enqueueTimeout, "enqueue-timeout", "", "how long to wait for buffer room; -1 for ever (default: -1 with block, 0 otherwise)")
	fs.Float64Var(&f.rate, "rate", 0, "most records per second (0: no limit)")
	return cmd
}

// clientOpts turns the flags into kgo options, rejecting bad values as usage errors.
func (f *produceFlags) clientOpts() ([]kgo.Opt, error) {
	if f.delivery <= 0 {
		return nil, usageErrorf("--delivery-timeout must be positive")
	}
	opts := []kgo.Opt{kgo.ProducerLinger(f.linger), kgo.AllowAutoTopicCreation(),
		kgo.ProducerBatchMaxBytes(kafkaMessageMaxBytes), kgo.RecordDeliveryTimeout(f.delivery)}
	acks, err := ackOpts(f.acks, f.idempotence)
	if err != nil {
		return nil, err
	}
	opts = append(opts, acks...)
	codec, err := compressionCodec(f.compression)
	if err != nil {
		return nil, err
	}
	opts = append(opts, kgo.ProducerBatchCompression(codec))
	if f.bufferRecords < 1 || f.bufferBytes < 0 {
		return nil, usageErrorf("--buffer-records must be at least 1 and --buffer-bytes at least 0")
	}
	opts = append(opts, kgo.MaxBufferedRecords(f.bufferRecords))
	if f.bufferBytes > 0 {
		opts = append(opts, kgo.MaxBufferedBytes(f.bufferBytes))
	}
	if f.partition >= 0 {
		opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	}
	return opts, nil
}

func ackOpts(acks string, idempotence bool) ([]kgo.Opt, error) {
	switch acks {
	case "all", "-1":
		if idempotence {
			return []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks())}, nil
		}
		return []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite()}, nil
	case "1":
		return []kgo.Opt{kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite()}, nil
	case "0":
		return []kgo.Opt{kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite()}, nil
	}
	return nil, usageErrorf("bad --acks %q: want 0, 1 or all", acks)
}

func compressionCodec(name string) (kgo.CompressionCodec, error) {
	switch name {
	case "none":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, usageErrorf("bad --compression %q: want none, gzip, snappy, lz4 or zstd", name)
}

// policy builds the overload policy from --on-full, --enqueue-timeout and --rate.
func (f *produceFlags) policy() (*overloadPolicy, error) {
	mode, err := parseOnFull(f.onFull)
	if err != nil {
		return nil, usageError{err}
	}
	var timeout *time.Duration
	if f.enqueueTimeout != "" {
		d, err := parseEnqueueTimeout(f.enqueueTimeout)
		if err != nil {
			return nil, usageError{err}
		}
		timeout = &d
	}
	if f.rate < 0 {
		return nil, usageErrorf("bad --rate %v: want records per second, 0 for no limit", f.rate)
	}
	return newOverloadPolicy(mode, timeout, f.rate), nil
}

func parseHeaders(kvs []string) ([]kgo.RecordHeader, error) {
	hs := make([]kgo.RecordHeader, 0, len(kvs))
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usageErrorf("bad --header %q: want K=V", kv)
		}
		hs = append(hs, kgo.RecordHeader{Key: k, Value: []byte(v)})
	}
	return hs, nil
}

func runProduce(cmd *cobra.Command, conn *connFlags, f *produceFlags, topic string) error {
	opts, err := f.clientOpts()
	if err != nil {
		return err
	}
	policy, err := f.policy()
	if err != nil {
		return err
	}
	headers, err := parseHeaders(f.headers)
	if err != nil {
		return err
	}
	cl, err := conn.client(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := checkCluster(cmd.Context(), cl, topic, f.partition); err != nil {
		return err
	}
	p := newLineProducer(cl, policy, topic, f.partition, f.keySep, headers)
	start := time.Now()
	err = p.run(cmd.Context(), cmd.InOrStdin())
	p.report(cmd.ErrOrStderr(), time.Since(start), f.verbose)
	return err
}

// checkCluster fails fast when the cluster cannot be reached, where the producer
// would keep retrying until the delivery timeout, and when --partition names a
// partition the topic lacks. A missing topic is left to the broker, which may
// create it (auto.create.topics.enable).
func checkCluster(ctx context.Context, cl *kgo.Client, topic string, partition int32) error {
	tds, err := kadm.NewClient(cl).ListTopics(ctx, topic)
	if err != nil {
		return fmt.Errorf("produce to %q: %w", topic, err)
	}
	td, ok := tds[topic]
	if !ok || td.Err != nil || partition < 0 {
		return nil
	}
	if _, err := choosePartitions(td, partition); err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	return nil
}

// lineProducer turns input lines into records and produces them under a policy.
type lineProducer struct {
	cl        *kgo.Client
	policy    *overloadPolicy
	topic     string
	partition int32  // < 0: the partitioner chooses
	keySep    []byte // nil: lines are values only
	headers   []kgo.RecordHeader
	promiseFn func(*kgo.Record, error) // p.promise, stored once

	sent, acked, bytes atomic.Int64 // records handed to the client, acknowledged, and their value+key bytes; only grow

	mu       sync.Mutex // guards firstErr
	firstErr error      // the first record that failed; produce stops at it
}

func newLineProducer(cl *kgo.Client, policy *overloadPolicy, topic string, partition int32, keySep string, headers []kgo.RecordHeader) *lineProducer {
	p := &lineProducer{cl: cl, policy: policy, topic: topic, partition: partition, headers: headers}
	if keySep != "" {
		p.keySep = []byte(keySep)
	}
	p.promiseFn = p.promise
	return p
}

// run produces every line of in, then waits for the outstanding records.
func (p *lineProducer) run(ctx context.Context, in io.Reader) error {
	lines := make(chan []byte, 256)
	readErr := make(chan error, 1)
	done := make(chan struct{})
	defer close(done)
	// The reader stops at the end of in or, once done is closed, at its next line; a
	// read blocked on a terminal ends with the process.
	go func() { readErr <- readLines(in, lines, done) }()
	err := p.produceLines(ctx, lines)
	if err == nil {
		err = <-readErr
	}
	ferr := p.cl.Flush(ctx)
	switch {
	case p.err() != nil: // a record failed: the most specific error
		return p.err()
	case err != nil:
		return err
	case p.policy.Err() != nil: // the buffer filled up after the last line was read
		return fmt.Errorf("produce to %q: %w", p.topic, p.policy.Err())
	case ferr != nil:
		return fmt.Errorf("produce to %q: %w", p.topic, ferr)
	}
	return nil
}

func (p *lineProducer) produceLines(ctx context.Context, lines <-chan []byte) error {
	n := 0
	for {
		var line []byte
		var ok bool
		select {
		case <-ctx.Done():
			return fmt.Errorf("produce to %q: interrupted", p.topic)
		case line, ok = <-lines:
		}
		if !ok || p.err() != nil {
			return nil
		}
		n++
		r, err := p.record(line, n)
		if err == nil {
			err = p.policy.produce(ctx, p.cl, r, p.promiseFn)
		}
		if err != nil {
			return fmt.Errorf("produce to %q: %w", p.topic, err)
		}
		p.sent.Add(1)
	}
}

// readLines sends each line of in, without its line ending (\n or \r\n), then closes
// out. It gives up when done is closed.
func readLines(in io.Reader, out chan<- []byte, done <-chan struct{}) error {
	defer close(out)
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), maxLineBytes)
	n := 0
	for sc.Scan() {
		n++
		select {
		case out <- bytes.Clone(sc.Bytes()):
		case <-done:
			return nil
		}
	}
	if errors.Is(sc.Err(), bufio.ErrTooLong) {
		return fmt.Errorf("line %d is longer than %d bytes", n+1, maxLineBytes)
	}
	if sc.Err() != nil {
		return fmt.Errorf("reading standard input: %w", sc.Err())
	}
	return nil
}

// record builds the record for input line n.
func (p *lineProducer) record(line []byte, n int) (*kgo.Record, error) {
	r := &kgo.Record{Topic: p.topic, Value: line, Headers: p.headers, Partition: p.partition}
	if p.keySep == nil {
		return r, nil
	}
	k, v, ok := bytes.Cut(line, p.keySep)
	if !ok {
		return nil, fmt.Errorf("line %d has no key separator %q", n, p.keySep)
	}
	r.Key, r.Value = k, v
	return r, nil
}

// promise counts acknowledged records and keeps the first failure, naming the topic
// and, once the record was partitioned, the partition (a failed record has no offset).
func (p *lineProducer) promise(r *kgo.Record, err error) {
	if err == nil {
		p.acked.Add(1)
		p.bytes.Add(int64(len(r.Key) + len(r.Value)))
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.firstErr == nil {
		p.firstErr = recordError(r, err)
	}
}

func recordError(r *kgo.Record, err error) error {
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		return fmt.Errorf("produce: %w (%w)", topicNotFound(r.Topic), err)
	}
	where := fmt.Sprintf("produce to %q", r.Topic)
	if r.Partition >= 0 {
		where += fmt.Sprintf(" partition %d", r.Partition)
	}
	return fmt.Errorf("%s: %w", where, err)
}

func (p *lineProducer) err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.firstErr
}

// report prints the dropped-record count (always) and, when verbose, a summary.
func (p *lineProducer) report(w io.Writer, took time.Duration, verbose bool) {
	if d := p.policy.Dropped(); d > 0 {
		fmt.Fprintf(w, "runnel: dropped %d of %d records: the producer buffer was full (--on-full drop)\n",
			d, p.sent.Load())
	}
	if !verbose {
		return
	}
	acked := p.acked.Load()
	rate := float64(acked) / max(took.Seconds(), 1e-9)
	fmt.Fprintf(w, "produced %d records (%d bytes) to %q in %v (%.0f records/s)\n",
		acked, p.bytes.Load(), p.topic, took.Round(time.Millisecond), rate)
}
