package server

import (
	"context"
	"time"

	"github.com/runnel-io/runnel/internal/controlplane"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/replica"
	"github.com/runnel-io/runnel/internal/txn"
)

// txnWiring holds the node's transaction coordinator and its RPCs to other nodes.
type txnWiring struct {
	coord *txn.Coordinator
	peers *controlplane.TxnPeers
}

func (n *Node) txnWiring() *txnWiring { return n.txns }

// startTxns creates the transaction coordinator and returns the replica hook that
// loads both coordinators' partitions (groups' from startGroups, then transactions').
func (n *Node) startTxns(groups func(p *replica.Partition, leader bool, leaderEpoch int32)) func(p *replica.Partition, leader bool, leaderEpoch int32) {
	w := &txnWiring{}
	w.peers = controlplane.NewTxnPeers(controlplane.TxnPeersConfig{
		Self: metadata.NodeID(n.cfg.NodeID), Image: n.leadership.Image, Network: n.network, PeerClient: n.peerClient,
		// startTxns runs before the replica manager and the Kafka server exist, and the
		// coordinator takes the peers' methods: read all three when called.
		WriteLocalMarker: func(ctx context.Context, tp metadata.TopicPartition, pid int64, epoch int16, coordinatorEpoch int32, commit bool) error {
			return n.kafka.WriteMarker(ctx, tp, pid, epoch, coordinatorEpoch, commit)
		},
		Partition:            func(tp metadata.TopicPartition) (*replica.Partition, error) { return n.replicas.Partition(tp) },
		CoordinatorPartition: func(txnID string) int32 { return w.coord.PartitionFor(txnID) },
	})
	abort := time.Duration(n.cfg.TransactionAbortIntervalMs) * time.Millisecond
	if n.txnAbort > 0 {
		abort = n.txnAbort // Options.TxnAbortInterval, for tests
	}
	w.coord = txn.NewCoordinator(txn.Config{
		Serving:            n.lease.Valid,
		MaxTimeout:         time.Duration(n.cfg.TransactionTimeoutMaxMs) * time.Millisecond,
		OffsetsPartitions:  n.cfg.OffsetsTopicNumPartitions,
		AbortInterval:      abort,
		AllocateProducerID: func(ctx context.Context) (int64, error) { return n.admin.AllocateProducerID(ctx) },
		Markers:            w.peers,
		RemoteVerify:       w.peers.Verify,
		RemoteAdd:          w.peers.Add,
		Logger:             n.logger,
	})
	n.txns = w
	return func(p *replica.Partition, leader bool, leaderEpoch int32) {
		groups(p, leader, leaderEpoch)
		w.coord.OnLeadershipChange(p, leader, leaderEpoch)
	}
}

// txnCoordinator is the node's coordinator, for the protocol server.
func (n *Node) txnCoordinator() *txn.Coordinator {
	if w := n.txnWiring(); w != nil {
		return w.coord
	}
	return nil
}

// closeTxns stops the coordinator and its clients; call it with closeGroups.
func (n *Node) closeTxns() error {
	w := n.txnWiring()
	if w == nil {
		return nil
	}
	err := w.coord.Close()
	w.peers.Close()
	return err
}
