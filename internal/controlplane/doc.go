// Package controlplane is the node's side of the control plane: everything a node
// sends to the active controller (and, for transactions, to its peers), and the state it keeps from the answers. The
// controller itself (the Raft quorum and its FSM) is internal/controller; the Kafka
// handlers that receive these requests on the active controller are internal/kafka
// (56_alter_partition.go, 62_broker_registration.go, 63_broker_heartbeat.go,
// 67_allocate_producer_ids.go and the admin keys), which call LocalAPI and Admin.
//
// It owns:
//
//   - Channel (channel.go): the channel to the active controller (Kafka's
//     NodeToControllerChannelManager). On the active controller a call goes straight to
//     the local controller.Controller; on any other node it is the Kafka request a
//     client would send, to the controller's Kafka listener. Every call retries
//     NOT_CONTROLLER and connection failures, rediscovering the controller, until its
//     context ends. It implements replica.IsrChanger (AlterPartition).
//   - Admin (admin.go, quotas.go, reassign.go, dead_leaders.go): kafka.Admin. Each
//     operation runs on the local controller first, is forwarded (forward.go, KIP-590)
//     when this node is not the active controller, and returns once the change is
//     applied where clients will look: on the active controller, on this node and every
//     live, unfenced node (their heartbeats report the offset they applied); when
//     forwarded, on this node.
//   - Lifecycle (lifecycle.go): registration, heartbeats every
//     broker.heartbeat.interval.ms carrying the applied metadata offset, registering
//     again after STALE_BROKER_EPOCH, and the controlled shutdown (Kafka's
//     BrokerLifecycleManager).
//   - Lease (lease.go): the node's right to answer as a partition leader or group or
//     transaction coordinator.
//   - TxnPeers (txn_peers.go): the transaction coordinator's RPCs to other nodes:
//     WriteTxnMarkers to a partition's leader, and the KIP-890 AddPartitionsToTxn check
//     of a transactional produce against the coordinator on another node. These go to
//     peers, not to the controller, but they are the same kind of code: node-to-node
//     Kafka requests built and read with kmsg, which internal/server must not hold.
//
// It must not hold partition or log state, decode requests it serves (internal/kafka
// does), or propose to Raft except through controller.Controller's methods on the
// active controller.
//
// Invariants:
//
//   - The lease rule. A heartbeat answered "unfenced and caught up" grants the lease
//     until the heartbeat's send time plus broker.session.timeout.ms; a fenced,
//     shutting-down or unregistered answer revokes it at once. The controller fences a
//     node only a session timeout after the last heartbeat it received, which is later
//     than the send time, so while the lease holds no fence has given this node's roles
//     to another node. The lease uses the monotonic clock: after a pause (SIGSTOP) it
//     has expired, and it holds again only after a heartbeat succeeds.
//   - Forwarding never loops. A request that reached this node from another node
//     (kafka.FromNode: the client id starts "runnel-node-", which the Channel's client
//     sends) is never forwarded again (mayForward): it is answered NOT_CONTROLLER, and
//     the sending node retries against the controller it rediscovers. The Channel never
//     sends to its own node (a stale Raft view that names this node while it no longer
//     leads waits for the new leader instead).
//   - A forwarded request is retried as a whole only when every item was refused with
//     NOT_CONTROLLER; otherwise each item keeps the controller's answer (matchAnswers)
//     and is not sent again.
//   - The image Admin settles on is the one applied to the local replicas
//     (replica.Leadership, fed in image order), never the controller's newer one:
//     metadata never names a partition this node cannot serve yet. Its offset only
//     grows.
//   - Every call has a deadline: the caller's, or channelDefaultTimeout (30 s); the
//     controlled shutdown waits at most controlledShutdownTimeout (30 s), and gives up
//     after heartbeats failed for a session timeout.
//   - Producer ids: a block granted by AllocateProducerIDs is used up in order,
//     pidNext <= pidEnd, under pidMu; a new block is asked for only when it is empty.
//
// Locks: Admin.mu (the applied image), Admin.pidMu, Channel.mu and TxnPeers.mu are
// leaves: none is held across a call to the controller or the network except pidMu,
// which is held while a new block is fetched so that two callers do not both fetch one.
package controlplane
