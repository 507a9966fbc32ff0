// Package txn is the transaction coordinator (Kafka's TransactionCoordinator and
// TransactionStateManager, KIP-98).
//
// Each transactional id belongs to one partition of the internal topic
// __transaction_state, abs(javaStringHashCode(id)) % 50 (Kafka's default
// transaction.state.log.num.partitions); the leader of that partition is the id's
// coordinator. Like the group coordinator, a Coordinator loads a partition when this
// node becomes its leader (replaying it from the start: the latest record per id wins)
// and drops it when leadership moves, so the state survives coordinator failover. The
// leader epoch of the partition is the coordinator epoch stamped on markers: a
// marker from a deposed coordinator is fenced at the data partitions.
//
// Records are Kafka's: key kmsg.TxnMetadataKey (version 0, transactional id), value
// kmsg.TxnMetadataValue (version 1: producer id and epoch, timeout, state, partitions,
// timestamps, and the tagged previous/next producer ids and client transaction
// version of KIP-890; version 0 records are still read), written uncompressed through
// the replica with acks=-1.
//
// States (kmsg.TransactionState): Empty -> Ongoing (AddPartitionsToTxn,
// AddOffsetsToTxn) -> PrepareCommit | PrepareAbort (EndTxn, a timeout, or a new
// InitProducerId fencing the producer) -> CompleteCommit | CompleteAbort once every
// partition holds its marker -> Ongoing again with the next transaction. EndTxn answers
// once the prepare record is replicated and the markers were written; if a partition
// cannot take its marker then, the coordinator keeps retrying in the background and
// the producer gets CONCURRENT_TRANSACTIONS until it is done (the decision itself is
// durable from the prepare record on).
//
// Offsets: AddOffsetsToTxn adds the group's __consumer_offsets partition to the
// transaction; TxnOffsetCommit then goes to the group coordinator (internal/group),
// which holds the offsets pending until this coordinator's marker reaches that
// partition.
//
// Produce-side verification (KIP-890 part 1): a transactional write to a partition is
// accepted only if the partition is in the producer's ongoing transaction (Verify).
// When another node coordinates the id, Config.RemoteVerify asks it (the server wires
// it to that node's AddPartitionsToTxn v4 with VerifyOnly, skipped once the partition
// holds an ongoing transaction of the producer at that epoch).
//
// Transaction version 2 (KIP-890 part 2, tv2.go): the node advertises the
// transaction.version feature at 2; clients that use it end every transaction with an
// EndTxn v5 that bumps the producer epoch (markers carry the bumped epoch, so late
// writes of the ended transaction are fenced at the partitions and at this
// coordinator), and add partitions implicitly through their writes (Produce v12 at
// the partition leader, TxnOffsetCommit v5 at the group coordinator, which call
// AddPartitionImplicit, or Config.RemoteAdd for a remote coordinator). Older
// clients keep version 1.
//
// Timeouts: every Config.AbortInterval, a transaction Ongoing for longer than its
// transaction.timeout.ms is aborted with a bumped epoch, which fences its producer.
//
// Concurrency: Coordinator.mu guards the shard map; shard.mu the transactions of a
// partition; txnEntry.mu serialises the operations on one transactional id and is held
// across its appends and marker writes. Lock order: Coordinator.mu -> shard.mu ->
// txnEntry.mu; never two entries at once.
package txn
