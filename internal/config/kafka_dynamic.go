package config

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Kafka's dynamic broker configs (DynamicBrokerConfig), for AlterConfigs and
// IncrementalAlterConfigs on a broker resource.
//
// Kafka accepts at run time every broker property of its reconfigurable set
// (AllDynamicConfigs), any listener-prefixed property (listener.name.<l>.<name>), and
// any name that is not one of its own (a custom property, for a plugin); it refuses
// its static properties ("Cannot update these configs dynamically"), the keystore and
// truststore settings without a listener prefix, and, on the default resource (an
// empty name), the settings that only a broker of its own may have. Runnel answers
// the same: what Kafka accepts is stored (metadata Image.Configs) and described back,
// and what Runnel does not act on at run time draws a warning naming it
// (DynamicBrokerConfigUsed). Runnel acts on its own dynamic properties (the
// replication throttles' rates) and, on the default resource, on topic config names
// (the cluster-wide topic defaults). A property of Runnel's table that is neither
// dynamic there nor in Kafka's reconfigurable set is static and refused, whether or
// not Kafka knows it (its value is read at start-up only).

// kafkaSecurityConfigs is Kafka's DynamicSecurityConfigs (SslConfigs
// RECONFIGURABLE_CONFIGS): dynamic only per listener, and per broker.
var kafkaSecurityConfigs = map[string]Type{
	"ssl.keystore.type": TypeString, "ssl.keystore.location": TypeString, "ssl.keystore.password": TypePassword,
	"ssl.key.password": TypePassword, "ssl.truststore.type": TypeString, "ssl.truststore.location": TypeString,
	"ssl.truststore.password": TypePassword, "ssl.keystore.certificate.chain": TypePassword,
	"ssl.keystore.key": TypePassword, "ssl.truststore.certificates": TypePassword,
}

// kafkaListenerConfigs is Kafka's DynamicListenerConfig.ReconfigurableConfigs (less
// the security ones above): per broker, except kafkaClusterLevelListenerConfigs.
var kafkaListenerConfigs = map[string]Type{
	"listeners": TypeList, "listener.security.protocol.map": TypeString, "principal.builder.class": TypeClass,
	"ssl.protocol": TypeString, "ssl.provider": TypeString, "ssl.cipher.suites": TypeList,
	"ssl.enabled.protocols": TypeList, "ssl.keymanager.algorithm": TypeString, "ssl.trustmanager.algorithm": TypeString,
	"ssl.endpoint.identification.algorithm": TypeString, "ssl.secure.random.implementation": TypeString,
	"ssl.client.auth": TypeString, "ssl.engine.factory.class": TypeClass,
	"sasl.mechanism.inter.broker.protocol": TypeString, "sasl.jaas.config": TypePassword,
	"sasl.enabled.mechanisms": TypeList, "sasl.kerberos.service.name": TypeString,
	"sasl.kerberos.kinit.cmd": TypeString, "sasl.kerberos.ticket.renew.window.factor": TypeDouble,
	"sasl.kerberos.ticket.renew.jitter": TypeDouble, "sasl.kerberos.min.time.before.relogin": TypeLong,
	"sasl.kerberos.principal.to.local.rules": TypeList, "sasl.login.refresh.window.factor": TypeDouble,
	"sasl.login.refresh.window.jitter": TypeDouble, "sasl.login.refresh.min.period.seconds": TypeShort,
	"sasl.login.refresh.buffer.seconds": TypeShort,
	"max.connections":                   TypeInt, "max.connection.creation.rate": TypeInt, "num.network.threads": TypeInt,
}

// kafkaClusterLevelListenerConfigs are the listener configs Kafka also takes on the
// default resource.
var kafkaClusterLevelListenerConfigs = map[string]bool{
	"max.connections": true, "max.connection.creation.rate": true, "num.network.threads": true,
}

// kafkaOtherDynamicConfigs are the rest of Kafka 4's AllDynamicConfigs: the log
// cleaner's, the broker's topic defaults (ServerTopicConfigSynonyms, the first name
// of each), the thread pools, metric reporters, the socket server's limits, producer
// state, remote storage, replication, config providers and the coordinators' buffers;
// and the broker quotas DynamicConfig.Broker adds.
var kafkaOtherDynamicConfigs = map[string]Type{
	"log.cleaner.threads": TypeInt, "log.cleaner.dedupe.buffer.size": TypeLong,
	"log.cleaner.io.buffer.load.factor": TypeDouble, "log.cleaner.io.buffer.size": TypeInt,
	"message.max.bytes": TypeInt, "log.cleaner.io.max.bytes.per.second": TypeDouble, "log.cleaner.backoff.ms": TypeLong,

	"log.segment.bytes": TypeInt, "log.roll.ms": TypeLong, "log.roll.jitter.ms": TypeLong,
	"log.index.size.max.bytes": TypeInt, "log.flush.interval.messages": TypeLong, "log.flush.interval.ms": TypeLong,
	"log.retention.bytes": TypeLong, "log.retention.ms": TypeLong, "log.index.interval.bytes": TypeInt,
	"log.cleaner.delete.retention.ms": TypeLong, "log.cleaner.min.compaction.lag.ms": TypeLong,
	"log.cleaner.max.compaction.lag.ms": TypeLong, "log.segment.delete.delay.ms": TypeLong,
	"log.cleaner.min.cleanable.ratio": TypeDouble, "log.cleanup.policy": TypeList,
	"unclean.leader.election.enable": TypeBoolean, "min.insync.replicas": TypeInt, "compression.type": TypeString,
	"compression.gzip.level": TypeInt, "compression.lz4.level": TypeInt, "compression.zstd.level": TypeInt,
	"log.preallocate": TypeBoolean, "log.message.timestamp.type": TypeString,
	"log.message.timestamp.before.max.ms": TypeLong, "log.message.timestamp.after.max.ms": TypeLong,
	"log.local.retention.ms": TypeLong, "log.local.retention.bytes": TypeLong,

	"num.io.threads": TypeInt, "num.replica.fetchers": TypeInt, "num.recovery.threads.per.data.dir": TypeInt,
	"background.threads": TypeInt, "metric.reporters": TypeList,
	"max.connections.per.ip": TypeInt, "max.connections.per.ip.overrides": TypeString,
	"producer.id.expiration.ms": TypeInt, "transaction.partition.verification.enable": TypeBoolean,
	"remote.log.index.file.cache.total.size.bytes": TypeLong, "remote.fetch.max.wait.ms": TypeInt,
	"remote.log.manager.copy.max.bytes.per.second": TypeLong, "remote.log.manager.fetch.max.bytes.per.second": TypeLong,
	"remote.log.reader.threads": TypeInt, "remote.log.manager.copier.thread.pool.size": TypeInt,
	"remote.log.manager.expiration.thread.pool.size": TypeInt, "remote.list.offsets.request.timeout.ms": TypeLong,
	"follower.fetch.last.tiered.offset.enable": TypeBoolean, "config.providers": TypeList,
	"group.coordinator.cached.buffer.max.bytes": TypeInt, "share.coordinator.cached.buffer.max.bytes": TypeInt,

	"leader.replication.throttled.rate": TypeLong, "follower.replication.throttled.rate": TypeLong,
	"replica.alter.log.dirs.io.max.bytes.per.second": TypeLong,
}

// kafkaStaticConfigs are Kafka broker properties that Runnel's table does not have and
// Kafka refuses at run time (DynamicConfig.Broker.nonDynamicProps): the ones an
// operator of a Kafka cluster is likely to try. Names neither here, nor in Runnel's
// table, nor in Kafka's dynamic set are custom properties, which Kafka accepts.
var kafkaStaticConfigs = map[string]bool{
	"broker.id": true, "broker.id.generation.enable": true, "reserved.broker.max.id": true,
	"zookeeper.connect": true, "advertised.host.name": true, "advertised.port": true, "port": true,
	"host.name": true, "control.plane.listener.name": true, "early.start.listeners": true,
	"metadata.log.segment.bytes": true, "metadata.log.max.record.bytes.at.once": true,
	"metadata.max.retention.bytes": true, "metadata.max.retention.ms": true,
	"initial.broker.registration.timeout.ms": true, "node.id.generation.enable": true,
	"num.replica.alter.log.dirs.threads": true, "replica.socket.timeout.ms": true,
	"replica.socket.receive.buffer.bytes": true, "replica.fetch.min.bytes": true, "replica.fetch.backoff.ms": true,
	"replica.high.watermark.checkpoint.interval.ms": true, "replica.selector.class": true,
	"offsets.load.buffer.size": true, "offsets.commit.timeout.ms": true, "offsets.retention.check.interval.ms": true,
	"offsets.topic.compression.codec": true, "transaction.state.log.segment.bytes": true,
	"transactional.id.expiration.ms": true, "group.coordinator.rebalance.protocols": true,
	"group.coordinator.threads": true,
	"request.timeout.ms":        true, "connections.max.reauth.ms": true, "sasl.server.callback.handler.class": true,
	"security.inter.broker.protocol": true, "inter.broker.protocol.version": true,
	"log.message.format.version": true, "create.topic.policy.class.name": true, "alter.config.policy.class.name": true,
	"client.quota.callback.class": true, "remote.log.storage.system.enable": true,
	"unstable.api.versions.enable": true, "unstable.feature.versions.enable": true,
}

// kafkaListenerPrefix matches Kafka's listener.name.<listener>.<config>.
var kafkaListenerPrefix = regexp.MustCompile(`^listener\.name\.[^.]*\.(.+)$`)

// kafkaDynamicType is the type of a name in Kafka's dynamic set (listener prefix
// removed), or 0 when it is not one.
func kafkaDynamicType(name string) Type {
	if t, ok := kafkaSecurityConfigs[name]; ok {
		return t
	}
	if t, ok := kafkaListenerConfigs[name]; ok {
		return t
	}
	return kafkaOtherDynamicConfigs[name]
}

// listenerBase is the config a listener-prefixed name sets, or "" for another name.
func listenerBase(name string) string {
	if m := kafkaListenerPrefix.FindStringSubmatch(name); m != nil {
		return m[1]
	}
	return ""
}

// staticBrokerConfig reports whether name is a broker property that cannot change at
// run time: Runnel reads it at start-up only, or Kafka refuses it dynamically.
func staticBrokerConfig(name string) bool {
	if kafkaStaticConfigs[name] {
		return true
	}
	p, ok := brokerByName[name]
	return ok && !p.dynamic && kafkaDynamicType(name) == 0
}

// CheckDynamicBrokerNames applies Kafka's name rules of a dynamic broker config change
// (DynamicBrokerConfig.validateConfigs) to the names of one broker resource: perBroker
// for a resource named by a broker id, false for the default (an empty name). The
// error is Kafka's text (answered INVALID_REQUEST, as Kafka's ConfigAdminManager does).
func CheckDynamicBrokerNames(names []string, perBroker bool) error {
	var static, unprefixed, brokerOnly []string
	for _, n := range names {
		switch {
		case staticBrokerConfig(n):
			static = append(static, n)
		case kafkaSecurityConfigs[n] != 0:
			unprefixed = append(unprefixed, n)
		case !perBroker && perBrokerOnly(n):
			brokerOnly = append(brokerOnly, n)
		}
	}
	switch {
	case len(static) > 0:
		return fmt.Errorf("Cannot update these configs dynamically: %s", scalaSet(static))
	case len(unprefixed) > 0:
		return fmt.Errorf("These security configs can be dynamically updated only per-listener using the listener prefix: %s", scalaSet(unprefixed))
	case len(brokerOnly) > 0:
		return fmt.Errorf("Cannot update these configs at default cluster level, broker id must be specified: %s", scalaSet(brokerOnly))
	}
	return nil
}

// perBrokerOnly reports whether Kafka takes name only on a broker resource named by an
// id (PerBrokerConfigs and the listener-prefixed configs).
func perBrokerOnly(name string) bool {
	if base := listenerBase(name); base != "" {
		return !kafkaClusterLevelListenerConfigs[base]
	}
	if kafkaSecurityConfigs[name] != 0 {
		return true
	}
	_, listener := kafkaListenerConfigs[name]
	return listener && !kafkaClusterLevelListenerConfigs[name]
}

// scalaSet prints names as Kafka's error messages print a Scala set.
func scalaSet(names []string) string {
	sort.Strings(names)
	return "Set(" + strings.Join(names, ", ") + ")"
}

// validateKafkaDynamic checks the value of a name CheckDynamicBrokerNames accepts:
// against Runnel's table when Runnel has the property (listener prefix removed),
// else against the type Kafka gives it; a custom name takes any value.
func validateKafkaDynamic(key, value string) error {
	name := key
	if base := listenerBase(key); base != "" {
		name = base
	}
	value = strings.TrimSpace(value)
	if p, ok := brokerByName[name]; ok {
		if err := p.validate(value); err != nil {
			return err
		}
		return nil
	}
	if t := kafkaDynamicType(name); t != 0 {
		if reason := checkType(t, value); reason != "" {
			if t == TypePassword {
				value = "(hidden)"
			}
			return invalid(key, value, reason)
		}
	}
	return nil
}

// DynamicBrokerConfigUsed reports whether Runnel acts on key when a broker resource
// sets it at run time (perBroker: one named by a broker id): its own dynamic
// properties always, topic configs on the default resource (the cluster-wide topic
// defaults). Every other key Kafka accepts is stored and described, not acted on.
func DynamicBrokerConfigUsed(key string, perBroker bool) bool {
	if p, ok := brokerByName[key]; ok && p.dynamic {
		return true
	}
	_, topic := topicByName[key]
	return topic && !perBroker
}

// DynamicBrokerConfigType is the type DescribeConfigs gives a dynamic broker config
// that Runnel's table does not describe: Kafka's, listener prefix removed; 0 when
// unknown (a custom property).
func DynamicBrokerConfigType(key string) Type {
	name := key
	if base := listenerBase(key); base != "" {
		name = base
	}
	if p, ok := brokerByName[name]; ok {
		return p.typ
	}
	return kafkaDynamicType(name)
}
