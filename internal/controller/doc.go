// Package controller keeps the cluster metadata in a hashicorp/raft quorum.
//
// Every change is a batch of metadata.Records proposed through raft.Apply on the leader
// (the active controller). The FSM (fsm.go) applies each committed batch with
// metadata.Image.Apply and publishes a new immutable *metadata.Image; brokers observe
// images through Controller.Image and Controller.Subscribe and never call the
// controller to change their own state, except through AlterPartition (ISR changes)
// and RegisterBroker.
//
// Admin operations validate against the latest image, propose, and wait until the
// records are applied locally, all under one mutex (Controller.proposeMu) so that two
// operations that read-then-write the image cannot interleave. On a node that is not
// the leader they fail with ErrNotController.
//
// On disk, under <data-dir>/__raft/:
//
//	raft.db        raft-boltdb: the raft log and the stable store (term, vote)
//	snapshots/     raft.FileSnapshotStore: the whole Image as JSON, the newest two kept
//
// and <data-dir>/meta.properties (Kafka's format: version, node.id, cluster.id).
//
// Locks: proposeMu, then fsm.mu (taken briefly to publish an image). The FSM never
// takes proposeMu, so a proposer may hold it while it waits for the FSM. Subscribers'
// callbacks run with no lock held and may call any method.
//
// Placement of new replicas (placement.go) and leader election (election.go) are pure
// functions, tested with tables.
package controller
