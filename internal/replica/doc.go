// Package replica owns the partitions hosted on this node: for each, its role (leader or
// follower), leader epoch, ISR, high watermark and the state of every follower, and the
// waiting rooms (Kafka's purgatory) where produce requests wait for the ISR and fetch
// requests wait for data. It sits between the protocol layer (internal/kafka) and the
// logs (internal/log); it never decodes Kafka requests.
//
// Lock order: Manager.mu -> Partition.mu -> log.Log's own locks. Never two Partition
// locks at once.
package replica
