// Package group is the group coordinator of the classic consumer group protocol
// (JoinGroup, SyncGroup, Heartbeat, LeaveGroup), of KIP-848 consumer groups
// (ConsumerGroupHeartbeat; see "Consumer groups" below) and the store of committed
// offsets, all kept in the compacted topic __consumer_offsets in Kafka's own record
// formats.
//
// # Who coordinates what
//
// A group belongs to partition abs(javaStringHashCode(groupID)) % offsets.topic.num.partitions
// of __consumer_offsets (PartitionFor), and its coordinator is that partition's leader.
// The replica layer calls Coordinator.OnLeadershipChange: on becoming leader the
// partition is loaded (replayed up to its log end, once the high watermark gets there;
// requests meanwhile get ErrCoordinatorLoadInProgress); on losing leadership it is
// unloaded (ErrNotCoordinator). Loaded groups resume in their stored generation, so
// members carry on without a rebalance after a coordinator moves.
//
// # Goroutines and state
//
// Each group is owned by one goroutine (group.manage) fed by a bounded channel of
// closures (kfake's groups.go manage()). Its state, groupMetadata, is pure: it takes the
// time as an argument, answers through callbacks and queues its appends, so the rules
// are tested without goroutines or clocks. The owner arms one timer at the state's
// next deadline (sessions, the join phase, the sync phase). At most one append per
// group is in flight; writes issued meanwhile are appended together next, each as its
// own batch, so a group's records reach the log in the order it issued them. Loads and
// appends run on tracked goroutines; Close stops and waits for all of them.
//
// Lock order: shard.mu -> Coordinator.mu (a group goroutine is started under shard.mu).
//
// # States (Kafka's names)
//
//	Empty ──join──▶ PreparingRebalance ──all joined / timeout──▶ CompletingRebalance
//	  ▲                 ▲        ▲                                     │ leader's SyncGroup stored
//	  │                 │        └──────── member joins/leaves ─────── ▼
//	  └── last member ──┴─────────── member joins/leaves/expires ── Stable
//
// The first join phase of an empty group waits group.initial.rebalance.delay.ms,
// extended while new members arrive, up to the rebalance timeout. Other join phases end
// when every member has rejoined, or after the longest rebalance timeout (dynamic
// members that did not rejoin are dropped). The broker never interprets assignments: it
// picks the protocol every member supports that most prefer, and the leader assigns, so
// eager and cooperative clients both work (a cooperative client simply rejoins after
// revoking). Static members (group.instance.id, KIP-345) keep their place across
// restarts: a rejoin with an empty member id replaces the old member id, without a
// rebalance when the group is stable and the selected protocol stays the same; the old
// id is fenced (ErrFencedInstanceID).
//
// # Records in __consumer_offsets
//
//	key (version 0/1): OffsetCommitKey{Group, Topic, Partition}   value: OffsetCommitValue v3
//	key (version 2):   GroupMetadataKey{Group}                    value: GroupMetadataValue v3
//
// A null value is a tombstone (a deleted group or offset). Runnel writes uncompressed
// batches with CreateTime timestamps, one batch per commit or group change, and
// acknowledges a commit only after the append is replicated to the ISR (acks=-1).
// Replay applies records in log order, a later record replacing an earlier one with the
// same key, as compaction would.
//
// # Consumer groups (KIP-848)
//
// A group is classic or consumer, never both (groupMetadata.consumer is nil for a
// classic group). The first ConsumerGroupHeartbeat of an empty classic group (or of a
// new group) makes it a consumer group; a classic JoinGroup on an empty consumer group
// makes it classic again. Groups with members convert online as
// group.consumer.migration.policy allows (migration.go): a consumer group may hold
// classic members, which keep the classic requests. The broker assigns (consumer_assignor.go: uniform, range) and
// reconciles each member through its heartbeats (consumer_reconcile.go): a member
// revokes before a partition moves, and the coordinator hands a partition to a member
// only once no other member holds it. Member epochs fence heartbeats
// (FENCED_MEMBER_EPOCH) and offset commits (STALE_MEMBER_EPOCH). The group's state is
// kept in records of types 3 and 5 to 8 (consumer_records.go) next to the offsets, in
// the same partition, appended (acks=-1) before the heartbeat that caused them is
// answered, and replayed on load: a coordinator failover keeps member epochs,
// assignments and targets, members get a fresh session, and nothing moves.
//
//	key 3: ConsumerGroupMetadata{Group}            epoch, metadata hash
//	key 5: ConsumerGroupMemberMetadata{Group, Member} subscription, client
//	key 6: ConsumerGroupTargetAssignmentMetadata{Group} assignment epoch
//	key 7: ConsumerGroupTargetAssignmentMember{Group, Member} target partitions
//	key 8: ConsumerGroupCurrentMemberAssignment{Group, Member} epoch, state, partitions
//
// # Transactional offsets
//
// TxnOffsetCommit writes its offset records as a transactional batch of the producer;
// they stay pending per producer until the transaction's COMMIT or ABORT marker on the
// partition (CompleteTxn live, the control batch on replay), see txn_offsets.go.
package group
