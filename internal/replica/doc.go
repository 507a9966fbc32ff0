// Package replica owns the partitions hosted on this node: for each, its role (leader or
// follower), leader epoch, ISR, high watermark and the state of every follower, and the
// waiting rooms (Kafka's purgatory) where produce requests wait for the ISR and fetch
// requests wait for data. It sits between the protocol layer (internal/kafka) and the
// logs (internal/log); it never decodes Kafka requests.
//
// # The decisions and the code around them
//
// Every replication decision is a pure function of the partition's state, the input and
// the time, in core.go: when a follower counts as caught up, when it joins or leaves the
// ISR, where the high watermark is, where a follower cuts a divergent tail. Partition
// (partition.go, isr.go, follower.go) gathers their inputs under its locks and carries
// them out; Manager (manager.go, isr_change.go) runs the periodic ISR check and sends ISR
// changes to the controller through IsrChanger; Fetcher (fetcher*.go) is the follower's
// loop. The scripts in testdata/ drive the core directly (core_test.go).
//
// # Invariants
//
//   - High watermark, on a leader: log start <= HW <= min over the maximal ISR (the
//     committed ISR plus a pending change's additions) of each member's log end, the
//     leader's own durable end included when the topic fsyncs every batch; it never
//     decreases within a leader epoch. On a follower: HW <= the leader's HW and HW <=
//     its own log end. Written only by Partition.setHighWatermarkLocked, which checks
//     these in invariants builds (internal/invariants).
//   - ISR: contains the leader; a follower joins only holding every record up to the HW
//     and the start of the current epoch (and, while the ISR is below
//     min.insync.replicas, caught up with the log end); at most one change is in flight
//     per partition, and a shrink takes effect for the HW only once committed.
//   - A follower's fetch is recorded once per fetch request (RecordFollowerFetch); Read
//     only reads.
//   - Consumers read below the high watermark of the replica they read: a follower
//     serves them (fetch from the closest replica, KIP-392: Read with FromFollower) only
//     below its own, which is at most what its leader had committed at its last answer.
//     The leader names that follower (PreferredReadReplica, selector.go) only while it
//     is in the ISR and holds the consumer's offset.
//   - Every write to a log (a leader's append, a follower's append, a truncation) holds
//     the partition's leaderIsrLock for reading and checks the role, so no write lands
//     after a role change it did not see.
//
// # Lock order
//
//	Manager.mu -> Partition.leaderIsrLock -> Partition.stateMu -> Partition.waitersMu
//
// and the log's own locks inside any of them. Never two Partitions' locks at once.
// Manager.mu is never held across a partition's I/O.
package replica
