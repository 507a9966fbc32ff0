// Package controller keeps the cluster metadata in a hashicorp/raft quorum.
//
// Every change is a batch of metadata.Records proposed through raft.Apply on the leader
// (the active controller). The FSM (fsm.go) applies each committed batch with
// metadata.Image.Apply and publishes a new immutable *metadata.Image; brokers observe
// images through Controller.Image and Controller.Subscribe and never call the
// controller to change their own state, except through AlterPartition (ISR changes),
// RegisterBroker and BrokerHeartbeat.
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
// Locks: proposeMu (which also guards the broker sessions), then fsm.mu (taken
// briefly to publish an image). The FSM never
// takes proposeMu, so a proposer may hold it while it waits for the FSM. Subscribers'
// callbacks run with no lock held and may call any method.
//
// Broker liveness (sessions.go, liveness.go), as in KRaft: every node registers
// (RegisterBroker, Kafka key 62) and is fenced until its heartbeats (BrokerHeartbeat,
// key 63) show it has applied every record up to the heartbeat. The active controller
// keeps each broker's session in memory; a broker without a heartbeat for
// Config.SessionTimeout is fenced (a FenceBroker record plus new leaders from the ISR
// and smaller ISRs, in one entry), and so, at once, is a broker whose Raft heartbeats
// fail while Config.ProcessGone says its process is gone (gone.go: a kill). A new
// leader grants every broker a full session timeout from its election, the previous
// leader's node included unless its process is gone: a broker answers as leader or
// coordinator only while it holds a lease from a heartbeat answer (sent time plus a
// session timeout; controlplane/lease.go), and fencing it sooner could give its roles away
// while it still answers for them. Every heartbeat answer is given only after the
// Raft leadership is confirmed with a quorum, so that a deposed controller that has
// not noticed yet grants nobody a lease. Each broker's reported metadata offset
// (applied.go) lets an admin change be acknowledged only once every live broker
// serves it. A heartbeat with WantShutdown is a controlled shutdown: leadership moves to
// other in-sync replicas, then the broker is fenced and told ShouldShutdown. A
// background loop on the leader also elects leaders for offline partitions that can
// have one and, unless disabled, gives leadership back to preferred replicas.
//
// Nodes that are not voters join the Raft group as non-voters: RegisterBroker with a
// RaftAddr calls raft.AddNonvoter, and the node then replays the same FSM. To find
// the active controller before it has any metadata, such a node asks a voter's Raft
// listener (discovery.go: a first byte that is no Raft RPC type selects a one-line
// JSON answer naming the controller's Kafka address).
//
// Placement of new replicas (placement.go) and leader election (election.go) are pure
// functions, tested with tables; so are the election plans of fencing, unfencing,
// controlled shutdown and preferred leader election, and session expiry.
package controller
