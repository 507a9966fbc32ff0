package config

import (
	"strconv"
	"strings"
)

// This file is the one table of properties. Parsing, validation, defaults, the topic
// defaults and DescribeConfigs are all driven from it, so a property is described once.

// prop defines one property: a broker property (server.properties, --set) or a topic
// config (CreateTopics, AlterConfigs).
type prop struct {
	name  string
	typ   Type
	dflt  string // the default as Kafka prints it; meaningless when null
	null  bool   // no default (Kafka's null): absent from Broker.Raw until set
	doc   string
	check checker // beyond the type; nil accepts any value of the type

	// topic is, for a broker property, the topic config it gives the default of. Several
	// broker properties may name the same topic config (log.retention.ms, .minutes,
	// .hours); the first one set in table order wins, else the first with a default.
	topic string
	// scale converts the broker value to the topic value (hours to ms); 0 means 1.
	scale int64
	// ignored marks a property accepted so that a Kafka server.properties loads
	// unchanged, which Runnel does not act on.
	ignored bool
	// dynamic marks a broker property that AlterConfigs may also set at run time on a
	// broker resource (ValidateDynamicBrokerConfig); the metadata's value then wins
	// over the node's own.
	dynamic bool
}

const (
	hourMs   = 3600000
	minuteMs = 60000
)

// brokerProps lists every broker property. The order matters twice: it is the
// precedence among synonyms of a topic config (most specific first), and within one file
// a Kafka key (listeners) is applied before the Runnel key it feeds (listen), so that the
// Runnel key wins when both are present.
var brokerProps = []prop{
	// Identity and addresses. Runnel's own keys mirror the `runnel server` flags.
	{name: "node.id", typ: TypeInt, dflt: "1", check: atLeast(0), doc: "This node's id, unique in the cluster (--node-id)."},
	{name: "log.dir", typ: TypeString, dflt: "./runnel-data", check: singleDir, doc: "The data directory, used when log.dirs is not set."},
	{name: "log.dirs", typ: TypeString, null: true, check: singleDir, doc: "The data directory (--data-dir); Runnel takes exactly one. Wins over log.dir."},
	{name: "broker.rack", typ: TypeString, null: true, doc: "The rack or zone of this node, spread across by replica placement."},
	{name: "process.roles", typ: TypeList, dflt: "broker,controller", check: listOf("broker", "controller"), ignored: true, doc: "Kafka's KRaft roles. Runnel derives them from --controllers: a node in the list is a controller and every node is a broker."},
	{name: "controller.listener.names", typ: TypeList, dflt: "CONTROLLER", doc: "Names of the listeners entries that are the controller listener."},
	{name: "listener.security.protocol.map", typ: TypeString, dflt: "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT", check: checkProtocolMap, doc: "Listener name to security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL), NAME:PROTOCOL,... A listener named after a protocol needs no entry. The controller (Raft) listener is PLAINTEXT only."},
	{name: "inter.broker.listener.name", typ: TypeString, null: true, doc: "The listener nodes reach each other on (replication, the controller channel, transaction markers, liveness probes): each node dials the other's registered endpoint of this name, so every node must have it. Default PLAINTEXT. On a SASL listener nodes log in with sasl.mechanism.inter.broker.protocol as inter.broker.sasl.username; on a TLS one they trust ssl.truststore.location and present their own ssl.keystore.location certificate."},
	{name: "listeners", typ: TypeList, null: true, check: checkListeners, doc: "Kafka's NAME://HOST:PORT list of listeners, e.g. PLAINTEXT://127.0.0.1:9092,SASL_SSL://127.0.0.1:9094: the controller.listener.names entry sets controller.listen, every other entry is a Kafka listener with the protocol listener.security.protocol.map gives its name. Wins over listen when set after it."},
	{name: "advertised.listeners", typ: TypeList, null: true, check: checkListeners, doc: "Kafka's NAME://HOST:PORT list of the addresses given to clients (and registered for other nodes) per listener; a listener it omits is advertised at its own address. A client gets the addresses of the listener it connected on."},
	{name: "controller.quorum.voters", typ: TypeList, null: true, check: checkVoters, doc: "Kafka's ID@HOST:PORT list of quorum voters; sets controllers."},
	{name: "controller.quorum.bootstrap.servers", typ: TypeList, dflt: "", ignored: true, doc: "Kafka's dynamic-quorum bootstrap list. Runnel uses controllers."},
	{name: "metadata.log.dir", typ: TypeString, null: true, ignored: true, doc: "Kafka's metadata log directory. Runnel keeps the Raft log under the data directory."},
	{name: "listen", typ: TypeString, dflt: "localhost:9092", check: hostPort, doc: "Kafka protocol listener, HOST:PORT (--listen): shorthand for listeners=PLAINTEXT://HOST:PORT."},
	{name: "advertise", typ: TypeString, null: true, check: hostPort, doc: "Address given to clients in metadata (--advertise) for the first listener. Defaults to its address, with this host's name when it has no host."},
	{name: "controller.listen", typ: TypeString, dflt: "localhost:9093", check: hostPort, doc: "Metadata quorum (Raft) listener, HOST:PORT (--controller-listen)."},
	{name: "http.listen", typ: TypeString, dflt: "localhost:9644", check: hostPort, doc: "HTTP listener for /metrics, /healthz, /readyz and the console (--http-listen)."},
	{name: "http.tls.certificate.location", typ: TypeString, null: true, doc: "Runnel's own: a PEM file with the certificate chain (leaf first) the HTTP listener serves; set, it speaks HTTPS only (the console's session cookie is then Secure). It may also hold the private key, as ssl.keystore.location does. Read at start-up."},
	{name: "http.tls.key.location", typ: TypeString, null: true, doc: "Runnel's own: the PEM file of http.tls.certificate.location's unencrypted private key; unset, the key is read from the certificate's file."},
	{name: "http.pprof.enable", typ: TypeBoolean, dflt: "false", doc: "Runnel's own: serve Go's profiles at /debug/pprof/ on the HTTP listener (off by default: a profile costs the node CPU and shows its internals)."},
	{name: "controllers", typ: TypeList, dflt: "", check: checkVoters, doc: "The quorum's voters, ID@HOST:PORT,... (--controllers). Empty: this node alone at controller.listen."},

	// Topics and replication.
	{name: "num.partitions", typ: TypeInt, dflt: "1", check: atLeast(1), doc: "Partitions of a topic created without a count."},
	{name: "default.replication.factor", typ: TypeInt, dflt: "1", check: between(1, 32767), doc: "Replication factor of a topic created without one."},
	{name: "min.insync.replicas", typ: TypeInt, dflt: "1", topic: "min.insync.replicas", doc: "Fewest in-sync replicas for an acks=all produce to succeed."},
	{name: "unclean.leader.election.enable", typ: TypeBoolean, dflt: "false", topic: "unclean.leader.election.enable", doc: "Elect a replica outside the ISR when no ISR member is alive, accepting data loss."},
	{name: "auto.create.topics.enable", typ: TypeBoolean, dflt: "true", doc: "Create a topic on first Metadata or Produce for it."},
	{name: "delete.topic.enable", typ: TypeBoolean, dflt: "true", doc: "Allow DeleteTopics."},
	{name: "auto.leader.rebalance.enable", typ: TypeBoolean, dflt: "true", doc: "Move leadership back to preferred replicas in the background."},
	{name: "leader.imbalance.check.interval.seconds", typ: TypeLong, dflt: "300", check: atLeast(1), doc: "How often the controller checks leader balance."},
	{name: "leader.imbalance.per.broker.percentage", typ: TypeInt, dflt: "10", check: between(0, 100), doc: "Share of a node's preferred partitions led elsewhere above which the periodic check (auto.leader.rebalance.enable) moves those leaderships back to it; 0 moves them back at any imbalance."},
	{name: "partition.autobalancing.mode", typ: TypeString, dflt: "node_add", check: oneOf("off", "node_add", "continuous"), doc: "Runnel's own: node_add gives a node that joins the cluster for the first time its even share of replicas and preferred leaders, moved by reassignment throttled to partition.autobalancing.throttled.rate, moving as little as possible; continuous does that and also moves the replicas off a node dead (fenced) longer than partition.autobalancing.node.availability.timeout.sec and off a node whose data disk is used past partition.autobalancing.max.disk.usage.percent; off leaves placement to the operator. The active controller's setting is the one that acts."},
	{name: "partition.autobalancing.throttled.rate", typ: TypeLong, dflt: "104857600", check: atLeast(1), doc: "Runnel's own (after Redpanda's raft_learner_recovery_rate): bytes/s the balancer's moves copy at, set as leader.replication.throttled.rate and follower.replication.throttled.rate while they run (unless an operator set those) with the moving replicas listed in the topics' throttled replicas; all are removed when the moves end. Replicas in the ISR are never throttled. The default, 100 MiB/s, is a tenth of a 10 Gbit/s link or a modest disk's write rate: a node fills in minutes, and producers and in-sync followers keep the rest."},
	{name: "partition.autobalancing.node.availability.timeout.sec", typ: TypeLong, dflt: "900", check: atLeast(1), doc: "Runnel's own (Redpanda's default): in continuous mode, a node fenced (no heartbeat, or shut down) for this long has its replicas moved to the other live nodes."},
	{name: "partition.autobalancing.max.disk.usage.percent", typ: TypeInt, dflt: "80", check: between(1, 100), doc: "Runnel's own (Redpanda's default): in continuous mode, a node whose data directory's file system is used past this share (DescribeLogDirs TotalBytes and UsableBytes, polled every partition.autobalancing.tick.interval.ms) has replicas moved off it, largest first, onto nodes below it, until it is below; the balancer never places a replica on a node past it."},
	{name: "partition.autobalancing.tick.interval.ms", typ: TypeLong, dflt: "10000", check: atLeast(100), doc: "Runnel's own: how often, in continuous mode, the active controller asks every live node for its disk usage (DescribeLogDirs)."},
	{name: "replica.lag.time.max.ms", typ: TypeLong, dflt: "30000", check: atLeast(1), doc: "A follower that has not caught up for this long leaves the ISR."},
	{name: "replica.fetch.max.bytes", typ: TypeInt, dflt: "1048576", check: atLeast(0), doc: "Bytes a follower asks for per partition."},
	{name: "replica.fetch.response.max.bytes", typ: TypeInt, dflt: "10485760", check: atLeast(0), doc: "Bytes a follower asks for per fetch."},
	{name: "replica.fetch.wait.max.ms", typ: TypeInt, dflt: "500", check: atLeast(0), doc: "Longest a follower fetch waits for data."},
	{name: "replica.fetch.min.bytes", typ: TypeInt, dflt: "1", check: atLeast(1), doc: "Bytes a follower fetch waits for: the leader answers once it has this many, or after replica.fetch.wait.max.ms."},
	{name: "replica.fetch.backoff.ms", typ: TypeInt, dflt: "100", check: atLeast(0), doc: "Pause after a failed follower fetch. Kafka's default is 1000; Runnel's 100 lets a follower start fetching from a new leader soon after a failover, which acks=all produces wait for."},
	{name: "replica.selector.class", typ: TypeClass, null: true, check: checkReplicaSelector, doc: "The fully qualified class name that implements ReplicaSelector. This is used by the broker to find the preferred read replica. By default, we use an implementation that returns the leader. Runnel has Kafka's two: " + LeaderReplicaSelector + " (the default: consumers read from the leader) and " + RackAwareReplicaSelector + " (KIP-392: a consumer whose client.rack matches the broker.rack of a live in-sync follower, and not the leader's, is sent to that follower, which then serves it up to its own high watermark). Any other value stops the node at start-up."},
	{name: "leader.replication.throttled.rate", typ: TypeLong, dflt: longMax, check: atLeast(0), dynamic: true, doc: "Bytes/s a leader sends, over all its partitions, to followers outside the ISR of the replicas listed in a topic's leader.replication.throttled.replicas (a reassignment's catch-up traffic, KIP-73). Settable at run time: AlterConfigs on the broker resource with an empty name sets it for every node (DYNAMIC_DEFAULT_BROKER_CONFIG), with a broker id for that node alone (DYNAMIC_BROKER_CONFIG, which wins there). The default does not throttle."},
	{name: "follower.replication.throttled.rate", typ: TypeLong, dflt: longMax, check: atLeast(0), dynamic: true, doc: "Bytes/s a follower fetches, over all its partitions, for its replicas outside the ISR listed in a topic's follower.replication.throttled.replicas (KIP-73). Settable at run time like leader.replication.throttled.rate. The default does not throttle."},
	{name: "replication.quota.window.num", typ: TypeInt, dflt: "11", check: atLeast(2), ignored: true, doc: "Kafka's number of samples a replication throttle is measured over. Runnel's throttles are token buckets (an exact long-run rate, a burst of replication.quota.window.size.seconds), which have no samples."},
	{name: "replication.quota.window.size.seconds", typ: TypeInt, dflt: "1", check: atLeast(1), doc: "The burst a replication throttle allows, in seconds of its rate: a moving replica copies that much at full speed before the throttle holds it to the rate."},
	{name: "broker.session.timeout.ms", typ: TypeInt, dflt: "2000", check: atLeast(1), doc: "A node without a heartbeat for this long is fenced by the controller and its partitions get new leaders. Kafka's default is 9000; Runnel's 2000 gives failover under 3 s after a crash."},
	{name: "broker.heartbeat.interval.ms", typ: TypeInt, dflt: "500", check: atLeast(1), doc: "How often a node heartbeats to the controller (Kafka: 2000)."},

	// Requests.
	{name: "message.max.bytes", typ: TypeInt, dflt: "1048588", topic: "max.message.bytes", doc: "Largest record batch accepted, after compression."},
	{name: "queued.max.requests", typ: TypeInt, dflt: "500", check: atLeast(1), doc: "Requests queued before the listeners stop reading sockets."},
	{name: "queued.max.request.bytes", typ: TypeLong, dflt: "268435456", check: atLeast(1), doc: "Bytes of requests held in memory before the listeners stop reading sockets. Kafka's default is -1 (no limit); Runnel bounds memory by default."},
	{name: "socket.request.max.bytes", typ: TypeInt, dflt: "104857600", check: atLeast(1), doc: "Largest request accepted."},
	{name: "fetch.max.bytes", typ: TypeInt, dflt: "57671680", check: atLeast(1024), doc: "Most bytes one Fetch response carries."},
	{name: "quota.window.num", typ: TypeInt, dflt: "11", check: atLeast(2), doc: "The longest one client-quota throttle lasts, in windows of quota.window.size.seconds (Kafka caps a request quota's throttle the same way); a longer debt throttles the next request too. Kafka measures quotas over this many samples; Runnel's quotas are token buckets (an exact rate, a burst of one window), which have none."},
	{name: "quota.window.size.seconds", typ: TypeInt, dflt: "1", check: atLeast(1), doc: "The burst a client quota allows, in seconds of its rate: a client sends that much at full speed before it is throttled to the rate; a consumer fetch asks for no more than that."},

	// TLS (PEM files only). Each ssl.* property and sasl.enabled.mechanisms may be set
	// for one listener as listener.name.<name>.<property> (listeners.go).
	{name: "ssl.keystore.type", typ: TypeString, dflt: "PEM", check: oneOf("PEM"), doc: "The format of ssl.keystore.location: Runnel reads PEM only (Kafka's JKS and PKCS12 are not supported)."},
	{name: "ssl.keystore.location", typ: TypeString, null: true, doc: "A PEM file with the certificate chain (leaf first) and its unencrypted private key that a TLS listener (SSL, SASL_SSL) serves, and that a node presents to another's TLS inter-broker listener. Read at start-up."},
	{name: "ssl.truststore.type", typ: TypeString, dflt: "PEM", check: oneOf("PEM"), doc: "The format of ssl.truststore.location: PEM only."},
	{name: "ssl.truststore.location", typ: TypeString, null: true, doc: "A PEM file of CA certificates: client certificates are verified against it (ssl.client.auth), and so are other nodes' certificates on a TLS inter-broker listener (unset there: the system's CAs)."},
	{name: "ssl.client.auth", typ: TypeString, dflt: "none", check: oneOf("none", "requested", "required"), doc: "Whether a TLS listener asks clients for a certificate: required (a client without a valid one is refused), requested (verified if given), none. A client with a certificate is the principal User:<its subject>, e.g. User:CN=alice, unless it logs in with SASL."},

	// Authentication (SASL users) and authorization (ACLs).
	{name: "sasl.enabled.mechanisms", typ: TypeList, dflt: "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512", check: listOf("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"), doc: "The SASL mechanisms a SASL listener offers (Kafka's default is GSSAPI, which Runnel does not implement). PLAIN checks the password against the user's SCRAM credential. Per listener: listener.name.<name>.sasl.enabled.mechanisms."},
	{name: "sasl.bootstrap.users", typ: TypePassword, null: true, check: checkBootstrapUsers, doc: "Runnel's own: NAME:PASSWORD,... SCRAM users (SCRAM-SHA-256 and SCRAM-SHA-512 credentials) created at the cluster's first start if they do not exist, so that a secured cluster can be set up without a plaintext door."},
	{name: "sasl.mechanism.inter.broker.protocol", typ: TypeString, dflt: "SCRAM-SHA-512", check: oneOf("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"), doc: "The SASL mechanism nodes log in with on a SASL inter-broker listener."},
	{name: "inter.broker.sasl.username", typ: TypeString, null: true, doc: "Runnel's own (in place of Kafka's JAAS file): the user nodes log in as on a SASL inter-broker listener. It must be a super user; it is created at first start like sasl.bootstrap.users."},
	{name: "inter.broker.sasl.password", typ: TypePassword, null: true, doc: "The password of inter.broker.sasl.username."},
	{name: "authorizer.class.name", typ: TypeString, dflt: "", doc: "Any non-empty value (e.g. Kafka's org.apache.kafka.metadata.authorizer.StandardAuthorizer) turns ACLs on: every request is then authorized against the ACLs kept in the metadata quorum."},
	{name: "super.users", typ: TypeString, null: true, check: principalList, doc: "Principals allowed everything whatever the ACLs say, separated by semicolons: User:admin;User:CN=node."},
	{name: "allow.everyone.if.no.acl.found", typ: TypeBoolean, dflt: "false", doc: "With ACLs on, allow an operation on a resource that no ACL matches (false: deny it)."},
	{name: "connections.max.idle.ms", typ: TypeLong, dflt: "600000", doc: "A connection that for this long sent no request and had no response pending or written is closed (within twice this). 0 or less: never. Nodes redial their idle watch connections."},
	{name: "num.io.threads", typ: TypeInt, dflt: "8", check: atLeast(1), ignored: true, doc: "Kafka's request handler threads. Runnel handles each request on a goroutine of its own, bounded by queued.max.requests and queued.max.request.bytes."},
	{name: "num.network.threads", typ: TypeInt, dflt: "3", check: atLeast(1), ignored: true, doc: "Kafka's network threads. Runnel reads each connection on its own goroutine."},
	{name: "socket.send.buffer.bytes", typ: TypeInt, dflt: "102400", ignored: true, doc: "Kafka's SO_SNDBUF. Runnel keeps the OS default."},
	{name: "socket.receive.buffer.bytes", typ: TypeInt, dflt: "102400", ignored: true, doc: "Kafka's SO_RCVBUF. Runnel keeps the OS default."},

	// Groups, offsets and transactions.
	{name: "group.initial.rebalance.delay.ms", typ: TypeInt, dflt: "3000", check: atLeast(0), doc: "Wait for more members before the first rebalance of an empty group."},
	{name: "group.min.session.timeout.ms", typ: TypeInt, dflt: "6000", check: atLeast(0), doc: "Shortest session timeout a member may ask for."},
	{name: "group.max.session.timeout.ms", typ: TypeInt, dflt: "1800000", check: atLeast(0), doc: "Longest session timeout a member may ask for."},
	{name: "group.max.size", typ: TypeInt, dflt: "2147483647", check: atLeast(1), doc: "Most members in one group."},
	{name: "group.consumer.session.timeout.ms", typ: TypeInt, dflt: "45000", check: atLeast(1), doc: "Session timeout of consumer group members (KIP-848): a member not heard from for this long is fenced and its partitions move. A group's consumer.session.timeout.ms overrides it."},
	{name: "group.consumer.heartbeat.interval.ms", typ: TypeInt, dflt: "5000", check: atLeast(1), doc: "Heartbeat interval given to consumer group members (KIP-848). A group's consumer.heartbeat.interval.ms overrides it."},
	{name: "group.consumer.assignors", typ: TypeList, dflt: "uniform,range", check: listOf("uniform", "range"), doc: "Server-side assignors of consumer groups (KIP-848); the first is used when members name none."},
	{name: "group.consumer.max.size", typ: TypeInt, dflt: "2147483647", check: atLeast(1), doc: "Most members in one consumer group (KIP-848)."},
	{name: "group.consumer.migration.policy", typ: TypeString, dflt: "bidirectional", check: lowerOneOf("bidirectional", "upgrade", "downgrade", "disabled"), doc: "Online migration between classic and consumer groups (KIP-848): upgrade converts a classic group with members to a consumer group when a ConsumerGroupHeartbeat member joins, downgrade converts a consumer group back when its last such member leaves and only classic members remain, bidirectional does both, disabled neither (and refuses classic members in a consumer group)."},
	{name: "group.share.session.timeout.ms", typ: TypeInt, dflt: "45000", check: atLeast(1), doc: "Session timeout of share group members (KIP-932). A group's share.session.timeout.ms overrides it."},
	{name: "group.share.heartbeat.interval.ms", typ: TypeInt, dflt: "5000", check: atLeast(1), doc: "Heartbeat interval given to share group members (KIP-932). A group's share.heartbeat.interval.ms overrides it."},
	{name: "group.share.record.lock.duration.ms", typ: TypeInt, dflt: "30000", check: atLeast(1000), doc: "How long a record delivered to a share group member stays locked to it before it is released for redelivery. A group's share.record.lock.duration.ms overrides it."},
	{name: "group.share.delivery.count.limit", typ: TypeInt, dflt: "5", check: atLeast(2), doc: "Deliveries of one record to a share group before it is archived instead of delivered again."},
	{name: "group.share.partition.max.record.locks", typ: TypeInt, dflt: "2000", check: atLeast(100), doc: "Most in-flight records (from the share-partition start offset) per share partition."},
	{name: "group.share.max.size", typ: TypeInt, dflt: "200", check: atLeast(1), doc: "Most members in one share group."},
	{name: "offsets.topic.num.partitions", typ: TypeInt, dflt: "50", check: atLeast(1), doc: "Partitions of __consumer_offsets; fixed once created."},
	{name: "offsets.topic.replication.factor", typ: TypeShort, dflt: "3", check: atLeast(1), doc: "Replication factor of __consumer_offsets, capped by the live nodes when it is created."},
	{name: "offsets.topic.segment.bytes", typ: TypeInt, dflt: "104857600", check: atLeast(1), doc: "Segment size of __consumer_offsets."},
	{name: "offsets.retention.minutes", typ: TypeInt, dflt: "10080", check: atLeast(1), doc: "Committed offsets of an empty group are dropped after this long."},
	{name: "transaction.max.timeout.ms", typ: TypeInt, dflt: "900000", check: atLeast(1), doc: "Longest transaction timeout a producer may ask for."},
	{name: "transaction.abort.timed.out.transaction.cleanup.interval.ms", typ: TypeInt, dflt: "10000", check: atLeast(1), doc: "How often the transaction coordinator aborts transactions open longer than their transaction.timeout.ms."},
	{name: "transaction.state.log.replication.factor", typ: TypeShort, dflt: "3", check: atLeast(1), ignored: true, doc: "Kafka's __transaction_state replication factor."},
	{name: "transaction.state.log.min.isr", typ: TypeInt, dflt: "2", check: atLeast(1), ignored: true, doc: "Kafka's __transaction_state min.insync.replicas."},
	{name: "transaction.state.log.num.partitions", typ: TypeInt, dflt: "50", check: atLeast(1), ignored: true, doc: "Kafka's __transaction_state partitions."},
	{name: "share.coordinator.state.topic.replication.factor", typ: TypeShort, dflt: "3", check: atLeast(1), ignored: true, doc: "Kafka's share group state replication factor."},
	{name: "share.coordinator.state.topic.min.isr", typ: TypeShort, dflt: "2", check: atLeast(1), ignored: true, doc: "Kafka's share group state min.insync.replicas."},

	// Log defaults and background work. The ones with a topic are the broker defaults of
	// that topic config and are read through TopicDefaults.
	{name: "log.cleanup.policy", typ: TypeList, dflt: "delete", topic: "cleanup.policy", doc: "Default cleanup.policy."},
	{name: "log.retention.ms", typ: TypeLong, null: true, topic: "retention.ms", check: atLeast(-1), doc: "Default retention.ms; wins over .minutes and .hours. -1: no limit."},
	{name: "log.retention.minutes", typ: TypeInt, null: true, topic: "retention.ms", scale: minuteMs, doc: "Default retention in minutes; wins over .hours."},
	{name: "log.retention.hours", typ: TypeInt, dflt: "168", topic: "retention.ms", scale: hourMs, doc: "Default retention in hours."},
	{name: "log.retention.bytes", typ: TypeLong, dflt: "-1", topic: "retention.bytes", doc: "Default retention.bytes."},
	{name: "log.segment.bytes", typ: TypeInt, dflt: "1073741824", topic: "segment.bytes", doc: "Default segment.bytes."},
	{name: "log.roll.ms", typ: TypeLong, null: true, topic: "segment.ms", doc: "Default segment.ms; wins over log.roll.hours."},
	{name: "log.roll.hours", typ: TypeInt, dflt: "168", topic: "segment.ms", scale: hourMs, check: atLeast(1), doc: "Default segment roll time in hours."},
	{name: "log.roll.jitter.ms", typ: TypeLong, null: true, topic: "segment.jitter.ms", doc: "Default segment.jitter.ms; wins over log.roll.jitter.hours."},
	{name: "log.roll.jitter.hours", typ: TypeInt, dflt: "0", topic: "segment.jitter.ms", scale: hourMs, check: atLeast(0), doc: "Default segment jitter in hours."},
	{name: "log.index.size.max.bytes", typ: TypeInt, dflt: "10485760", topic: "segment.index.bytes", doc: "Default segment.index.bytes."},
	{name: "log.index.interval.bytes", typ: TypeInt, dflt: "4096", topic: "index.interval.bytes", doc: "Default index.interval.bytes."},
	// Durability differs from Kafka on purpose (DESIGN.md "Durability contract"): Kafka
	// defaults log.flush.interval.messages to Long.MAX and leaves flushing to the page
	// cache. Runnel defaults it to 1, so every acknowledged batch is fsynced before the
	// acknowledgement (concurrent appends share one fsync, group commit).
	// log.flush.interval.ms stays unset, which is flush.ms = Long.MAX.
	{name: "log.flush.interval.messages", typ: TypeLong, dflt: "1", topic: "flush.messages", doc: "Default flush.messages. Runnel's default 1 fsyncs every acknowledged batch (group commit); raise it to accept page-cache durability."},
	{name: "log.flush.interval.ms", typ: TypeLong, null: true, topic: "flush.ms", doc: "Default flush.ms. Unset: no time-based flush (Long.MAX)."},
	{name: "log.flush.scheduler.interval.ms", typ: TypeLong, dflt: "1000", check: atLeast(1), doc: "How often the flusher checks flush.ms (Kafka: Long.MAX)."},
	{name: "log.flush.offset.checkpoint.interval.ms", typ: TypeInt, dflt: "60000", check: atLeast(0), doc: "How often recovery points are checkpointed."},
	{name: "log.page.cache.tail.bytes", typ: TypeLong, dflt: "67108864", check: atLeast(-1), doc: "Runnel's own: how many of the last durable bytes of each partition's log stay in the OS page cache; once a range is fsynced and further than this behind the log end, its pages are dropped (fadvise DONTNEED) and the next appends reuse them instead of new memory, which on a virtual machine that hands free memory back to its host costs a host fault per page. A reader further behind (a consumer catching up, a new replica) reads the disk. -1: the OS alone decides what stays cached, as in Kafka."},
	{name: "log.retention.check.interval.ms", typ: TypeLong, dflt: "300000", check: atLeast(1), doc: "How often segments are checked for deletion."},
	{name: "log.segment.delete.delay.ms", typ: TypeLong, dflt: "60000", topic: "file.delete.delay.ms", doc: "Default file.delete.delay.ms."},
	{name: "log.preallocate", typ: TypeBoolean, dflt: "false", topic: "preallocate", doc: "Default preallocate."},
	{name: "log.message.timestamp.type", typ: TypeString, dflt: "CreateTime", topic: "message.timestamp.type", doc: "Default message.timestamp.type."},
	{name: "log.message.timestamp.before.max.ms", typ: TypeLong, dflt: longMax, topic: "message.timestamp.before.max.ms", doc: "Default message.timestamp.before.max.ms."},
	{name: "log.message.timestamp.after.max.ms", typ: TypeLong, dflt: "3600000", topic: "message.timestamp.after.max.ms", doc: "Default message.timestamp.after.max.ms."},
	{name: "compression.type", typ: TypeString, dflt: "producer", topic: "compression.type", doc: "Default compression.type."},
	{name: "compression.gzip.level", typ: TypeInt, dflt: "-1", topic: "compression.gzip.level", doc: "Default compression.gzip.level."},
	{name: "compression.lz4.level", typ: TypeInt, dflt: "9", topic: "compression.lz4.level", doc: "Default compression.lz4.level."},
	{name: "compression.zstd.level", typ: TypeInt, dflt: "3", topic: "compression.zstd.level", doc: "Default compression.zstd.level."},
	{name: "log.cleaner.enable", typ: TypeBoolean, dflt: "true", doc: "Run the log cleaner for compacted topics."},
	{name: "log.cleaner.threads", typ: TypeInt, dflt: "1", check: atLeast(0), doc: "Log cleaner goroutines."},
	{name: "log.cleaner.dedupe.buffer.size", typ: TypeLong, dflt: "134217728", check: atLeast(0), doc: "Bytes of key-to-offset maps shared by the log cleaner goroutines."},
	{name: "log.cleaner.io.max.bytes.per.second", typ: TypeDouble, dflt: "1.7976931348623157E308", doc: "Bytes/s the log cleaner goroutines read and write together."},
	{name: "log.cleaner.backoff.ms", typ: TypeLong, dflt: "15000", check: atLeast(0), doc: "Pause of a log cleaner goroutine that found no log to clean."},
	{name: "log.cleaner.delete.retention.ms", typ: TypeLong, dflt: "86400000", topic: "delete.retention.ms", doc: "Default delete.retention.ms."},
	{name: "log.cleaner.min.compaction.lag.ms", typ: TypeLong, dflt: "0", topic: "min.compaction.lag.ms", doc: "Default min.compaction.lag.ms."},
	{name: "log.cleaner.max.compaction.lag.ms", typ: TypeLong, dflt: longMax, topic: "max.compaction.lag.ms", doc: "Default max.compaction.lag.ms."},
	{name: "log.cleaner.min.cleanable.ratio", typ: TypeDouble, dflt: "0.5", topic: "min.cleanable.dirty.ratio", doc: "Default min.cleanable.dirty.ratio."},
	// The scrubber (docs/durability.md): a background pass that reads every
	// cold segment and checks each batch's CRC-32C and the index entries, so that bit
	// rot is found and repaired from a replica while an intact copy still exists,
	// rather than when a consumer or a restart reads the batch. The week is Ceph's deep
	// scrub interval (osd_deep_scrub_interval); 10 MiB/s reads 6 TB a week, costs well
	// under 1 % of a core (CRC-32C verifies at GB/s) and leaves a disk's bandwidth to
	// producers and consumers.
	{name: "log.scrub.enable", typ: TypeBoolean, dflt: "true", doc: "Runnel's own: run the background scrubber, which reads every cold (rolled) segment, verifies every batch's CRC-32C and the offset and time index entries, and reports damage for repair from an in-sync replica (docs/durability.md). false: only start-up recovery and `runnel cluster scrub` check."},
	{name: "log.scrub.interval.ms", typ: TypeLong, dflt: "604800000", check: scrubInterval, doc: "Runnel's own: how long after the start of one scrubber pass the next starts (a week). The time of the last finished pass is kept in DATA_DIR/scrub-checkpoint, so a restart does not start the count again. -1: one pass after every start-up only."},
	{name: "log.scrub.bytes.per.second", typ: TypeLong, dflt: "10485760", check: scrubRate, doc: "Runnel's own: how many bytes per second the background scrubber reads (10 MiB/s). -1: no limit. `runnel cluster scrub` is not limited."},
	{name: "num.recovery.threads.per.data.dir", typ: TypeInt, dflt: "2", check: atLeast(1), doc: "Goroutines recovering logs at start-up."},
}

// topicProps lists every topic config. A topic config with broker synonyms takes its
// default from them; dflt here is used only when none of them has a value.
var topicProps = []prop{
	{name: "cleanup.policy", typ: TypeList, check: listOf("compact", "delete"), doc: "delete: drop old segments by retention; compact: keep the last record per key; or both."},
	{name: "compression.type", typ: TypeString, check: oneOf("producer", "gzip", "snappy", "lz4", "zstd", "uncompressed"), doc: "Codec the log keeps batches in; producer keeps the producer's."},
	{name: "compression.gzip.level", typ: TypeInt, check: gzipLevel, doc: "gzip level when compression.type is gzip."},
	{name: "compression.lz4.level", typ: TypeInt, check: between(1, 17), doc: "lz4 level when compression.type is lz4."},
	{name: "compression.zstd.level", typ: TypeInt, check: between(-131072, 22), doc: "zstd level when compression.type is zstd."},
	{name: "delete.retention.ms", typ: TypeLong, check: atLeast(0), doc: "How long tombstones stay in a compacted topic."},
	{name: "file.delete.delay.ms", typ: TypeLong, check: atLeast(0), doc: "Delay before a deleted segment's files are removed."},
	{name: "flush.messages", typ: TypeLong, check: atLeast(1), doc: "Fsync after this many records. Runnel's default 1 means every acknowledged batch is on disk (group commit)."},
	{name: "flush.ms", typ: TypeLong, dflt: longMax, check: atLeast(0), doc: "Fsync after this long."},
	{name: "follower.replication.throttled.replicas", typ: TypeList, dflt: "", check: throttledReplicas, doc: "PARTITION:BROKER replicas throttled on the follower side, or *."},
	{name: "index.interval.bytes", typ: TypeInt, check: atLeast(0), doc: "Bytes between offset index entries."},
	{name: "leader.replication.throttled.replicas", typ: TypeList, dflt: "", check: throttledReplicas, doc: "PARTITION:BROKER replicas throttled on the leader side, or *."},
	{name: "max.compaction.lag.ms", typ: TypeLong, check: atLeast(1), doc: "Longest a record stays uncompacted."},
	{name: "max.message.bytes", typ: TypeInt, check: atLeast(0), doc: "Largest record batch accepted, after compression."},
	{name: "message.timestamp.after.max.ms", typ: TypeLong, check: atLeast(0), doc: "How far ahead of the broker's clock a CreateTime timestamp may be."},
	{name: "message.timestamp.before.max.ms", typ: TypeLong, check: atLeast(0), doc: "How far behind the broker's clock a CreateTime timestamp may be."},
	{name: "message.timestamp.type", typ: TypeString, check: oneOf("CreateTime", "LogAppendTime"), doc: "CreateTime keeps the producer's timestamp; LogAppendTime stamps the broker's."},
	{name: "min.cleanable.dirty.ratio", typ: TypeDouble, check: betweenFloat(0, 1), doc: "Dirty share of a log that triggers compaction."},
	{name: "min.compaction.lag.ms", typ: TypeLong, check: atLeast(0), doc: "Shortest a record stays uncompacted."},
	{name: "min.insync.replicas", typ: TypeInt, check: atLeast(1), doc: "Fewest in-sync replicas for an acks=all produce to succeed."},
	{name: "preallocate", typ: TypeBoolean, doc: "Preallocate segment files."},
	{name: "retention.bytes", typ: TypeLong, doc: "Largest size of a partition before old segments are deleted; -1: no limit."},
	{name: "retention.ms", typ: TypeLong, check: atLeast(-1), doc: "Longest a segment is kept; -1: no limit."},
	// Kafka 4 raised the minimum of segment.bytes to 1 MiB. Runnel keeps Kafka 3's 14
	// bytes so that tests (and users) can force segment rolls with tiny segments.
	{name: "segment.bytes", typ: TypeInt, check: atLeast(14), doc: "Segment file size at which a new segment is rolled."},
	{name: "segment.index.bytes", typ: TypeInt, check: atLeast(4), doc: "Size of a segment's offset index."},
	{name: "segment.jitter.ms", typ: TypeLong, check: atLeast(0), doc: "Random jitter subtracted from segment.ms."},
	{name: "segment.ms", typ: TypeLong, check: atLeast(1), doc: "A segment older than this is rolled even if not full."},
	{name: "unclean.leader.election.enable", typ: TypeBoolean, doc: "Elect a replica outside the ISR when no ISR member is alive, accepting data loss."},
}

var (
	brokerByName = map[string]*prop{}
	topicByName  = map[string]*prop{}
	// synonyms maps a topic config to its broker properties in precedence order.
	synonyms = map[string][]*prop{}
)

func init() {
	for i := range topicProps {
		topicByName[topicProps[i].name] = &topicProps[i]
	}
	for i := range brokerProps {
		p := &brokerProps[i]
		brokerByName[p.name] = p
		if p.topic == "" {
			continue
		}
		synonyms[p.topic] = append(synonyms[p.topic], p)
		// A synonym that holds the topic value unscaled accepts what the topic accepts.
		if t := topicByName[p.topic]; p.check == nil && p.scale == 0 && t != nil {
			p.check = t.check
		}
	}
}

// validate checks v against p's type and checker.
func (p *prop) validate(v string) *Error {
	reason := checkType(p.typ, v)
	if reason == "" && p.check != nil {
		reason = p.check(v)
	}
	if reason != "" {
		if p.typ == TypePassword {
			v = "(hidden)" // a sensitive value never reaches an error message or a log
		}
		return invalid(p.name, v, reason)
	}
	return nil
}

// scrubInterval accepts log.scrub.interval.ms: -1 (at start-up only) or a positive
// interval.
func scrubInterval(v string) string {
	if n, _ := strconv.ParseInt(v, 10, 64); n == -1 || n >= 1 {
		return ""
	}
	return "must be -1 (one pass at start-up only) or at least 1"
}

// scrubRate accepts log.scrub.bytes.per.second: -1 (no limit) or a positive rate.
func scrubRate(v string) string {
	if n, _ := strconv.ParseInt(v, 10, 64); n == -1 || n >= 1 {
		return ""
	}
	return "must be -1 (no limit) or at least 1"
}

// lowerOneOf is oneOf in any case: Kafka validates group.consumer.migration.policy
// case-insensitively (CaseInsensitiveValidString), so a Kafka server.properties with
// UPGRADE must not stop the node. The value is kept as written; its reader lower-cases.
func lowerOneOf(allowed ...string) checker {
	one := oneOf(allowed...)
	return func(v string) string { return one(strings.ToLower(v)) }
}
