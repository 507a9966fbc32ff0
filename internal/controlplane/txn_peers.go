package controlplane

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

	"github.com/runnel-io/runnel/internal/kafka"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/nodenet"
	"github.com/runnel-io/runnel/internal/replica"
	"github.com/runnel-io/runnel/internal/txn"
)

// TxnPeersConfig configures TxnPeers.
type TxnPeersConfig struct {
	// Self is this node's id.
	Self metadata.NodeID
	// Image is the metadata applied to the local replicas (replica.Leadership.Image), which names
	// each partition's leader.
	Image func() *metadata.Image
	// WriteLocalMarker writes a marker to a partition this node leads
	// (kafka.Server.WriteMarker).
	WriteLocalMarker func(ctx context.Context, tp metadata.TopicPartition, pid int64, epoch int16, coordinatorEpoch int32, commit bool) error
	// Partition looks up a local replica (replica.Manager.Partition).
	Partition func(tp metadata.TopicPartition) (*replica.Partition, error)
	// CoordinatorPartition is the __transaction_state partition of a transactional id
	// (txn.Coordinator.PartitionFor). The three functions are called only when a
	// marker or a check is sent, so they may read parts made after TxnPeers (the
	// coordinator takes TxnPeers' methods).
	CoordinatorPartition func(txnID string) int32
	// Network is where peers are dialled; nil is the host's TCP stack. Tests give a
	// nodenet.Mem host.
	Network nodenet.Network
	// PeerClient, when set, gives the dialer (on Network, with TLS) and SASL login for
	// the peers' inter-broker listener (kafka.PeerClient); nil dials plaintext.
	PeerClient kafka.PeerClient
}

// TxnPeers is the transaction coordinator's RPCs to other nodes: WriteTxnMarkers to a
// partition's leader (txn.Config.Markers) and the KIP-890 AddPartitionsToTxn check of
// a transactional produce against the coordinator on another node
// (txn.Config.RemoteVerify, RemoteAdd).
//
// It keeps two kgo clients per peer address, so markers and checks never share a
// connection. A peer runs a connection's requests one after another (kafka's
// per-connection order), and a check can wait at the coordinator for the entry lock
// that the coordinator holds while it writes that transaction's markers. Were a
// marker queued behind a check on one connection, two nodes each writing markers to
// the other while the other's checks wait for those same markers would wait on each
// other until the marker round timed out, and again at every retry (their producers
// would get CONCURRENT_TRANSACTIONS without end). A marker
// waits for nothing that waits for a check, so on their own connection markers
// always progress, and every check waits for at most one marker round.
type TxnPeers struct {
	cfg TxnPeersConfig // immutable

	mu      sync.Mutex               // guards clients and closed
	clients map[peerConn]*kgo.Client // by broker address and use
	closed  bool
}

// peerConn names one of the clients of a peer: the markers' or the checks'.
type peerConn struct {
	addr    string
	markers bool
}

// NewTxnPeers returns TxnPeers; Close closes its clients.
func NewTxnPeers(cfg TxnPeersConfig) *TxnPeers {
	return &TxnPeers{cfg: cfg, clients: map[peerConn]*kgo.Client{}}
}

// Close closes every client; later calls fail with txn.ErrNotCoordinator.
func (peers *TxnPeers) Close() {
	peers.mu.Lock()
	defer peers.mu.Unlock()
	peers.closed = true
	for _, cl := range peers.clients {
		cl.Close()
	}
}

// WriteMarker implements txn.MarkerWriter: through the local replica when this node
// leads tp, else with the leader's WriteTxnMarkers.
func (peers *TxnPeers) WriteMarker(ctx context.Context, tp metadata.TopicPartition, pid int64, epoch int16, coordinatorEpoch int32, commit bool) error {
	im := peers.cfg.Image()
	t := im.Topics[tp.Topic]
	if t == nil || int(tp.Partition) >= len(t.Partitions) {
		return fmt.Errorf("%w: %s-%d", replica.ErrUnknownTopicOrPartition, tp.Topic, tp.Partition)
	}
	leader := t.Partitions[tp.Partition].Leader
	if leader == peers.cfg.Self {
		return peers.cfg.WriteLocalMarker(ctx, tp, pid, epoch, coordinatorEpoch, commit)
	}
	b, ok := im.Brokers[leader]
	if !ok {
		return fmt.Errorf("%w: %s-%d has no leader", replica.ErrNotLeader, tp.Topic, tp.Partition)
	}
	cl, err := peers.client(peerConn{addr: b.Addr(), markers: true})
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

// client returns the kgo client of a broker address and use, created on first use.
func (peers *TxnPeers) client(pc peerConn) (*kgo.Client, error) {
	peers.mu.Lock()
	defer peers.mu.Unlock()
	if peers.closed {
		return nil, txn.ErrNotCoordinator
	}
	if cl := peers.clients[pc]; cl != nil {
		return cl, nil
	}
	const dialTimeout = 10 * time.Second // kgo's default
	opts := []kgo.Opt{kgo.SeedBrokers(pc.addr), kgo.ClientID("runnel-txn-" + strconv.Itoa(int(peers.cfg.Self))), kgo.RequestRetries(0)}
	if peers.cfg.PeerClient != nil {
		opts = append(opts, peers.cfg.PeerClient(dialTimeout)...)
	} else {
		opts = append(opts, kgo.Dialer(nodenet.Dialer(peers.cfg.Network, dialTimeout))) // nil (kgo's own) on the host's network
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	peers.clients[pc] = cl
	return cl, nil
}

// Verify is txn.Config.RemoteVerify and Add is txn.Config.RemoteAdd: the KIP-890
// check of a transactional produce (or TxnOffsetCommit) whose transaction coordinator
// is on another node, through that node's AddPartitionsToTxn v4+ with VerifyOnly
// (transaction version 1), or the implicit add of the partition without it
// (transaction version 2). Only the producer's first write of a transaction to a
// partition needs it: once the partition's log holds an ongoing transaction of the
// producer at this epoch, the partition is in that transaction (a late write after
// the marker finds no ongoing transaction, or a bumped epoch, and is checked).
func (peers *TxnPeers) Verify(ctx context.Context, txnID string, pid int64, epoch int16, tp metadata.TopicPartition) error {
	return peers.ask(ctx, txnID, pid, epoch, tp, true)
}

// Add: see Verify.
func (peers *TxnPeers) Add(ctx context.Context, txnID string, pid int64, epoch int16, tp metadata.TopicPartition) error {
	return peers.ask(ctx, txnID, pid, epoch, tp, false)
}

func (peers *TxnPeers) ask(ctx context.Context, txnID string, pid int64, epoch int16, tp metadata.TopicPartition, verifyOnly bool) error {
	if peers.ongoingHere(tp, pid, epoch) {
		return nil
	}
	im := peers.cfg.Image()
	t := im.Topics[txn.StateTopic]
	part := peers.cfg.CoordinatorPartition(txnID)
	if t == nil || int(part) >= len(t.Partitions) {
		return fmt.Errorf("%w: %s has no partition %d", txn.ErrCoordinatorNotAvailable, txn.StateTopic, part)
	}
	leader := t.Partitions[part].Leader
	b, ok := im.Brokers[leader]
	if !ok || leader == peers.cfg.Self {
		// No leader, or this node leads but has not loaded the partition yet.
		return fmt.Errorf("%w: coordinator of %q not ready", txn.ErrCoordinatorNotAvailable, txnID)
	}
	cl, err := peers.client(peerConn{addr: b.Addr()})
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
func (peers *TxnPeers) ongoingHere(tp metadata.TopicPartition, pid int64, epoch int16) bool {
	p, err := peers.cfg.Partition(tp)
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
