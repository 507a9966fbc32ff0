package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runnel-io/runnel/client"
	"github.com/runnel-io/runnel/internal/clitext"
	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
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
	nullEmpty      bool     // -Z: an empty value (or key) is sent as null
	file           string   // -l: read the lines from this file instead of stdin
	valueFiles     []string // --value-file: one record per file, its whole content
	key            string   // --key: the key of every record
	keyFile        string   // --key-file: the key of every record, a file's content
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
at the end.

--rate applies first, --on-full second: every record first waits for its turn
under --rate (a record over the rate is delayed, never dropped), and only then
meets the buffer, where --on-full drop drops it if the buffer is still full. So
--rate with --on-full drop drops records only while the cluster acknowledges them
more slowly than the rate.

Input: by default one record per line of standard input; -l FILE reads the lines
from FILE instead (kcat's -l). --value-file FILE (repeatable) produces each file's
whole content, bytes as they are, as one record (kcat's -P FILE...). A key comes
from -k SEP (split each line), or --key KEY / --key-file FILE (the same key for
every record, a file's whole content). -Z sends an empty value as null, a tombstone
in a compacted topic (and an empty key as a null key), as kcat's -Z; without it an
empty line is an empty value.`,
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
	fs.BoolVarP(&f.nullEmpty, "null", "Z", false, "send an empty value as null (a tombstone) and an empty key as null, as kcat -Z")
	fs.StringVarP(&f.file, "file", "l", "", "read the records from FILE, one per line, instead of standard input")
	fs.StringArrayVar(&f.valueFiles, "value-file", nil, "produce FILE's whole content as one record's value (repeatable)")
	fs.StringVar(&f.key, "key", "", "the key of every record")
	fs.StringVar(&f.keyFile, "key-file", "", "the key of every record: FILE's whole content")
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

// input checks the input and key flags and returns where the records come from and
// the key every record gets (nil: none, or from -k).
func (f *produceFlags) input(stdin io.Reader) (source recordSource, key []byte, err error) {
	keyed := 0
	for _, set := range []bool{f.keySep != "", f.key != "", f.keyFile != ""} {
		if set {
			keyed++
		}
	}
	if keyed > 1 {
		return nil, nil, usageErrorf("give only one of -k, --key and --key-file")
	}
	if f.file != "" && len(f.valueFiles) > 0 {
		return nil, nil, usageErrorf("-l/--file and --value-file cannot be used together")
	}
	if f.keySep != "" && len(f.valueFiles) > 0 {
		return nil, nil, usageErrorf("-k splits lines; with --value-file give --key or --key-file")
	}
	switch {
	case f.key != "":
		key = []byte(f.key)
	case f.keyFile != "":
		if key, err = os.ReadFile(f.keyFile); err != nil {
			return nil, nil, fmt.Errorf("produce: --key-file: %w", err)
		}
	}
	switch {
	case len(f.valueFiles) > 0:
		for _, name := range f.valueFiles {
			if _, err := os.Stat(name); err != nil {
				return nil, nil, fmt.Errorf("produce: --value-file: %w", err)
			}
		}
		return fileValues(f.valueFiles), key, nil
	case f.file != "":
		in, err := os.Open(f.file)
		if err != nil {
			return nil, nil, fmt.Errorf("produce: --file: %w", err)
		}
		return readerLines(in, f.file, in.Close), key, nil
	}
	return readerLines(stdin, "standard input", nil), key, nil
}

func runProduce(cmd *cobra.Command, conn *connFlags, f *produceFlags, topic string) error {
	opts, err := f.clientOpts()
	if err != nil {
		return err
	}
	source, key, err := f.input(cmd.InOrStdin())
	if err != nil {
		return err
	}
	overload, err := f.overloadOptions(f.rate)
	if err != nil {
		return err
	}
	headers, err := parseHeaders(f.headers)
	if err != nil {
		return err
	}
	prod, err := newOverloadProducer(conn, opts, overload)
	if err != nil {
		return err
	}
	defer prod.Close()
	if err := checkCluster(cmd.Context(), prod.Client(), topic, f.partition); err != nil {
		return err
	}
	p := newLineProducer(prod, f, topic, headers)
	p.key, p.nullEmpty = key, f.nullEmpty
	start := time.Now()
	err = p.run(cmd.Context(), source)
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

// lineProducer turns input lines into records and produces them under the overload
// policy of its Producer.
type lineProducer struct {
	prod      *client.Producer
	flags     *produceFlags // for naming the flag behind a buffer-full failure
	topic     string
	partition int32  // < 0: the partitioner chooses
	keySep    []byte // nil: lines are values only
	headers   []kgo.RecordHeader
	key       []byte                   // the key of every record (--key, --key-file); nil: none or from keySep
	nullEmpty bool                     // -Z: an empty value or key becomes null
	promiseFn func(*kgo.Record, error) // p.promise, stored once

	sent, acked, bytes atomic.Int64 // records handed to the producer (dropped ones too), acknowledged, and their value+key bytes; only grow

	mu       sync.Mutex // guards firstErr
	firstErr error      // the first record that failed; produce stops at it
}

func newLineProducer(prod *client.Producer, f *produceFlags, topic string, headers []kgo.RecordHeader) *lineProducer {
	p := &lineProducer{prod: prod, flags: f, topic: topic, partition: f.partition, headers: headers}
	if f.keySep != "" {
		p.keySep = []byte(f.keySep)
	}
	p.promiseFn = p.promise
	return p
}

// recordSource sends the input's records (lines, or whole files) on out and closes
// it; it gives up when done is closed.
type recordSource func(out chan<- []byte, done <-chan struct{}) error

// readerLines is the lines of in (named name in errors); closeFn, if not nil, runs
// when the lines are read.
func readerLines(in io.Reader, name string, closeFn func() error) recordSource {
	return func(out chan<- []byte, done <-chan struct{}) error {
		if closeFn != nil {
			defer closeFn()
		}
		return readLines(in, name, out, done)
	}
}

// fileValues is one record per file, its whole content.
func fileValues(names []string) recordSource {
	return func(out chan<- []byte, done <-chan struct{}) error {
		defer close(out)
		for _, name := range names {
			b, err := os.ReadFile(name)
			if err != nil {
				return fmt.Errorf("--value-file: %w", err)
			}
			select {
			case out <- b:
			case <-done:
				return nil
			}
		}
		return nil
	}
}

// run produces every record of source, then waits for the outstanding records.
func (p *lineProducer) run(ctx context.Context, source recordSource) error {
	lines := make(chan []byte, 256)
	readErr := make(chan error, 1)
	done := make(chan struct{})
	defer close(done)
	// The reader stops at the end of its input or, once done is closed, at its next
	// record; a read blocked on a terminal ends with the process.
	go func() { readErr <- source(lines, done) }()
	err := p.produceLines(ctx, lines)
	if err == nil {
		err = <-readErr
	}
	ferr := p.prod.Flush(ctx)
	switch {
	case p.err() != nil: // a record failed: the most specific error
		return p.err()
	case err != nil:
		return err
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
			err = p.prod.Produce(ctx, r, p.promiseFn)
		}
		if err != nil && !errors.Is(err, client.ErrDropped) { // a drop is counted and reported at the end
			return fmt.Errorf("produce to %q: %w", p.topic, overloadError(err, p.flags))
		}
		p.sent.Add(1)
	}
}

// readLines sends each line of in, without its line ending (\n or \r\n), then closes
// out. It gives up when done is closed. name is in's name for errors.
func readLines(in io.Reader, name string, out chan<- []byte, done <-chan struct{}) error {
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
		return fmt.Errorf("reading %s: %w", name, sc.Err())
	}
	return nil
}

// record builds the record for input line n.
func (p *lineProducer) record(line []byte, n int) (*kgo.Record, error) {
	r := &kgo.Record{Topic: p.topic, Key: p.key, Value: line, Headers: p.headers, Partition: p.partition}
	if p.keySep != nil {
		k, v, ok := bytes.Cut(line, p.keySep)
		if !ok {
			return nil, fmt.Errorf("line %d has no key separator %q", n, p.keySep)
		}
		r.Key, r.Value = k, v
	}
	if p.nullEmpty {
		r.Key, r.Value = nilIfEmpty(r.Key), nilIfEmpty(r.Value)
	} else if r.Value == nil {
		r.Value = []byte{} // an empty value, not a null one
	}
	return r, nil
}

func nilIfEmpty(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
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
		p.firstErr = clitext.RecordError(r, err)
	}
}

func (p *lineProducer) err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.firstErr
}

// report prints the dropped-record count (always) and, when verbose, a summary.
func (p *lineProducer) report(w io.Writer, took time.Duration, verbose bool) {
	if d := p.prod.Stats().Dropped; d > 0 {
		fmt.Fprintf(w, "runnel: dropped %d of %s: the producer buffer was full (--on-full drop)\n",
			d, clitext.Plural(p.sent.Load(), "record", "records"))
	}
	if !verbose {
		return
	}
	acked := p.acked.Load()
	rate := float64(acked) / max(took.Seconds(), 1e-9)
	fmt.Fprintf(w, "produced %s (%s) to %q in %v (%.0f records/s)\n",
		clitext.Plural(acked, "record", "records"), clitext.Plural(p.bytes.Load(), "byte", "bytes"), p.topic, took.Round(time.Millisecond), rate)
}
