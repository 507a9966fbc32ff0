package server

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/replica"
	"github.com/runnel-io/runnel/internal/txn"
)

// txnWiring holds the node's transaction coordinator and its broker-to-broker clients.
type txnWiring struct {
	coord *txn.Coordinator
	// mu guards clients and closed.
	mu      sync.Mutex
	clients map[string]*kgo.Client // by broker address
	closed  bool
}

func (n *Node) txnWiring() *txnWiring { return n.txns }

// startTxns creates the transaction coordinator and returns the replica hook that
// loads both coordinators' partitions (groups' from startGroups, then transactions').
func (n *Node) startTxns(groups func(p *replica.Partition, leader bool, leaderEpoch int32)) func(p *replica.Partition, leader bool, leaderEpoch int32) {
	w := &txnWiring{clients: map[string]*kgo.Client{}}
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
		Markers:            markerWriter{n: n, w: w},
		RemoteVerify:       remoteVerifier{n: n, w: w}.verify,
		RemoteAdd:          remoteVerifier{n: n, w: w}.add,
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
	w.mu.Lock()
	w.closed = true
	for _, cl := range w.clients {
		cl.Close()
	}
	w.mu.Unlock()
	return err
}

// markerWriter writes markers through the local replica or the leader's
// WriteTxnMarkers.
type markerWriter struct {
	n *Node
	w *txnWiring
}

func (m markerWriter) WriteMarker(ctx context.Context, tp metadata.TopicPartition, pid int64, epoch int16, coordinatorEpoch int32, commit bool) error {
	im := m.n.admin.Image()
	t := im.Topics[tp.Topic]
	if t == nil || int(tp.Partition) >= len(t.Partitions) {
		return fmt.Errorf("%w: %s-%d", replica.ErrUnknownTopicOrPartition, tp.Topic, tp.Partition)
	}
	leader := t.Partitions[tp.Partition].Leader
	if leader == metadata.NodeID(m.n.cfg.NodeID) {
		return m.n.kafka.WriteMarker(ctx, tp, pid, epoch, coordinatorEpoch, commit)
	}
	b, ok := im.Brokers[leader]
	if !ok {
		return fmt.Errorf("%w: %s-%d has no leader", replica.ErrNotLeader, tp.Topic, tp.Partition)
	}
	cl, err := m.w.client(b.Host+":"+strconv.Itoa(int(b.Port)), m.n.cfg.NodeID)
	if err != nil {
		return err
	}
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	mk := kmsg.NewWriteTxnMarkersRequestMarker()
	mk.ProducerID, mk.ProducerEpoch, mk.Committed, mk.CoordinatorEpoch = pid, epoch, commit, coordinatorEpoch
	rt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	rt.Topic, rt.Partitions = tp.Topic, []int32{tp.Partition}
	mk.Topics = append(mk.Topics, rt)
	req.Markers = append(req.Markers, mk)
	kresp, err := cl.Broker(int(leader)).Request(ctx, req)
	if err != nil {
		return err
	}
	resp := kresp.(*kmsg.WriteTxnMarkersResponse)
	for _, rm := range resp.Markers {
		for _, t := range rm.Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// client returns the kgo client of a broker address, created on first use.
func (w *txnWiring) client(addr string, self int32) (*kgo.Client, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, txn.ErrNotCoordinator
	}
	if cl := w.clients[addr]; cl != nil {
		return cl, nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID("runnel-txn-"+strconv.Itoa(int(self))), kgo.RequestRetries(0))
	if err != nil {
		return nil, err
	}
	w.clients[addr] = cl
	return cl, nil
}

// remoteVerifier is txn.Config.RemoteVerify and RemoteAdd: the KIP-890 check of a
// transactional produce (or TxnOffsetCommit) whose transaction coordinator is on
// another node, through that node's AddPartitionsToTxn v4+ with VerifyOnly
// (transaction version 1), or the implicit add of the partition without it
// (transaction version 2). Only the producer's first write of a transaction to a
// partition needs it: once the partition's log holds an ongoing transaction of the
// producer at this epoch, the partition is in that transaction (a late write after
// the marker finds no ongoing transaction, or a bumped epoch, and is checked).
type remoteVerifier struct {
	n *Node
	w *txnWiring
}

func (v remoteVerifier) verify(ctx context.Context, txnID string, pid int64, epoch int16, tp metadata.TopicPartition) error {
	return v.ask(ctx, txnID, pid, epoch, tp, true)
}

func (v remoteVerifier) add(ctx context.Context, txnID string, pid int64, epoch int16, tp metadata.TopicPartition) error {
	return v.ask(ctx, txnID, pid, epoch, tp, false)
}

func (v remoteVerifier) ask(ctx context.Context, txnID string, pid int64, epoch int16, tp metadata.TopicPartition, verifyOnly bool) error {
	if v.ongoingHere(tp, pid, epoch) {
		return nil
	}
	im := v.n.admin.Image()
	t := im.Topics[txn.StateTopic]
	part := v.w.coord.PartitionFor(txnID)
	if t == nil || int(part) >= len(t.Partitions) {
		return fmt.Errorf("%w: %s has no partition %d", txn.ErrCoordinatorNotAvailable, txn.StateTopic, part)
	}
	leader := t.Partitions[part].Leader
	b, ok := im.Brokers[leader]
	if !ok || leader == metadata.NodeID(v.n.cfg.NodeID) {
		// No leader, or this node leads but has not loaded the partition yet.
		return fmt.Errorf("%w: coordinator of %q not ready", txn.ErrCoordinatorNotAvailable, txnID)
	}
	cl, err := v.w.client(b.Host+":"+strconv.Itoa(int(b.Port)), v.n.cfg.NodeID)
	if err != nil {
		return err
	}
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	rt := kmsg.NewAddPartitionsToTxnRequestTransaction()
	rt.TransactionalID, rt.ProducerID, rt.ProducerEpoch, rt.VerifyOnly = txnID, pid, epoch, verifyOnly
	rtt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
	rtt.Topic, rtt.Partitions = tp.Topic, []int32{tp.Partition}
	rt.Topics = append(rt.Topics, rtt)
	req.Transactions = append(req.Transactions, rt)
	kresp, err := cl.Broker(int(leader)).Request(ctx, req)
	if err != nil {
		return fmt.Errorf("%w: verify with node %d: %v", txn.ErrCoordinatorNotAvailable, leader, err)
	}
	resp := kresp.(*kmsg.AddPartitionsToTxnResponse)
	code := resp.ErrorCode
	for _, t := range resp.Transactions {
		for _, rt := range t.Topics {
			for _, p := range rt.Partitions {
				code = max(code, p.ErrorCode)
			}
		}
	}
	if code == 0 && len(resp.Transactions) == 0 {
		return fmt.Errorf("%w: node %d answered AddPartitionsToTxn v%d without transactions", txn.ErrCoordinatorNotAvailable, leader, resp.Version)
	}
	return verifyError(code)
}

// ongoingHere reports whether tp's local log has an ongoing transaction of pid at
// epoch.
func (v remoteVerifier) ongoingHere(tp metadata.TopicPartition, pid int64, epoch int16) bool {
	p, err := v.n.replicas.Partition(tp)
	if err != nil {
		return false
	}
	l := p.Log()
	if e, _, ok := l.ProducerState(pid); !ok || e != epoch {
		return false
	}
	_, ongoing := l.OngoingTransactions()[pid]
	return ongoing
}

// verifyError maps a remote coordinator's answer to the coordinator's errors, so that
// the produce path answers as for a local one; coordinator moves and loads are
// retriable.
func verifyError(code int16) error {
	err := kerr.ErrorForCode(code)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, kerr.InvalidTxnState):
		return txn.ErrInvalidTxnState
	case errors.Is(err, kerr.ProducerFenced), errors.Is(err, kerr.InvalidProducerEpoch):
		return txn.ErrProducerFenced
	case errors.Is(err, kerr.InvalidProducerIDMapping):
		return txn.ErrInvalidProducerIDMapping
	case errors.Is(err, kerr.ConcurrentTransactions):
		return txn.ErrConcurrentTransactions
	}
	return fmt.Errorf("%w: %v", txn.ErrCoordinatorNotAvailable, err)
}
