// Package config parses a Runnel node's configuration: a Kafka server.properties file
// (--config) and repeatable --set KEY=VALUE overrides, which win over the file.
//
// Property names are Kafka's wherever the concept is the same (num.partitions,
// log.segment.bytes, min.insync.replicas, ...). Runnel adds names only for its
// command-line flags: listen, advertise, controller.listen, http.listen and
// controllers. Kafka's listeners, advertised.listeners and controller.quorum.voters are
// accepted and feed them; when both are given, the one set later wins, and within one
// file the Runnel name wins. Keys a stock Kafka KRaft server.properties carries but that
// Runnel does not act on (process.roles, num.network.threads, socket buffer sizes, ...)
// are accepted and reported by Broker.IgnoredSet (the server logs Broker.IgnoredWarnings
// at start-up, one warning naming each). Anything else, ZooKeeper keys included,
// is an error naming the key.
//
// One table (table.go) defines every property: its name, Kafka type, default, doc,
// validator, and for broker properties the topic config they are the default of. It
// drives parsing, validation, Broker's typed fields, topic defaults and DescribeConfigs.
//
// Topic configs (retention.ms, segment.bytes, cleanup.policy, ...) take their defaults
// from broker properties: log.retention.ms, else log.retention.minutes, else
// log.retention.hours, as in Kafka. Broker.ResolveTopic lays a topic's overrides over
// those defaults.
//
// Durability differs from Kafka on purpose (DESIGN.md "Durability contract"):
// log.flush.interval.messages (topic flush.messages) defaults to 1, so every
// acknowledged batch is fsynced, with concurrent appends sharing one fsync.
// log.flush.interval.ms (flush.ms) stays unset, Long.MAX.
//
// This package is a leaf: it imports no other Runnel package.
package config
