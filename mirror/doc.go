// Package mirror copies topics from one Kafka-protocol cluster (the source) to another
// (the target), continuously and exactly once, keeps an exact map from source offsets
// to target offsets, and syncs consumer-group offsets through it, so that a group can
// fail over from the source to the target with no gap and nothing read twice. It is a
// Kafka client of both clusters and nothing else (built on franz-go kgo and kadm), so
// either side can be any Kafka-compatible cluster that supports transactions.
//
// # How a record travels
//
// A Mirror joins a consumer group on the source (`__runnel_mirror.NAME`, a custom
// name the mirror never syncs) that subscribes the selected source topics. The group
// shares the source partitions among every process running the same mirror name and
// moves a dead process's partitions to the others within its session timeout
// (6 s). The group commits nothing: the position of each partition is read back from
// the target.
//
// Each owned source partition has a worker with its own transactional producer on
// the target, transactional.id `runnel-mirror.NAME.TOPIC.PARTITION`. A worker loops:
// take what the source consumer fetched (read_committed), begin a transaction,
// produce the records (same partition, key, value, headers, timestamp), wait for
// their target offsets, produce its progress record to the progress topic, commit.
// So the records and the position they advance to are committed together or not at
// all. A new owner of a partition initialises the same transactional.id first, which
// fences the old owner (a paused or partitioned process: its next produce or commit
// fails with a fenced epoch and its worker stops) and aborts any transaction it left
// open; only then does it read the progress topic, read_committed, up to the end it
// saw after fencing. It resumes exactly after the last committed record. Any failed
// transaction does the same: a worker never trusts its memory after an error,
// because a commit that returned an error may still have committed.
//
// # The progress topic
//
// `__runnel_mirror.NAME` on the target, one partition, cleanup.policy=compact (keys
// below are overwritten, so the topic stays the size of the latest values). Keys:
//
//	m                          the mirror's Meta (JSON): source and target cluster
//	                           ids, alias, naming; written before any topic is made
//	s/TOPIC/PARTITION          partition state (JSON): next source offset, target end,
//	                           source topic id, lag, totals, state and last error
//	r/TOPIC/PARTITION/GEN/N    chunk N of the offset map (binary runs, see below)
//	g/GROUP/TOPIC/PARTITION    a group checkpoint (JSON): the group's committed source
//	                           offset and its exact target translation
//
// The topic's `__` prefix keeps every mirror from copying it.
//
// # Exact offset translation
//
// Source offsets have gaps (compaction, transaction markers, aborted records, records
// skipped as loops), and so do target offsets (markers, other producers' records). The
// map is a list of runs (source start, target start, count): source offsets
// start..start+count-1 became target offsets tstart..tstart+count-1. Source offset o
// translates to the target offset of the first mirrored record at or after o. A run
// is three varints (delta-encoded, 5 to 15 bytes); a new run starts at each gap on
// either side and at each transaction (its commit marker takes a target offset). So
// the map costs about 10 bytes per transaction per partition: with the default
// batching (up to 10,000 records per transaction) at least 1 KiB per million records,
// at worst (a gap after every record) about 10 MB per million records. Chunks whose
// runs all lie below the target's log start offset are deleted (tombstoned), so the
// map is trimmed with the target's retention.
//
// # Loops
//
// Every record the mirror writes carries a header `runnel.mirror.path`: the ids of the
// clusters it has been on, comma-separated, origin first. A record whose path holds
// the target's cluster id is not written (its offset becomes a gap), so two mirrors in
// opposite directions settle with each record once per cluster, whatever the naming.
// Under prefix naming topics could still loop (a→b makes b:a.T, b→a would make
// a:b.a.T, then b:a.b.a.T, ...): a mirror reads the Meta of every mirror progress
// topic on its source, and a source topic ALIAS.* whose ALIAS is that of a prefix
// mirror from its target is a copy of a target topic, never mirrored back.
//
// # Data loss on the source
//
// A source topic re-created (a new topic id) or a log start offset past the mirror's
// position stops that partition with an error naming the topic, partition and lost
// offsets (OnDataLossStop), or skips past them and counts (OnDataLossSkip).
package mirror
