// Package share is KIP-932 share groups: many consumers on one partition, each
// record acquired by one member at a time, acknowledged one by one, redelivered when
// released or when its lock times out, up to group.share.delivery.count.limit.
//
// # Who does what
//
// Membership (Groups) lives on the node leading the group's __consumer_offsets
// partition, the node FindCoordinator (key type 0) names for the group, as in Kafka.
// It is kept in memory only: after a coordinator move, members get UNKNOWN_MEMBER_ID
// and rejoin with their own member ids (KIP-932 v1 ids are the client's); what they
// consumed is not membership but share-partition state, which is durable.
//
// Share-partition state (Manager, PartitionState) lives on each data partition's
// leader, which serves ShareFetch and ShareAcknowledge. PartitionState is pure (time
// is an argument; testdata/*.txt scripts). A share partition is loaded from the Store
// the first time it is used in a leader epoch of its data partition, so a leadership
// move, or a kill -9 of the leader, always resumes from the durable state.
//
// # Durable state: __share_group_state
//
// Kafka writes share-partition state through a share coordinator (WriteShareGroupState
// to the leader of a __share_group_state partition). Runnel keeps Kafka's topic name
// and idea with a simpler writer: the data partition's leader produces a snapshot
// record itself, through a Kafka client of its own cluster (the inter-broker
// listener's identity), acks=-1, to the compacted topic __share_group_state (50
// partitions; the replication factor of __consumer_offsets, min.insync.replicas 2
// when it has 3 copies). All the share partitions of a group go to partition
// fnv32a(group) % 50, so a group's offsets are read from one partition.
//
//	key:   int16 version 0 | int16 len | group | topic id (16 bytes) | int32 partition
//	value: JSON {state_epoch, deleted, leader_epoch, seq, start, batches: [{first, last, state, deliveries}], written_ms}
//	       (a null value is a tombstone)
//
// The snapshot with the highest (state_epoch, leader_epoch, seq) wins on replay,
// whatever order records reached the log in, so a deposed leader's late write never
// overrides its successor's, and no leader's write overrides an admin request's
// (AlterShareGroupOffsets, DeleteShareGroupOffsets: admin.go), which starts a new state
// epoch. A leader checks the Store's state epoch when a member opens a share session
// on a partition it has loaded, and reloads if an admin request replaced the state.
//
// A read (a load, a check, an admin request) first appends a barrier record (a key of
// another version, null value) acks=-1, and replays the partition up to it: reading to
// the high watermark would miss snapshots already acknowledged to their writers while
// a just-elected leader of the state partition has a high watermark that lags.
// Clients cannot produce to the topic (it is internal); only the Store's client id may. A snapshot is written before any ACCEPT, RELEASE, REJECT or gap
// acknowledgement is answered, and when a share partition is first initialized (its
// start offset from share.auto.offset.reset, so that a reload never jumps to a newer
// log end). Acquisitions and lock renewals are not written (as Kafka): an acquired
// record is written as available with its delivery count so far.
//
// # Delivery guarantees
//
// At least once. An acknowledged record (its answer received) is never delivered
// again, across any failover. A record acquired but not yet acknowledged when its
// leader dies is delivered again by the next leader, and the delivery that was in
// flight is not counted unless a later snapshot (another member's acknowledgement)
// wrote it: the delivery count limit can be exceeded by the acquisitions in flight at
// each failover. A record that reached the limit while available is archived, not
// delivered.
//
// # Transactions
//
// A group reads read_uncommitted unless its share.isolation.level is read_committed:
// then it acquires only below the data partition's last stable offset, and the records
// of aborted transactions are archived when read, never acquired (a ShareFetch answer
// carries no aborted-transaction list for the client to filter with). Archiving them
// is not written: a reload reads and archives them again.
package share
