// Package metadata is the cluster's data model: an immutable Image (brokers, topics,
// partitions with replicas, ISR, leader and epochs, topic configs) and the Records that
// change it. The controller's Raft FSM applies Records in log order to produce a new
// Image; brokers observe Images and act on LocalChanges. This package is a leaf: no I/O,
// standard library only.
package metadata
