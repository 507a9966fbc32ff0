package cli

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/runnel-io/runnel/internal/bench"
	"github.com/runnel-io/runnel/internal/benchfmt"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// newBenchCommand is the `runnel bench` group: produce, consume and e2e load. The
// generator is package bench; these commands turn the flags into its Config and
// create (or find) the topic.
func newBenchCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Load generator: records/s, MB/s, latency percentiles",
		Long: `Load generator: records/s, MB/s and latency percentiles, with a delivery check.

Every record's value starts with a 20-byte header (producer, sequence number,
produce time). bench consume reads a topic bench produce filled and fails, exit
status 1, if any record is missing: a hole in a producer's sequence, fewer than
--records records, or a partition serving fewer records than its offsets span.
bench e2e produces at --rate for --duration while consuming, reports the time from
produce to consume, and fails the same way if an acknowledged record never came back.

A line of progress goes to stderr every second; --json prints the result as one
JSON object on stdout.`,
		Args: noArgs,
		RunE: groupRunE,
	}
	cmd.AddCommand(newBenchProduceCommand(), newBenchConsumeCommand(), newBenchE2ECommand())
	return cmd
}

// benchFlags are the flags of the bench subcommands; each subcommand registers the
// ones it uses.
type benchFlags struct {
	topic         string
	records       int64
	recordSize    int
	partitions    int32
	replication   int16
	producers     int
	acks          string
	idempotence   bool
	compression   string
	linger        time.Duration
	batchMaxBytes int32
	overload      produceFlags // only the overload fields: bufferRecords, bufferBytes, onFull, enqueueTimeout, rate
	duration      time.Duration
	timeout       time.Duration
	json          bool
	breakdown     bench.Breakdown
}

// addTopicFlags registers the flags that name and create the topic.
func (f *benchFlags) addTopicFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.topic, "topic", "", "topic to use, created if missing (default bench-<random>)")
	fs.Int32VarP(&f.partitions, "partitions", "p", 3, "partitions of the topic when it is created")
	fs.Int16VarP(&f.replication, "replication-factor", "r", -1, "replication factor of the topic when it is created (-1: the broker's default)")
	fs.DurationVar(&f.timeout, "timeout", time.Minute, "fail when no record is acknowledged or consumed for this long")
	fs.BoolVar(&f.json, "json", false, "print the result as one JSON object")
}

// addProducerFlags registers the producer flags, with the overload options of
// `runnel produce`. linger is the --linger default: 5 ms (Kafka's producer default) for
// throughput, 0 for e2e, where a batch waiting for company is latency the broker
// did not cause (and NATS, measured beside it, has no linger).
func (f *benchFlags) addProducerFlags(fs *pflag.FlagSet, linger time.Duration) {
	fs.IntVar(&f.recordSize, "record-size", 100, "bytes in each record value (at least 20, the bench header)")
	fs.IntVar(&f.producers, "producers", 1, "concurrent producer clients")
	fs.StringVar(&f.acks, "acks", "all", "acknowledgements: 0, 1 or all")
	fs.BoolVar(&f.idempotence, "idempotence", true, "idempotent writes (only with --acks all)")
	fs.StringVar(&f.compression, "compression", "none", "none, gzip, snappy, lz4 or zstd")
	fs.DurationVar(&f.linger, "linger", linger, "how long a batch waits for more records")
	fs.Int32Var(&f.batchMaxBytes, "batch-max-bytes", 1000000, "largest record batch the client builds")
	o := &f.overload
	fs.IntVar(&o.bufferRecords, "buffer-records", 100000, "most records buffered in each client")
	fs.IntVar(&o.bufferBytes, "buffer-bytes", 0, "most bytes buffered in each client (0: no limit)")
	fs.StringVar(&o.onFull, "on-full", "block", "when the buffer is full: block, drop or error")
	fs.StringVar(&o.enqueueTimeout, "enqueue-timeout", "", "how long to wait for buffer room; -1 for ever (default: -1 with block, 0 otherwise)")
	fs.BoolVar(&f.breakdown.On, "breakdown", false, "also report where the nodes spent the produce requests' time, by stage, from their /metrics")
	fs.StringSliceVar(&f.breakdown.MetricsURLs, "metrics-url", []string{"http://localhost:9644/metrics"},
		"the /metrics of every node the topic lives on, for --breakdown (comma-separated; empty: only the clients' stages)")
}

func newBenchProduceCommand() *cobra.Command {
	f := &benchFlags{}
	cmd := &cobra.Command{
		Use:   "produce",
		Short: "Produce --records records as fast as allowed; report throughput and produce latency",
		Args:  noArgs,
	}
	conn := addConnFlagsAs(cmd.Flags(), benchClientID, true)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return runBenchProduce(cmd, conn, f)
	}
	f.addTopicFlags(cmd.Flags())
	f.addProducerFlags(cmd.Flags(), 5*time.Millisecond)
	cmd.Flags().Int64VarP(&f.records, "records", "n", 1000000, "records to produce")
	cmd.Flags().Float64Var(&f.overload.rate, "rate", 0, "most records per second, over all producers (0: no limit)")
	return cmd
}

func newBenchConsumeCommand() *cobra.Command {
	f := &benchFlags{}
	cmd := &cobra.Command{
		Use:   "consume",
		Short: "Consume a topic bench produce filled, check every record arrived; report throughput",
		Args:  noArgs,
	}
	conn := addConnFlagsAs(cmd.Flags(), benchClientID, true)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return runBenchConsume(cmd, conn, f)
	}
	f.addTopicFlags(cmd.Flags())
	cmd.Flags().Int64VarP(&f.records, "records", "n", 0, "records that must be there (0: whatever the topic holds, checked for holes only)")
	return cmd
}

func newBenchE2ECommand() *cobra.Command {
	f := &benchFlags{}
	cmd := &cobra.Command{
		Use:   "e2e",
		Short: "Produce at --rate for --duration while consuming; report end-to-end latency",
		Args:  noArgs,
	}
	conn := addConnFlagsAs(cmd.Flags(), benchClientID, true)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return runBenchE2E(cmd, conn, f)
	}
	f.addTopicFlags(cmd.Flags())
	f.addProducerFlags(cmd.Flags(), 0)
	cmd.Flags().Float64Var(&f.overload.rate, "rate", 10000, "records per second, over all producers (0: no limit)")
	cmd.Flags().DurationVar(&f.duration, "duration", 20*time.Second, "how long to produce")
	return cmd
}

// config checks the flags common to every subcommand and, when producing, those of
// producers, so that bad usage fails before anything connects, and turns them into
// the generator's Config; the run adds the connection, the topic and the streams.
func (f *benchFlags) config(producing bool) (bench.Config, error) {
	switch {
	case f.records < 0:
		return bench.Config{}, usageErrorf("--records must be at least 0")
	case f.partitions < 1:
		return bench.Config{}, usageErrorf("--partitions must be at least 1")
	case f.timeout <= 0:
		return bench.Config{}, usageErrorf("--timeout must be positive")
	}
	cfg := bench.Config{Records: f.records, RecordSize: f.recordSize, Producers: f.producers,
		NoAcks: f.acks == "0", Rate: f.overload.rate, BufferRecords: f.overload.bufferRecords,
		BufferBytes: f.overload.bufferBytes, Duration: f.duration, Timeout: f.timeout,
		Breakdown: f.breakdown, JSON: f.json}
	if !producing {
		return cfg, nil
	}
	switch {
	case f.recordSize < benchfmt.HeaderSize:
		return bench.Config{}, usageErrorf("--record-size must be at least %d (the bench header)", benchfmt.HeaderSize)
	case f.producers < 1 || f.producers > benchfmt.MaxProducers:
		return bench.Config{}, usageErrorf("--producers must be between 1 and %d", benchfmt.MaxProducers)
	case f.batchMaxBytes < int32(f.recordSize)+100:
		return bench.Config{}, usageErrorf("--batch-max-bytes %d cannot hold one record of --record-size %d", f.batchMaxBytes, f.recordSize)
	}
	var err error
	if cfg.Producer, err = f.producerOpts(); err != nil {
		return bench.Config{}, err
	}
	if cfg.Overload, err = f.overload.overloadOptions(cfg.ProducerRate()); err != nil {
		return bench.Config{}, err
	}
	return cfg, nil
}

// producerOpts turns the producer flags into kgo options.
func (f *benchFlags) producerOpts() ([]kgo.Opt, error) {
	opts := []kgo.Opt{kgo.ProducerLinger(f.linger),
		kgo.ProducerBatchMaxBytes(f.batchMaxBytes), kgo.RecordDeliveryTimeout(f.timeout)}
	if idempotent := (f.acks == "all" || f.acks == "-1") && f.idempotence; !idempotent {
		// As many requests in flight as an idempotent producer has, for a fair comparison.
		opts = append(opts, kgo.MaxProduceRequestsInflightPerBroker(5))
	}
	acks, err := ackOpts(f.acks, f.idempotence)
	if err != nil {
		return nil, err
	}
	codec, err := compressionCodec(f.compression)
	if err != nil {
		return nil, err
	}
	return append(append(opts, acks...), kgo.ProducerBatchCompression(codec)), nil
}

func runBenchProduce(cmd *cobra.Command, conn *connFlags, f *benchFlags) error {
	cfg, err := f.config(true)
	if err != nil {
		return err
	}
	if cfg.Topic, cfg.Partitions, err = prepareTopic(cmd.Context(), conn, f); err != nil {
		return err
	}
	return runBench(cmd, conn, f, bench.Produce, cfg)
}

func runBenchConsume(cmd *cobra.Command, conn *connFlags, f *benchFlags) error {
	if f.topic == "" {
		return usageErrorf("bench consume needs --topic: the topic bench produce filled")
	}
	cfg, err := f.config(false)
	if err != nil {
		return err
	}
	adm, err := conn.admin()
	if err != nil {
		return err
	}
	td, err := topicDetail(cmd.Context(), adm, f.topic)
	adm.Close()
	if err != nil {
		return err
	}
	cfg.Topic, cfg.Partitions = f.topic, len(td.Partitions)
	return runBench(cmd, conn, f, bench.Consume, cfg)
}

func runBenchE2E(cmd *cobra.Command, conn *connFlags, f *benchFlags) error {
	cfg, err := f.config(true)
	if err != nil {
		return err
	}
	if f.duration <= 0 {
		return usageErrorf("--duration must be positive")
	}
	if cfg.Topic, cfg.Partitions, err = prepareTopic(cmd.Context(), conn, f); err != nil {
		return err
	}
	return runBench(cmd, conn, f, bench.E2E, cfg)
}

// runBench runs the generator with the connection flags' client options, the report on
// stdout and the progress on stderr. A producer's buffer-full failure names the flag
// behind it.
func runBench(cmd *cobra.Command, conn *connFlags, f *benchFlags, run func(context.Context, bench.Config) error, cfg bench.Config) error {
	base, err := conn.baseOpts()
	if err != nil {
		return err
	}
	cfg.Client, cfg.Out, cfg.Log = base, cmd.OutOrStdout(), cmd.ErrOrStderr()
	return overloadError(run(cmd.Context(), cfg), &f.overload)
}

// benchClientID is runnel bench's client id without --client-id.
const benchClientID = "runnel-bench"

// randomTopic is the default --topic: a fresh name per run.
func randomTopic() string {
	return fmt.Sprintf("bench-%08x", rand.Uint32())
}

// ensureTopic creates the topic unless it exists and returns its number of
// partitions. It does not wait for the topic to spread: a node acknowledges
// CreateTopics only once every live node serves the new topic, so the producers'
// first metadata request finds its leaders wherever it lands.
func ensureTopic(ctx context.Context, cl *kgo.Client, topic string, partitions int32, rf int16) (int, error) {
	adm := kadm.NewClient(cl)
	resp, err := adm.CreateTopic(ctx, partitions, rf, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return 0, fmt.Errorf("create topic %q: %w", topic, withMessage(err, resp.ErrMessage))
	}
	tds, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return 0, fmt.Errorf("describe topic %q: %w", topic, err)
	}
	td, ok := tds[topic]
	if !ok || td.Err != nil || len(td.Partitions) == 0 || !allLed(td) {
		return 0, fmt.Errorf("topic %q was created but %s", topic, describeUnled(td, ok))
	}
	return len(td.Partitions), nil
}

// describeUnled says what is wrong with a topic that ensureTopic cannot use.
func describeUnled(td kadm.TopicDetail, ok bool) string {
	switch {
	case !ok:
		return "metadata does not list it"
	case td.Err != nil:
		return fmt.Sprintf("its metadata answers %v", td.Err)
	case len(td.Partitions) == 0:
		return "metadata shows no partitions"
	}
	return "some partitions have no leader (are their replicas' nodes up?)"
}

func allLed(td kadm.TopicDetail) bool {
	for _, p := range td.Partitions {
		if p.Leader < 0 || p.Err != nil {
			return false
		}
	}
	return true
}

// prepareTopic picks the topic (--topic or a random name) and creates it if missing.
func prepareTopic(ctx context.Context, conn *connFlags, f *benchFlags) (string, int, error) {
	topic := f.topic
	if topic == "" {
		topic = randomTopic()
	}
	cl, err := conn.client()
	if err != nil {
		return "", 0, err
	}
	defer cl.Close()
	parts, err := ensureTopic(ctx, cl, topic, f.partitions, f.replication)
	return topic, parts, err
}
