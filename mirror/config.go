package mirror

import (
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"github.com/runnel-io/runnel/client"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Delivery is the mirror's guarantee into the target.
type Delivery uint8

const (
	// ExactlyOnce writes each interval's records and the mirror's progress in one
	// transaction on the target (the default). The target must support transactions.
	ExactlyOnce Delivery = iota
	// AtLeastOnce writes records, then progress, without transactions, for targets
	// that cannot do transactions. After a crash the records written since the last
	// progress are written again; the mirror counts them (Status.MaybeDuplicated).
	AtLeastOnce
)

// ParseDelivery reads "exactly-once" or "at-least-once".
func ParseDelivery(s string) (Delivery, error) {
	switch s {
	case "exactly-once", "":
		return ExactlyOnce, nil
	case "at-least-once":
		return AtLeastOnce, nil
	}
	return 0, fmt.Errorf("bad delivery %q: want exactly-once or at-least-once", s)
}

func (d Delivery) String() string {
	if d == AtLeastOnce {
		return "at-least-once"
	}
	return "exactly-once"
}

// OnDataLoss is what a partition does when the source lost records it had not
// mirrored yet (the topic was re-created, or retention passed the mirror's position).
type OnDataLoss uint8

const (
	// OnDataLossStop stops the partition with an error naming the lost offsets (the
	// default). Restart the mirror with OnDataLossSkip to go on.
	OnDataLossStop OnDataLoss = iota
	// OnDataLossSkip goes on after the lost offsets and counts them (Status.Skipped).
	OnDataLossSkip
)

// ParseOnDataLoss reads "stop" or "skip".
func ParseOnDataLoss(s string) (OnDataLoss, error) {
	switch s {
	case "stop", "":
		return OnDataLossStop, nil
	case "skip":
		return OnDataLossSkip, nil
	}
	return 0, fmt.Errorf("bad on-data-loss %q: want stop or skip", s)
}

// Naming is the ReplicationPolicy: how a source topic is named on the target.
type Naming uint8

const (
	// Prefix names the target topic ALIAS.TOPIC (the default; MirrorMaker 2's
	// DefaultReplicationPolicy).
	Prefix Naming = iota
	// Identity keeps the source name (MirrorMaker 2's IdentityReplicationPolicy).
	// Loops are still impossible: they are stopped by the provenance header.
	Identity
)

func (n Naming) String() string {
	if n == Identity {
		return "identity"
	}
	return "prefix"
}

// ParseNaming reads "prefix" or "identity".
func ParseNaming(s string) (Naming, error) {
	switch s {
	case "prefix", "":
		return Prefix, nil
	case "identity":
		return Identity, nil
	}
	return 0, fmt.Errorf("bad naming %q: want prefix or identity", s)
}

// Config configures a Mirror. Source, Target and Name are required; every other
// field states its default.
type Config struct {
	// Name names the mirror: its progress topic (__runnel_mirror.NAME on the target),
	// its membership group on the source, its transactional ids. Processes with the
	// same Name share the partitions.
	Name string
	// Source and Target are the clusters' bootstrap addresses (HOST:PORT).
	Source, Target []string
	// SourceOptions and TargetOptions are extra kgo options for each side (TLS,
	// SASL, client id). Default none.
	SourceOptions, TargetOptions []kgo.Opt
	// Topics are the source topics to mirror: names or regular expressions, each
	// matched against the whole name. Default: every topic (".*"). Topics starting
	// with "__" are never mirrored.
	Topics []string
	// Exclude are regular expressions (whole name) of topics not to mirror. Default none.
	Exclude []string
	// Groups are regular expressions (whole name) of consumer groups whose offsets
	// are synced to the target. Default none: no group sync.
	Groups []string
	// GroupSyncInterval is how often group offsets are synced. Default 5 s.
	GroupSyncInterval time.Duration
	// Naming and SourceAlias name target topics: ALIAS.TOPIC under Prefix; the alias
	// defaults to the source's cluster id.
	Naming      Naming
	SourceAlias string
	// Delivery is ExactlyOnce (default) or AtLeastOnce.
	Delivery Delivery
	// OnDataLoss is OnDataLossStop (default) or OnDataLossSkip.
	OnDataLoss OnDataLoss
	// Producer are the overload options (client.WithMaxBufferedRecords, ...) of each
	// partition's producer. The buffer bounds the records in flight: under Block (the
	// one runnel mirror accepts) a worker waits for room, and a Block wait that ends
	// with ErrBufferFull (WithEnqueueTimeout) waits for what it already sent (Flush)
	// and produces again; under Error it does the same at once. Nothing is ever
	// lost: under Drop a dropped record (ErrDropped) aborts the transaction, which is
	// retried from the target's committed position, over and over while the buffer
	// stays full, so Drop only costs; the runnel mirror command refuses drop and
	// error. WithRate applies per source partition. Default: the client package's
	// defaults (10,000 records, Block, no rate).
	Producer []client.Option
	// TopicRefresh is how often the source's topic list, partition counts and configs
	// are compared with the target. Default 3 s.
	TopicRefresh time.Duration
	// Heartbeat is how often an idle partition commits its state, so that lag in
	// seconds stays true on the target when no data flows. Default 1 s.
	Heartbeat time.Duration
	// SessionTimeout is the membership group's session: how long a dead process
	// keeps its partitions. Default 6 s (Kafka's group.min.session.timeout.ms).
	SessionTimeout time.Duration
	// TransactionTimeout is each partition producer's transaction.timeout.ms: how
	// long the target keeps a transaction open whose producer went silent (a killed or
	// paused process) before aborting it. Until then read_committed consumers of the
	// target partition wait at it. A new owner does not wait for it: it fences the old
	// owner, which aborts the open transaction at once. Default 10 s; the target's
	// transaction.max.timeout.ms must allow it.
	TransactionTimeout time.Duration
	// Logger receives the mirror's events. Default: slog.Default().
	Logger *slog.Logger
}

// ProgressTopic is the name of mirror name's progress topic on the target.
func ProgressTopic(name string) string { return "__runnel_mirror." + name }

// membershipGroup is the source group that shares the partitions among processes.
func membershipGroup(name string) string { return "__runnel_mirror." + name }

// transactionalID is the id of the producer that owns one source partition: a new
// owner's InitProducerID with it fences the previous owner.
func transactionalID(name, topic string, partition int32) string {
	return fmt.Sprintf("runnel-mirror.%s.%s.%d", name, topic, partition)
}

// PathHeader is the header that carries a mirrored record's provenance.
const PathHeader = "runnel.mirror.path"

func (c *Config) setDefaults() {
	if len(c.Topics) == 0 {
		c.Topics = []string{".*"}
	}
	if c.GroupSyncInterval <= 0 {
		c.GroupSyncInterval = 5 * time.Second
	}
	if c.TopicRefresh <= 0 {
		c.TopicRefresh = 3 * time.Second
	}
	if c.Heartbeat <= 0 {
		c.Heartbeat = time.Second
	}
	if c.SessionTimeout <= 0 {
		c.SessionTimeout = 6 * time.Second
	}
	if c.TransactionTimeout <= 0 {
		c.TransactionTimeout = 10 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

func (c *Config) validate() error {
	switch {
	case c.Name == "":
		return errors.New("mirror: Name is required")
	case strings.ContainsAny(c.Name, "/ "):
		return fmt.Errorf("mirror: bad Name %q: no '/' or space", c.Name)
	case len(c.Source) == 0:
		return errors.New("mirror: Source is required")
	case len(c.Target) == 0:
		return errors.New("mirror: Target is required")
	}
	return nil
}

// filter matches names against anchored include and exclude expressions.
type filter struct {
	include, exclude []*regexp.Regexp
}

func newFilter(what string, include, exclude []string) (*filter, error) {
	f := &filter{}
	for _, lists := range []struct {
		in  []string
		out *[]*regexp.Regexp
	}{{include, &f.include}, {exclude, &f.exclude}} {
		for _, s := range lists.in {
			re, err := regexp.Compile("^(?:" + s + ")$")
			if err != nil {
				return nil, fmt.Errorf("mirror: bad %s expression %q: %w", what, s, err)
			}
			*lists.out = append(*lists.out, re)
		}
	}
	return f, nil
}

// match reports whether name is included and not excluded; "__" names never are.
func (f *filter) match(name string) bool {
	if strings.HasPrefix(name, "__") {
		return false
	}
	for _, re := range f.exclude {
		if re.MatchString(name) {
			return false
		}
	}
	for _, re := range f.include {
		if re.MatchString(name) {
			return true
		}
	}
	return false
}
