package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/internal/clitext"
	"github.com/runnel-io/runnel/internal/offsetspec"
)

// commitTimeout bounds the final offset commit of a group consumer, which runs even
// after an interrupt.
const commitTimeout = 10 * time.Second

// consumeFlags are `runnel consume`'s flags.
type consumeFlags struct {
	group         string
	groupProtocol string
	shareGroup    string
	partition     int32
	offset        string
	fromBeginning bool
	count         int
	idleTimeout   time.Duration
	format        string
	isolation     string
	verbose       bool
	regex         bool
}

func newConsumeCommand() *cobra.Command {
	f := &consumeFlags{}
	cmd := &cobra.Command{
		Use:   "consume TOPIC...",
		Short: "Print records from topics, as a group member or from chosen partitions and offsets",
		Long: `Print records from one or more topics. With --regex the arguments are regular
expressions (Go syntax) that a whole topic name must match (internal topics
excluded); with --group, topics created later that match join the subscription.

Without --group, every partition (or only --partition P) is read from --offset:
N, earliest, latest, -N (N records before the end) or @TIMESTAMP (milliseconds
since the epoch, or RFC 3339). The default is latest, or earliest with
--from-beginning. With --group G the topic is consumed as a member of group G,
which commits the offsets of the records printed. --group-protocol consumer joins
with KIP-848's consumer group protocol (the broker assigns, uniform assignor);
classic (the default) with JoinGroup/SyncGroup (cooperative-sticky). With
--share-group G the topics are consumed as a member of share group G (KIP-932:
members share partitions, each record delivered to one member at a time): each
record printed is acknowledged (ACCEPT); records acquired but not printed are
released to the group's other members when the command ends. Where a new share
group starts is the group's share.auto.offset.reset config (latest by default).

--format takes kcat's tokens: %t topic, %p partition, %o offset, %k key, %s value,
%T timestamp (ms), %h headers (k=v,k=v), %K key length, %S value length, %% and
the escapes \n \t \r \\.`,
		Args: minArgs(1),
	}
	conn := addConnFlags(cmd.Flags())
	cmd.RunE = func(cmd *cobra.Command, args []string) error { return runConsume(cmd, conn, f, args) }
	fs := cmd.Flags()
	fs.StringVarP(&f.group, "group", "g", "", "consume as a member of this consumer group, committing offsets")
	fs.StringVar(&f.groupProtocol, "group-protocol", "classic", "with --group: classic or consumer (KIP-848)")
	fs.StringVar(&f.shareGroup, "share-group", "", "consume as a member of this share group (KIP-932), acknowledging each record printed")
	fs.Int32Var(&f.partition, "partition", -1, "read only this partition (default: all)")
	fs.StringVar(&f.offset, "offset", "", "where to start: N, earliest, latest, -N or @TIMESTAMP (default latest)")
	fs.BoolVar(&f.fromBeginning, "from-beginning", false, "start at the earliest offset (with --group: when the group has no commit)")
	fs.IntVarP(&f.count, "count", "n", 0, "exit after this many records (0: no limit)")
	fs.DurationVar(&f.idleTimeout, "idle-timeout", 0, "exit after this long without a record (0: wait for ever)")
	fs.StringVar(&f.format, "format", defaultFormat, "output format per record (kcat tokens)")
	fs.StringVar(&f.isolation, "isolation", "read_uncommitted", "read_uncommitted or read_committed")
	fs.BoolVarP(&f.verbose, "verbose", "v", false, "print the number of records consumed to stderr at the end")
	fs.BoolVar(&f.regex, "regex", false, "the arguments are regular expressions matching whole topic names")
	return cmd
}

// consumePlan is the validated form of the flags.
type consumePlan struct {
	format    *recordFormat
	start     offsetspec.Spec
	isolation kgo.IsolationLevel
}

func (f *consumeFlags) plan() (*consumePlan, error) {
	if f.group != "" && (f.partition >= 0 || f.offset != "") {
		return nil, usageErrorf("--partition and --offset cannot be used with --group")
	}
	if err := f.checkShare(); err != nil {
		return nil, err
	}
	if f.groupProtocol != "classic" && f.groupProtocol != "consumer" {
		return nil, usageErrorf("--group-protocol must be classic or consumer, not %q", f.groupProtocol)
	}
	if f.offset != "" && f.fromBeginning {
		return nil, usageErrorf("--offset and --from-beginning cannot be used together")
	}
	if f.count < 0 || f.idleTimeout < 0 {
		return nil, usageErrorf("-n and --idle-timeout must not be negative")
	}
	p := &consumePlan{start: offsetspec.Spec{Kind: offsetspec.Latest}}
	var err error
	if p.format, err = compileFormat(f.format); err != nil {
		return nil, usageError{err}
	}
	if f.fromBeginning {
		p.start = offsetspec.Spec{Kind: offsetspec.Earliest}
	}
	if f.offset != "" {
		if p.start, err = offsetspec.ParseOffset(f.offset); err != nil {
			return nil, usageError{err}
		}
	}
	switch f.isolation {
	case "read_uncommitted":
		p.isolation = kgo.ReadUncommitted()
	case "read_committed":
		p.isolation = kgo.ReadCommitted()
	default:
		return nil, usageErrorf("bad --isolation %q: want read_uncommitted or read_committed", f.isolation)
	}
	return p, nil
}

func runConsume(cmd *cobra.Command, conn *connFlags, f *consumeFlags, args []string) error {
	plan, err := f.plan()
	if err != nil {
		return err
	}
	var patterns []*regexp.Regexp
	if f.regex {
		for _, a := range args {
			re, err := regexp.Compile("^(?:" + a + ")$")
			if err != nil {
				return usageErrorf("bad topic regex %q: %v", a, err)
			}
			patterns = append(patterns, re)
		}
	}
	opts, topics, err := consumeOpts(cmd.Context(), conn, f, plan, args, patterns, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	topic := quotedList(topics)
	cl, err := conn.client(append(opts, kgo.FetchIsolationLevel(plan.isolation))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	c := &consumer{cl: cl, topic: topic, format: plan.format, limit: f.count,
		idle: f.idleTimeout, group: f.group, shareGroup: f.shareGroup, out: bufio.NewWriterSize(cmd.OutOrStdout(), 64<<10),
		warn: cmd.ErrOrStderr()}
	err = c.run(cmd.Context())
	if f.verbose {
		fmt.Fprintf(cmd.ErrOrStderr(), "consumed %d records from %s\n", c.consumed, topic)
	}
	return err
}

// quotedList renders topic names as "a", "b".
func quotedList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}

// consumeOpts checks the topics (and partition, and an exact offset) against the
// cluster and returns the kgo options that consume them, and the topics (the ones
// the patterns match, with --regex).
func consumeOpts(ctx context.Context, conn *connFlags, f *consumeFlags, plan *consumePlan, args []string, patterns []*regexp.Regexp, warn io.Writer) ([]kgo.Opt, []string, error) {
	adm, err := conn.admin()
	if err != nil {
		return nil, nil, err
	}
	defer adm.Close()
	topics := slices.Compact(slices.Sorted(slices.Values(args)))
	if patterns != nil {
		if topics, err = matchTopics(ctx, adm, args, patterns); err != nil {
			return nil, nil, err
		}
	}
	if f.partition >= 0 && len(topics) > 1 {
		return nil, nil, usageErrorf("--partition needs one topic, not %d (%s)", len(topics), quotedList(topics))
	}
	tds := make([]kadm.TopicDetail, 0, len(topics))
	for _, topic := range topics {
		td, err := topicDetail(ctx, adm, topic)
		if err != nil {
			return nil, nil, err
		}
		tds = append(tds, td)
	}
	if f.shareGroup != "" {
		return shareConsumeOpts(f, topics, patterns), topics, nil
	}
	if f.group != "" {
		note, err := groupStartNote(ctx, adm, f.group, tds, f.fromBeginning)
		if err != nil {
			return nil, nil, err
		}
		fmt.Fprintln(warn, note)
		reset := kgo.NewOffset().AtEnd()
		if f.fromBeginning {
			reset = kgo.NewOffset().AtStart()
		}
		subscribe := kgo.ConsumeTopics(topics...)
		if patterns != nil {
			anchored := make([]string, len(patterns))
			for i, re := range patterns {
				anchored[i] = re.String()
			}
			subscribe = kgo.ConsumeTopics(anchored...)
		}
		opts := []kgo.Opt{kgo.ConsumerGroup(f.group), subscribe, kgo.ConsumeResetOffset(reset), kgo.AutoCommitMarks()}
		if patterns != nil {
			opts = append(opts, kgo.ConsumeRegex())
		}
		if f.groupProtocol == "consumer" {
			// franz-go's opt-in: the first balancer names the server assignor
			// (cooperative-sticky: uniform).
			opts = append(opts, kgo.ServerSideBalancer(), kgo.Balancers(kgo.CooperativeStickyBalancer()))
		}
		return opts, topics, nil
	}
	assign := map[string]map[int32]kgo.Offset{}
	for _, td := range tds {
		parts, err := choosePartitions(td, f.partition)
		if err != nil {
			return nil, nil, err
		}
		if assign[td.Topic], err = startOffsets(ctx, adm, td.Topic, parts, plan.start); err != nil {
			return nil, nil, err
		}
	}
	return []kgo.Opt{kgo.ConsumePartitions(assign), kgo.ConsumeResetOffset(kgo.NoResetOffset())}, topics, nil
}

// groupStartNote says where a group consumer starts, for stderr: a new group starts
// at the end of the log (Kafka's auto.offset.reset=latest) and, without a hint,
// `consume --group NEW -n 1` on a quiet topic would wait for ever with no word;
// --from-beginning starts it at the earliest offset, as kcat -o beginning -G and
// kafka-console-consumer --from-beginning do. A group with commits resumes from them.
// An authorization error is returned (it is the command's, said in full by report);
// any other failure to read the commits only leaves the note vaguer.
func groupStartNote(ctx context.Context, adm *kadm.Client, group string, tds []kadm.TopicDetail, fromBeginning bool) (string, error) {
	committed, err := adm.FetchOffsets(ctx, group)
	if err == nil {
		err = committed.Error()
	}
	var ke *kerr.Error
	if errors.As(err, &ke) && authzResource[ke.Code] != "" {
		return "", fmt.Errorf("committed offsets of group %q: %w", group, err)
	}
	start := "the end of the log (records produced from now on; --from-beginning starts a new group at the earliest offset)"
	if fromBeginning {
		start = "the earliest offset"
	}
	if err != nil {
		return fmt.Sprintf("runnel: group %q: partitions without a committed offset start at %s", group, start), nil
	}
	total, none := 0, 0
	for _, td := range tds {
		for _, p := range td.Partitions.Numbers() {
			total++
			if o, ok := committed.Lookup(td.Topic, p); !ok || o.At < 0 {
				none++
			}
		}
	}
	switch {
	case none == total:
		return fmt.Sprintf("runnel: group %q has no committed offset: it starts at %s", group, start), nil
	case none == 0:
		return fmt.Sprintf("runnel: group %q resumes from its committed offsets", group), nil
	}
	return fmt.Sprintf("runnel: group %q resumes from its committed offsets; %s at %s",
		group, clitext.Plural(none, "partition without one starts", "partitions without one start"), start), nil
}

// matchTopics lists the cluster's topics (not the internal ones) that a pattern
// matches, sorted.
func matchTopics(ctx context.Context, adm *kadm.Client, args []string, patterns []*regexp.Regexp) ([]string, error) {
	tds, err := adm.ListTopics(ctx)
	if err != nil {
		return nil, fmt.Errorf("list topics: %w", err)
	}
	var topics []string
	for _, name := range tds.Names() {
		if slices.ContainsFunc(patterns, func(re *regexp.Regexp) bool { return re.MatchString(name) }) {
			topics = append(topics, name)
		}
	}
	if len(topics) == 0 {
		return nil, fmt.Errorf("no topic matches %s", quotedList(args))
	}
	slices.Sort(topics)
	return topics, nil
}

// choosePartitions is the one partition asked for, or all of them.
func choosePartitions(td kadm.TopicDetail, partition int32) ([]int32, error) {
	if partition < 0 {
		return td.Partitions.Numbers(), nil
	}
	if _, ok := td.Partitions[partition]; !ok {
		return nil, fmt.Errorf("topic %q has no partition %d (it has %d)", td.Topic, partition, len(td.Partitions))
	}
	return []int32{partition}, nil
}

// startOffsets resolves the start position of each partition. Exact offsets are
// checked against the log, and -N is clamped to the log start.
func startOffsets(ctx context.Context, adm *kadm.Client, topic string, parts []int32, spec offsetspec.Spec) (map[int32]kgo.Offset, error) {
	offsets := make(map[int32]kgo.Offset, len(parts))
	if spec.Kind != offsetspec.Exact && spec.Kind != offsetspec.FromEnd {
		for _, p := range parts {
			offsets[p] = kgoOffset(spec)
		}
		return offsets, nil
	}
	bounds, err := logBounds(ctx, adm, topic)
	if err != nil {
		return nil, err
	}
	for _, p := range parts {
		b, ok := bounds[p]
		if !ok {
			return nil, fmt.Errorf("topic %q partition %d: no log offsets listed", topic, p)
		}
		at, err := b.resolve(spec)
		if err != nil {
			return nil, fmt.Errorf("topic %q partition %d: %w", topic, p, err)
		}
		offsets[p] = kgo.NewOffset().At(at)
	}
	return offsets, nil
}

// logBound is a partition's log start and end offsets.
type logBound struct{ start, end int64 }

// resolve turns an exact or -N spec into an offset within the log.
func (b logBound) resolve(spec offsetspec.Spec) (int64, error) {
	if spec.Kind == offsetspec.FromEnd {
		return max(b.end-spec.N, b.start), nil
	}
	if spec.N < b.start || spec.N > b.end {
		return 0, fmt.Errorf("offset %d is out of range (log start %d, log end %d)", spec.N, b.start, b.end)
	}
	return spec.N, nil
}

func logBounds(ctx context.Context, adm *kadm.Client, topic string) (map[int32]logBound, error) {
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("log start offsets of topic %q: %w", topic, err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("log end offsets of topic %q: %w", topic, err)
	}
	bounds := map[int32]logBound{}
	starts.Each(func(o kadm.ListedOffset) { bounds[o.Partition] = logBound{start: o.Offset} })
	ends.Each(func(o kadm.ListedOffset) {
		b := bounds[o.Partition]
		b.end = o.Offset
		bounds[o.Partition] = b
	})
	return bounds, nil
}

// consumer polls records and prints them.
type consumer struct {
	cl     *kgo.Client
	topic  string
	format *recordFormat
	limit  int           // stop after this many records; 0: no limit
	idle   time.Duration // stop after this long without records; 0: never
	group  string        // the group whose offsets to commit; empty without --group
	// shareGroup is the share group whose records to acknowledge; empty without
	// --share-group.
	shareGroup string
	out        *bufio.Writer
	warn       io.Writer // stderr, for problems that do not stop consuming
	buf        []byte    // reused for each rendered record
	consumed   int       // records printed; only grows
}

// run prints records until the limit, the idle timeout, an interrupt (all exit 0) or
// a fetch error.
func (c *consumer) run(ctx context.Context) (err error) {
	defer func() {
		if cerr := c.commit(); err == nil {
			err = cerr
		}
	}()
	for c.limit == 0 || c.consumed < c.limit {
		fetches, idle := c.poll(ctx)
		if err := c.fetchError(fetches); err != nil {
			return err
		}
		if err := c.print(fetches); err != nil {
			return err
		}
		if idle || ctx.Err() != nil {
			return nil
		}
	}
	return nil
}

// poll waits for records, for at most the idle timeout; idle reports that it passed.
func (c *consumer) poll(ctx context.Context) (kgo.Fetches, bool) {
	pctx := ctx
	if c.idle > 0 {
		var cancel context.CancelFunc
		pctx, cancel = context.WithTimeout(ctx, c.idle)
		defer cancel()
	}
	max := -1
	if c.limit > 0 {
		max = c.limit - c.consumed
	}
	fetches := c.cl.PollRecords(pctx, max)
	return fetches, fetches.NumRecords() == 0 && pctx.Err() != nil && ctx.Err() == nil
}

// fetchError returns the first fetch error that ends consuming, naming its topic and
// partition. Cancellation is not one: it is how polling stops.
func (c *consumer) fetchError(fetches kgo.Fetches) error {
	for _, fe := range fetches.Errors() {
		switch {
		case errors.Is(fe.Err, context.Canceled), errors.Is(fe.Err, context.DeadlineExceeded),
			errors.Is(fe.Err, kgo.ErrClientClosed):
			continue
		case errors.As(fe.Err, new(*kgo.ErrDataLoss)):
			// kgo has already reset the partition; the records are gone either way.
			fmt.Fprintf(c.warn, "runnel: warning: topic %q partition %d: %v\n", fe.Topic, fe.Partition, fe.Err)
			continue
		}
		if fe.Topic == "" {
			// Not a partition's error: the group's (kgo reports a group session's
			// failure as a fetch of no topic).
			return fmt.Errorf("consume as a member of group %q: %w", c.group, fe.Err)
		}
		return fmt.Errorf("consume topic %q partition %d: %w", fe.Topic, fe.Partition, fe.Err)
	}
	return nil
}

func (c *consumer) print(fetches kgo.Fetches) error {
	var err error
	fetches.EachRecord(func(r *kgo.Record) {
		if err != nil {
			return
		}
		c.buf = c.format.AppendRecord(c.buf[:0], r)
		if _, err = c.out.Write(c.buf); err == nil {
			c.consumed++
			if c.group != "" {
				c.cl.MarkCommitRecords(r)
			}
			if c.shareGroup != "" {
				r.Ack(kgo.AckAccept)
			}
		}
	})
	if err == nil {
		err = c.out.Flush()
	}
	if err != nil {
		return fmt.Errorf("writing output: %w", err)
	}
	return nil
}

// commit commits the offsets of the printed records of a group consumer, even after
// an interrupt.
func (c *consumer) commit() error {
	if c.shareGroup != "" {
		return c.flushAcks()
	}
	if c.group == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
	defer cancel()
	if err := c.cl.CommitMarkedOffsets(ctx); err != nil {
		return fmt.Errorf("commit offsets of group %q: %w", c.group, err)
	}
	return nil
}
