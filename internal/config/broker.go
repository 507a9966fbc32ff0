package config

import (
	"fmt"
	"maps"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// Broker is one node's configuration. The typed fields are derived from Raw: change them
// through Set (or Load), which validates and re-derives; a field written directly is
// overwritten by the next Set. Each field's comment gives its property and its default.
type Broker struct {
	NodeID  int32  `config:"node.id"` // node.id (1)
	DataDir string // log.dirs, else log.dir (./runnel-data)
	// Listeners are the Kafka listeners, in the order of listeners (or listen alone, as
	// one PLAINTEXT listener); never empty. See listeners.go.
	Listeners []Listener
	// InterBrokerListener names the listener of Listeners other nodes are reached on
	// (inter.broker.listener.name; default PLAINTEXT). See InterBroker.
	InterBrokerListener string
	Listen              string // the first listener's bind address (listen: localhost:9092)
	Advertise           string // the first listener's advertised address; defaults to Listen
	ControllerListen    string // controller.listen, or the controller entry of listeners (localhost:9093)
	HTTPListen          string `config:"http.listen"`       // http.listen (localhost:9644)
	HTTPPprof           bool   `config:"http.pprof.enable"` // false
	// HTTPTLSCertificate and HTTPTLSKey make the HTTP listener speak HTTPS.
	HTTPTLSCertificate string `config:"http.tls.certificate.location"` // none
	HTTPTLSKey         string `config:"http.tls.key.location"`         // none (the certificate's file)
	// Controllers are the quorum's voters (controllers or controller.quorum.voters).
	// Empty means "this node alone at ControllerListen"; see QuorumVoters.
	Controllers []Voter

	BrokerRack                      string `config:"broker.rack"`                             // broker.rack (none)
	NumPartitions                   int32  `config:"num.partitions"`                          // 1
	DefaultReplicationFactor        int16  `config:"default.replication.factor"`              // 1
	MinInsyncReplicas               int32  `config:"min.insync.replicas"`                     // 1
	AutoCreateTopics                bool   `config:"auto.create.topics.enable"`               // true
	DeleteTopicEnable               bool   `config:"delete.topic.enable"`                     // true
	UncleanLeaderElection           bool   `config:"unclean.leader.election.enable"`          // false
	AutoLeaderRebalance             bool   `config:"auto.leader.rebalance.enable"`            // true
	LeaderImbalanceCheckIntervalSec int64  `config:"leader.imbalance.check.interval.seconds"` // 300
	LeaderImbalancePerBrokerPercent int32  `config:"leader.imbalance.per.broker.percentage"`  // 10
	PartitionAutobalancingMode      string `config:"partition.autobalancing.mode"`            // node_add
	MessageMaxBytes                 int32  `config:"message.max.bytes"`                       // 1048588
	QueuedMaxRequests               int    `config:"queued.max.requests"`                     // 500
	QueuedMaxRequestBytes           int64  `config:"queued.max.request.bytes"`                // 256 MiB (Kafka: -1)
	SocketRequestMaxBytes           int32  `config:"socket.request.max.bytes"`                // 104857600
	FetchMaxBytes                   int32  `config:"fetch.max.bytes"`                         // 57671680
	ConnectionsMaxIdleMs            int64  `config:"connections.max.idle.ms"`                 // 600000
	QuotaWindowNum                  int32  `config:"quota.window.num"`                        // 11
	QuotaWindowSizeSeconds          int32  `config:"quota.window.size.seconds"`               // 1

	// Authentication and authorization. sasl.enabled.mechanisms and the ssl.*
	// properties are each listener's (Listener.SaslMechanisms, Keystore, ...).
	SaslBootstrapUsers               string `config:"sasl.bootstrap.users"`                 // none
	SaslMechanismInterBrokerProtocol string `config:"sasl.mechanism.inter.broker.protocol"` // SCRAM-SHA-512
	InterBrokerSaslUsername          string `config:"inter.broker.sasl.username"`           // none
	InterBrokerSaslPassword          string `config:"inter.broker.sasl.password"`           // none
	AuthorizerClassName              string `config:"authorizer.class.name"`                // "" (ACLs off)
	SuperUsers                       string `config:"super.users"`                          // none
	AllowEveryoneIfNoACLFound        bool   `config:"allow.everyone.if.no.acl.found"`       // false

	// The balancer's own settings (Runnel's, named after Redpanda's partition_autobalancing_*).
	PartitionAutobalancingThrottledRate      int64 `config:"partition.autobalancing.throttled.rate"`                // 104857600 (100 MiB/s)
	PartitionAutobalancingNodeTimeoutSec     int64 `config:"partition.autobalancing.node.availability.timeout.sec"` // 900
	PartitionAutobalancingMaxDiskUsedPercent int32 `config:"partition.autobalancing.max.disk.usage.percent"`        // 80
	PartitionAutobalancingTickIntervalMs     int64 `config:"partition.autobalancing.tick.interval.ms"`              // 10000

	ReplicaLagTimeMaxMs          int64 `config:"replica.lag.time.max.ms"`          // 30000
	ReplicaFetchMaxBytes         int32 `config:"replica.fetch.max.bytes"`          // 1048576
	ReplicaFetchResponseMaxBytes int32 `config:"replica.fetch.response.max.bytes"` // 10485760
	ReplicaFetchWaitMaxMs        int32 `config:"replica.fetch.wait.max.ms"`        // 500
	ReplicaFetchMinBytes         int32 `config:"replica.fetch.min.bytes"`          // 1
	ReplicaFetchBackoffMs        int32 `config:"replica.fetch.backoff.ms"`         // 100 (Kafka: 1000)
	// ReplicaSelectorClass is replica.selector.class (none: LeaderReplicaSelector's
	// behaviour, consumers read from the leader); RackAwareReplicaSelector or
	// LeaderReplicaSelector when set (checkReplicaSelector refuses any other).
	ReplicaSelectorClass string `config:"replica.selector.class"`
	// The replication throttles (KIP-73; also dynamic, see ValidateDynamicBrokerConfig).
	LeaderReplicationThrottledRate   int64 `config:"leader.replication.throttled.rate"`     // Long.MAX: none
	FollowerReplicationThrottledRate int64 `config:"follower.replication.throttled.rate"`   // Long.MAX: none
	ReplicationQuotaWindowSizeSec    int32 `config:"replication.quota.window.size.seconds"` // 1
	BrokerSessionTimeoutMs           int32 `config:"broker.session.timeout.ms"`             // 2000 (Kafka: 9000)
	BrokerHeartbeatIntervalMs        int32 `config:"broker.heartbeat.interval.ms"`          // 500 (Kafka: 2000)

	GroupInitialRebalanceDelayMs int32 `config:"group.initial.rebalance.delay.ms"` // 3000
	GroupMinSessionTimeoutMs     int32 `config:"group.min.session.timeout.ms"`     // 6000
	GroupMaxSessionTimeoutMs     int32 `config:"group.max.session.timeout.ms"`     // 1800000
	GroupMaxSize                 int32 `config:"group.max.size"`                   // Int.MAX
	// KIP-848 consumer groups.
	GroupConsumerSessionTimeoutMs    int32  `config:"group.consumer.session.timeout.ms"`    // 45000
	GroupConsumerHeartbeatIntervalMs int32  `config:"group.consumer.heartbeat.interval.ms"` // 5000
	GroupConsumerAssignors           string `config:"group.consumer.assignors"`             // uniform,range
	GroupConsumerMaxSize             int32  `config:"group.consumer.max.size"`              // Int.MAX
	GroupConsumerMigrationPolicy     string `config:"group.consumer.migration.policy"`      // bidirectional
	// KIP-932 share groups.
	GroupShareSessionTimeoutMs        int32 `config:"group.share.session.timeout.ms"`         // 45000
	GroupShareHeartbeatIntervalMs     int32 `config:"group.share.heartbeat.interval.ms"`      // 5000
	GroupShareRecordLockDurationMs    int32 `config:"group.share.record.lock.duration.ms"`    // 30000
	GroupShareDeliveryCountLimit      int32 `config:"group.share.delivery.count.limit"`       // 5
	GroupSharePartitionMaxRecordLocks int32 `config:"group.share.partition.max.record.locks"` // 2000
	GroupShareMaxSize                 int32 `config:"group.share.max.size"`                   // 200
	OffsetsTopicNumPartitions         int32 `config:"offsets.topic.num.partitions"`           // 50
	OffsetsTopicReplicationFactor     int16 `config:"offsets.topic.replication.factor"`       // 3, capped by live nodes at creation
	OffsetsTopicSegmentBytes          int32 `config:"offsets.topic.segment.bytes"`            // 104857600
	OffsetsRetentionMinutes           int32 `config:"offsets.retention.minutes"`              // 10080
	TransactionTimeoutMaxMs           int32 `config:"transaction.max.timeout.ms"`             // 900000
	// TransactionAbortIntervalMs is how often timed-out transactions are aborted.
	TransactionAbortIntervalMs int32 `config:"transaction.abort.timed.out.transaction.cleanup.interval.ms"` // 10000

	LogRetentionCheckIntervalMs int64 `config:"log.retention.check.interval.ms"` // 300000
	// LogFlushSchedulerIntervalMs is how often the flusher looks for logs past flush.ms.
	// 1000 here; Kafka's Long.MAX would never run it.
	LogFlushSchedulerIntervalMs        int64   `config:"log.flush.scheduler.interval.ms"`
	LogFlushOffsetCheckpointIntervalMs int64   `config:"log.flush.offset.checkpoint.interval.ms"` // 60000
	LogCleanerEnable                   bool    `config:"log.cleaner.enable"`                      // true
	LogCleanerThreads                  int     `config:"log.cleaner.threads"`                     // 1
	LogCleanerDedupeBufferSize         int64   `config:"log.cleaner.dedupe.buffer.size"`          // 134217728
	LogCleanerIoMaxBytesPerSecond      float64 `config:"log.cleaner.io.max.bytes.per.second"`     // Double.MAX
	LogCleanerBackoffMs                int64   `config:"log.cleaner.backoff.ms"`                  // 15000
	NumRecoveryThreadsPerDataDir       int     `config:"num.recovery.threads.per.data.dir"`       // 2
	// LogScrubEnable, LogScrubIntervalMs (-1: at start-up only) and
	// LogScrubBytesPerSecond (-1: no limit) configure the scrubber (log/scrub.go).
	LogScrubEnable         bool  `config:"log.scrub.enable"`           // true
	LogScrubIntervalMs     int64 `config:"log.scrub.interval.ms"`      // 604800000
	LogScrubBytesPerSecond int64 `config:"log.scrub.bytes.per.second"` // 10485760
	// LogPageCacheTailBytes is Runnel's own: the durable bytes at the end of each log
	// kept in the page cache; older ones are dropped from it. -1: the OS decides.
	LogPageCacheTailBytes int64 `config:"log.page.cache.tail.bytes"`
	// The log.* defaults of topic configs (log.segment.bytes, log.retention.hours,
	// log.flush.interval.messages, ...) stay strings in Raw; TopicDefaults and
	// ResolveTopic turn them into topic values.

	// Raw holds every property that has a value (a default, the file, or --set) by its
	// name. Properties with no default (Kafka's null) are absent until set.
	Raw map[string]string

	// explicit maps each property set by the file, --set or Set to the order in which it
	// was set (1, 2, ...); a property absent here has its default. Between a Kafka key
	// and the Runnel key it feeds (listeners -> listen) the later one wins.
	explicit map[string]int
	seq      int // the last number handed out in explicit
}

// Default gives the configuration `runnel server` runs with when given no flags: node 1,
// ./runnel-data, Kafka on localhost:9092, Raft on localhost:9093, HTTP on
// localhost:9644, this node the only controller.
func Default() *Broker {
	b := &Broker{Raw: map[string]string{}, explicit: map[string]int{}}
	for _, p := range brokerProps {
		if !p.null {
			b.Raw[p.name] = p.dflt
		}
	}
	if err := b.derive(); err != nil {
		panic("config: the defaults do not derive: " + err.Error())
	}
	return b
}

// Load reads file (in server.properties format; "" for none), then applies sets, each
// KEY=VALUE, in order, so a --set wins over the file. The `runnel server` flags map onto
// properties the same way: --node-id node.id, --data-dir log.dirs, --listen listen,
// --advertise advertise, --controller-listen controller.listen, --http-listen
// http.listen, --controllers controllers. Errors are *Error naming the key and value.
func Load(file string, sets []string) (*Broker, error) {
	b := Default()
	if file != "" {
		f, err := os.Open(file)
		if err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		props, err := ParseProperties(f)
		f.Close()
		if err != nil {
			return nil, withOrigin(err, file)
		}
		if err := b.setAll(props); err != nil {
			return nil, withOrigin(err, file)
		}
	}
	for _, s := range sets {
		k, v, ok := strings.Cut(s, "=")
		if !ok {
			return nil, &Error{Key: "--set", Value: s, Reason: "is not KEY=VALUE"}
		}
		if err := b.set(strings.TrimSpace(k), v); err != nil {
			return nil, withOrigin(err, "--set")
		}
	}
	if err := b.finish(); err != nil {
		return nil, err
	}
	return b, nil
}

// Set validates one property and applies it, as a --set would. On error b is unchanged.
func (b *Broker) Set(key, value string) error {
	raw, explicit, seq := maps.Clone(b.Raw), maps.Clone(b.explicit), b.seq
	err := b.set(key, value)
	if err == nil {
		err = b.finish()
	}
	if err != nil {
		b.Raw, b.explicit, b.seq = raw, explicit, seq
		_ = b.derive() // the old state derived before
	}
	return err
}

// set records one property without deriving the typed fields.
func (b *Broker) set(key, value string) error {
	p, key, ok := lookupProp(key)
	if !ok {
		return unknownProperty(key)
	}
	value = strings.TrimSpace(value)
	if err := p.validate(value); err != nil {
		err.Key = key // a per-listener override is named as given, not as its row
		return err
	}
	b.Raw[key] = value
	b.seq++
	b.explicit[key] = b.seq
	return nil
}

// setAll applies a whole file. A map has no order, so keys are applied in table order
// (a Kafka key before the Runnel key it feeds); the first error in that order is given,
// unknown keys (alphabetically) first.
func (b *Broker) setAll(props map[string]string) error {
	var unknown, overrides []string
	for k := range props {
		if _, _, ok := lookupProp(k); !ok {
			unknown = append(unknown, k)
		} else if _, ok := brokerByName[k]; !ok {
			overrides = append(overrides, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return unknownProperty(unknown[0])
	}
	for _, p := range brokerProps {
		if v, ok := props[p.name]; ok {
			if err := b.set(p.name, v); err != nil {
				return err
			}
		}
	}
	// The per-listener overrides (listener.name.<name>.<property>) after the table.
	sort.Strings(overrides)
	for _, k := range overrides {
		if err := b.set(k, props[k]); err != nil {
			return err
		}
	}
	return nil
}

// finish derives the typed fields and checks the rules that span properties.
func (b *Broker) finish() error {
	if err := b.derive(); err != nil {
		return err
	}
	return b.crossCheck()
}

// Explicit reports whether key was set by the file, --set or Set rather than defaulted.
func (b *Broker) Explicit(key string) bool {
	_, ok := b.explicit[key]
	return ok
}

// IgnoredSet lists, sorted, the properties that were set but that Runnel accepts only
// for compatibility with Kafka's server.properties and does not act on, so that the
// server can log them.
func (b *Broker) IgnoredSet() []string {
	var out []string
	for k := range b.explicit {
		if p, _, _ := lookupProp(k); p.ignored {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// IgnoredWarnings gives, for each property of IgnoredSet, the warning the server logs
// once at start-up: "property X is accepted for compatibility but ignored: why".
func (b *Broker) IgnoredWarnings() []string {
	var out []string
	for _, k := range b.IgnoredSet() {
		p, _, _ := lookupProp(k)
		out = append(out, "property "+k+" is accepted for compatibility but ignored: "+p.doc)
	}
	return out
}

// QuorumVoters gives the metadata quorum: Controllers, or this node alone at
// ControllerListen when Controllers is empty.
func (b *Broker) QuorumVoters() []Voter {
	if len(b.Controllers) == 0 {
		return []Voter{{ID: b.NodeID, Addr: b.ControllerListen}}
	}
	return b.Controllers
}

// IsController reports whether this node is one of the quorum's voters.
func (b *Broker) IsController() bool {
	for _, v := range b.QuorumVoters() {
		if v.ID == b.NodeID {
			return true
		}
	}
	return false
}

// derive recomputes every typed field from Raw.
func (b *Broker) derive() error {
	b.applyKafkaAddresses()
	b.DataDir = b.Raw["log.dir"]
	if d, ok := b.Raw["log.dirs"]; ok {
		b.DataDir = d
	}
	if dirs := splitList(b.DataDir); len(dirs) > 0 {
		b.DataDir = dirs[0]
	}
	b.ControllerListen = b.Raw["controller.listen"]
	b.Controllers, _ = parseVoters(b.Raw["controllers"])
	if err := b.deriveTagged(); err != nil {
		return err
	}
	return b.deriveListeners()
}

// taggedFields maps a property name to the index of the Broker field tagged with it.
var taggedFields = func() map[string]int {
	m := map[string]int{}
	t := reflect.TypeOf(Broker{})
	for i := 0; i < t.NumField(); i++ {
		if tag := t.Field(i).Tag.Get("config"); tag != "" {
			m[tag] = i
		}
	}
	return m
}()

// deriveTagged sets every field tagged `config:"name"` from Raw[name].
func (b *Broker) deriveTagged() error {
	v := reflect.ValueOf(b).Elem()
	for name, i := range taggedFields {
		if err := setField(v.Field(i), b.Raw[name]); err != nil {
			return invalid(name, b.Raw[name], err.Error())
		}
	}
	return nil
}

// setField parses s into f by f's kind. An empty string leaves a string field empty and
// is an error for the others, which always have a default.
func setField(f reflect.Value, s string) error {
	switch f.Kind() {
	case reflect.String:
		f.SetString(s)
	case reflect.Bool:
		v, ok := parseBool(s)
		if !ok {
			return fmt.Errorf("is not a boolean")
		}
		f.SetBool(v)
	case reflect.Int, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(s, 10, f.Type().Bits())
		if err != nil {
			return fmt.Errorf("does not fit in %d bits", f.Type().Bits())
		}
		f.SetInt(n)
	case reflect.Float64:
		n, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("is not a number")
		}
		f.SetFloat(n)
	default:
		return fmt.Errorf("has no parser for a %s field", f.Kind())
	}
	return nil
}

// crossCheck enforces the rules between properties that Kafka enforces at start-up.
func (b *Broker) crossCheck() error {
	itoa := func(n int64) string { return strconv.FormatInt(n, 10) }
	switch {
	case b.BrokerHeartbeatIntervalMs >= b.BrokerSessionTimeoutMs:
		return invalid("broker.heartbeat.interval.ms", itoa(int64(b.BrokerHeartbeatIntervalMs)),
			"must be less than broker.session.timeout.ms ("+itoa(int64(b.BrokerSessionTimeoutMs))+")")
	case int64(b.ReplicaFetchWaitMaxMs) > b.ReplicaLagTimeMaxMs:
		return invalid("replica.fetch.wait.max.ms", itoa(int64(b.ReplicaFetchWaitMaxMs)),
			"must not exceed replica.lag.time.max.ms ("+itoa(b.ReplicaLagTimeMaxMs)+"), or followers would drop out of the ISR")
	case b.HTTPTLSKey != "" && b.HTTPTLSCertificate == "":
		return invalid("http.tls.key.location", b.HTTPTLSKey, "is set without http.tls.certificate.location: the HTTP listener needs both to serve HTTPS")
	case b.GroupMinSessionTimeoutMs > b.GroupMaxSessionTimeoutMs:
		return invalid("group.min.session.timeout.ms", itoa(int64(b.GroupMinSessionTimeoutMs)),
			"must not exceed group.max.session.timeout.ms ("+itoa(int64(b.GroupMaxSessionTimeoutMs))+")")
	}
	return nil
}
