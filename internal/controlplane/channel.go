package controlplane

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/controller"
	"github.com/runnel-io/runnel/internal/kafka"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/nodenet"
)

// Retry pacing of the controller channel while the controller is unknown or moving.
const (
	channelBackoffMin  = 25 * time.Millisecond
	channelBackoffMax  = 500 * time.Millisecond
	channelDialTimeout = 2 * time.Second
	// channelDefaultTimeout bounds a call whose context has no deadline.
	channelDefaultTimeout = 30 * time.Second
)

// Channel carries this node's requests to the active controller (Kafka's
// NodeToControllerChannelManager): straight into the local Controller when this node
// is the active controller, otherwise as Kafka requests (kmsg) to the active
// controller's Kafka listener, found with Controller.ControllerAddr. Every call
// retries NOT_CONTROLLER and connection failures, rediscovering the controller, until
// its context ends. Errors wrap the *kerr.Error of the answer (errors.Is(err,
// kerr.StaleBrokerEpoch), ...); ErrClosed after close.
type Channel struct {
	ctrl   *controller.Controller
	local  localAPI
	logger *slog.Logger
	self   metadata.NodeID
	// peerClient gives the dialer and SASL login for the controller's inter-broker
	// listener (SetPeerClient); nil dials plaintext. Set before the first call.
	peerClient kafka.PeerClient
	// brokerEpoch is this node's current registration epoch, -1 before the first one.
	// Set by the broker lifecycle; sent in AlterPartition and AllocateProducerIDs.
	brokerEpoch atomic.Int64

	mu sync.Mutex // guards the fields below
	// addr is the Kafka address the clients talk to; a lane's client is nil until its
	// first remote call.
	addr    string
	clients [numLanes]*kgo.Client
	closed  bool
}

// A lane is one connection to the active controller, as Kafka's broker keeps one
// channel manager per purpose. The controller serves a connection's requests one at a
// time in the order sent (Kafka's per-connection order), so a request that waits on
// another node must not share a connection with what that wait depends on: a
// forwarded admin request answers once every live node has applied its change, which
// the nodes report in their heartbeats, so a heartbeat queued behind it on one
// connection would hold it up until the node was fenced.
type lane int

const (
	laneLifecycle lane = iota // BrokerRegistration, BrokerHeartbeat
	lanePartition             // AlterPartition, AllocateProducerIds: this node's own state
	laneForward               // admin requests forwarded for clients (KIP-590)
	numLanes
)

// laneOf is the lane of a request.
func laneOf(req kmsg.Request) lane {
	switch req.Key() {
	case 62, 63:
		return laneLifecycle
	case 56, 67:
		return lanePartition
	}
	return laneForward
}

func NewChannel(c *controller.Controller, self metadata.NodeID, logger *slog.Logger) *Channel {
	ch := &Channel{ctrl: c, local: localAPI{c}, logger: logger, self: self}
	ch.brokerEpoch.Store(-1)
	return ch
}

// SetPeerClient makes the channel dial the controller's inter-broker listener with
// pc's options (TLS, SASL). Call it before the first call.
func (ch *Channel) SetPeerClient(pc kafka.PeerClient) { ch.peerClient = pc }

// errChannelClosed is returned by calls on a closed channel.
var errChannelClosed = fmt.Errorf("%w: controller channel closed", controller.ErrClosed)

// Close drops the client; later calls fail with errChannelClosed.
func (ch *Channel) Close() {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ch.closed = true
	for i, cl := range ch.clients {
		if cl != nil {
			cl.Close()
			ch.clients[i] = nil
		}
	}
}

// IsLocal reports whether requests go straight to the local controller.
func (ch *Channel) IsLocal() bool { return ch.ctrl.IsLeader() }

// send sends req to the active controller's Kafka listener.
func (ch *Channel) send(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	id, addr, err := ch.ctrl.ControllerAddr(ctx)
	if err != nil {
		return nil, err
	}
	if id == ch.self && !ch.ctrl.IsLeader() {
		// This node's Raft view is stale (it led a moment ago): sending to itself would
		// forward the request again, so wait for the new leader instead.
		return nil, fmt.Errorf("%w: this node is between leaderships", kerr.NotController)
	}
	l := laneOf(req)
	cl, err := ch.clientFor(addr, l)
	if err != nil {
		return nil, err
	}
	seeds := cl.SeedBrokers()
	if len(seeds) == 0 {
		return nil, fmt.Errorf("controller channel: no seed broker for %s", addr)
	}
	resp, err := seeds[0].Request(ctx, req)
	if err != nil && ctx.Err() == nil {
		ch.drop(l, cl) // a dead connection: dial afresh next time
	}
	return resp, err
}

// clientFor returns lane l's client for addr; a new address replaces every lane's.
func (ch *Channel) clientFor(addr string, l lane) (*kgo.Client, error) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.closed {
		return nil, errChannelClosed
	}
	if ch.addr != addr {
		for i, cl := range ch.clients {
			if cl != nil {
				cl.Close()
				ch.clients[i] = nil
			}
		}
		ch.addr = addr
	}
	if cl := ch.clients[l]; cl != nil {
		return cl, nil
	}
	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.ClientID("runnel-node-" + strconv.Itoa(int(ch.self))),
		kgo.DialTimeout(channelDialTimeout), kgo.RequestRetries(0)}
	if ch.peerClient != nil {
		opts = append(opts, ch.peerClient(channelDialTimeout)...)
	} else {
		opts = append(opts, kgo.Dialer(nodenet.Dialer(ch.ctrl.Network(), channelDialTimeout))) // nil (kgo's own) on the host's network
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("controller channel to %s: %w", addr, err)
	}
	ch.clients[l] = cl
	return cl, nil
}

func (ch *Channel) drop(l lane, cl *kgo.Client) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.clients[l] == cl {
		cl.Close()
		ch.clients[l] = nil
	}
}

// do runs attempt until it succeeds, fails with an error that is not about reaching
// the controller, or ctx ends (channelDefaultTimeout when ctx has no deadline).
func (ch *Channel) do(ctx context.Context, what string, attempt func(ctx context.Context) error) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, channelDefaultTimeout)
		defer cancel()
	}
	backoff := channelBackoffMin
	for {
		err := attempt(ctx)
		if err == nil || !retriable(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %s: %w (last error: %v)", kerr.RequestTimedOut, what, ctx.Err(), err)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, channelBackoffMax)
	}
}

// retriable: the controller moved, is not known yet, or could not be reached (any
// error that is not a Kafka answer). Other Kafka errors are the answer.
func retriable(err error) bool {
	var ke *kerr.Error
	switch {
	case errors.Is(err, controller.ErrClosed), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return false
	case errors.Is(err, kerr.NotController), errors.Is(err, controller.ErrNotController):
		return true
	case errors.As(err, &ke):
		return false
	}
	return true
}

// registerBroker sends a BrokerRegistration.
func (ch *Channel) registerBroker(ctx context.Context, r kafka.BrokerRegistration) (int64, error) {
	var epoch int64
	err := ch.do(ctx, "broker registration", func(ctx context.Context) error {
		if ch.IsLocal() {
			var err error
			epoch, err = ch.local.RegisterBroker(ctx, r)
			return err
		}
		req := kmsg.NewPtrBrokerRegistrationRequest()
		req.BrokerID, req.ClusterID = int32(r.ID), r.ClusterID
		// KIP-966: -1 says the previous run did not shut down cleanly. Runnel does not
		// keep the previous epoch; any other value says it did.
		req.PreviousBrokerEpoch = 0
		if r.UncleanShutdown {
			req.PreviousBrokerEpoch = -1
		}
		hex.Decode(req.IncarnationID[:], []byte(r.IncarnationID))
		if r.Rack != "" {
			req.Rack = kmsg.StringPtr(r.Rack)
		}
		// The inter-broker endpoint first: the controller takes the first as the one
		// other nodes dial (62_broker_registration.go).
		for _, e := range r.Endpoints {
			req.Listeners = append(req.Listeners, listener(e.Name, e.Host, e.Port, e.SecurityProtocol))
		}
		if len(r.Endpoints) == 0 {
			req.Listeners = append(req.Listeners, listener("PLAINTEXT", r.Host, r.Port, 0))
		}
		if host, port, err := splitAddr(r.RaftAddr); err == nil {
			req.Listeners = append(req.Listeners, listener(kafka.ControllerListenerName, host, port, 0))
		}
		resp, err := ch.send(ctx, req)
		if err != nil {
			return err
		}
		rr := resp.(*kmsg.BrokerRegistrationResponse)
		epoch = rr.BrokerEpoch
		return kerr.ErrorForCode(rr.ErrorCode)
	})
	return epoch, err
}

func listener(name, host string, port int32, protocol int16) kmsg.BrokerRegistrationRequestListener {
	l := kmsg.NewBrokerRegistrationRequestListener()
	l.Name, l.Host, l.Port, l.SecurityProtocol = name, host, uint16(port), protocol
	return l
}

func splitAddr(addr string) (string, int32, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	return host, int32(port), err
}

// heartbeat sends one BrokerHeartbeat.
func (ch *Channel) heartbeat(ctx context.Context, hb kafka.BrokerHeartbeat) (kafka.BrokerHeartbeatReply, error) {
	var reply kafka.BrokerHeartbeatReply
	err := ch.do(ctx, "broker heartbeat", func(ctx context.Context) error {
		if ch.IsLocal() {
			var err error
			reply, err = ch.local.BrokerHeartbeat(ctx, hb)
			return err
		}
		req := kmsg.NewPtrBrokerHeartbeatRequest()
		req.BrokerID, req.BrokerEpoch, req.CurrentMetadataOffset = int32(hb.ID), hb.Epoch, hb.MetadataOffset
		req.WantFence, req.WantShutdown = hb.WantFence, hb.WantShutdown
		if hb.DiskFull {
			req.OfflineLogDirs = [][16]byte{kafka.DataDirID}
		}
		if len(hb.Damaged) > 0 {
			kafka.SetJSONTag(&req.UnknownTags, kafka.DamagedReplicasTag, hb.Damaged)
		}
		resp, err := ch.send(ctx, req)
		if err != nil {
			return err
		}
		hr := resp.(*kmsg.BrokerHeartbeatResponse)
		reply = kafka.BrokerHeartbeatReply{IsCaughtUp: hr.IsCaughtUp, IsFenced: hr.IsFenced, ShouldShutdown: hr.ShouldShutdown}
		return kerr.ErrorForCode(hr.ErrorCode)
	})
	return reply, err
}

// AlterPartition implements replica.IsrChanger: it proposes newISR for tp, led by
// leader at the given epochs, and returns the partition's new state. Errors wrap the
// partition's Kafka error: kerr.FencedLeaderEpoch, kerr.InvalidUpdateVersion (wait for
// newer metadata), kerr.IneligibleReplica, kerr.InvalidRequest,
// kerr.UnknownTopicOrPartition; kerr.RequestTimedOut when ctx ends first.
func (ch *Channel) AlterPartition(ctx context.Context, tp metadata.TopicPartition, leader metadata.NodeID,
	leaderEpoch, partitionEpoch int32, newISR []metadata.NodeID) (metadata.Partition, error) {
	var out metadata.Partition
	err := ch.do(ctx, "alter partition", func(ctx context.Context) error {
		if ch.IsLocal() {
			var err error
			out, err = ch.local.AlterPartition(ctx, tp, leader, leaderEpoch, partitionEpoch, newISR)
			return err
		}
		var err error
		out, err = ch.alterPartitionRemote(ctx, tp, leader, leaderEpoch, partitionEpoch, newISR)
		return err
	})
	return out, err
}

func (ch *Channel) alterPartitionRemote(ctx context.Context, tp metadata.TopicPartition, leader metadata.NodeID,
	leaderEpoch, partitionEpoch int32, newISR []metadata.NodeID) (metadata.Partition, error) {
	im := ch.ctrl.Image()
	req := kmsg.NewPtrAlterPartitionRequest()
	req.BrokerID, req.BrokerEpoch = int32(leader), ch.brokerEpoch.Load()
	rt := kmsg.NewAlterPartitionRequestTopic()
	rt.Topic = tp.Topic
	if t := im.Topics[tp.Topic]; t != nil {
		rt.TopicID = t.ID
	}
	rp := kmsg.NewAlterPartitionRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch = tp.Partition, leaderEpoch, partitionEpoch
	for _, id := range newISR {
		rp.NewISR = append(rp.NewISR, int32(id))
		m := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
		m.BrokerID, m.BrokerEpoch = int32(id), -1
		rp.NewEpochISR = append(rp.NewEpochISR, m)
	}
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := ch.send(ctx, req)
	if err != nil {
		return metadata.Partition{}, err
	}
	ar := resp.(*kmsg.AlterPartitionResponse)
	if err := kerr.ErrorForCode(ar.ErrorCode); err != nil {
		return metadata.Partition{}, err
	}
	if len(ar.Topics) != 1 || len(ar.Topics[0].Partitions) != 1 {
		return metadata.Partition{}, fmt.Errorf("%w: AlterPartition answer without %s-%d", kerr.UnknownServerError, tp.Topic, tp.Partition)
	}
	sp := ar.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(sp.ErrorCode); err != nil {
		return metadata.Partition{}, fmt.Errorf("%w: alter ISR of %s-%d to %v", err, tp.Topic, tp.Partition, newISR)
	}
	p, _ := im.Partition(tp)
	out := metadata.Partition{Replicas: p.Replicas, Leader: metadata.NodeID(sp.LeaderID),
		LeaderEpoch: sp.LeaderEpoch, PartitionEpoch: sp.PartitionEpoch}
	for _, id := range sp.ISR {
		out.ISR = append(out.ISR, metadata.NodeID(id))
	}
	return out, nil
}

// allocateProducerIDs asks for a block of producer ids.
func (ch *Channel) allocateProducerIDs(ctx context.Context) (start int64, n int32, err error) {
	err = ch.do(ctx, "allocate producer ids", func(ctx context.Context) error {
		if ch.IsLocal() {
			var err error
			start, n, err = ch.local.AllocateProducerIDs(ctx, ch.self, ch.brokerEpoch.Load())
			return err
		}
		req := kmsg.NewPtrAllocateProducerIDsRequest()
		req.BrokerID, req.BrokerEpoch = int32(ch.self), ch.brokerEpoch.Load()
		resp, err := ch.send(ctx, req)
		if err != nil {
			return err
		}
		ar := resp.(*kmsg.AllocateProducerIDsResponse)
		start, n = ar.ProducerIDStart, ar.ProducerIDLen
		return kerr.ErrorForCode(ar.ErrorCode)
	})
	return start, n, err
}

// localAPI implements kafka.ControllerAPI over the local controller, with the
// controller's errors wrapped in their Kafka errors.
type localAPI struct{ ctrl *controller.Controller }

var _ kafka.ControllerAPI = localAPI{}

// LocalAPI is the controller side of the broker-to-controller APIs (AlterPartition,
// BrokerRegistration, BrokerHeartbeat, AllocateProducerIDs) over this node's
// controller, for kafka.Server.SetControllerAPI. On a node that is not the active
// controller every call fails with NOT_CONTROLLER.
func LocalAPI(c *controller.Controller) kafka.ControllerAPI { return localAPI{c} }

func (a localAPI) RegisterBroker(ctx context.Context, r kafka.BrokerRegistration) (int64, error) {
	epoch, err := a.ctrl.RegisterBroker(ctx, controller.Registration{
		Broker:        metadata.Broker{ID: r.ID, Host: r.Host, Port: r.Port, Endpoints: r.Endpoints, Rack: r.Rack},
		IncarnationID: r.IncarnationID, ClusterID: r.ClusterID, RaftAddr: r.RaftAddr,
		UncleanShutdown: r.UncleanShutdown,
	})
	return epoch, kafka.WithCode(err)
}

func (a localAPI) BrokerHeartbeat(ctx context.Context, hb kafka.BrokerHeartbeat) (kafka.BrokerHeartbeatReply, error) {
	reply, err := a.ctrl.BrokerHeartbeat(ctx, controller.Heartbeat{
		ID: hb.ID, Epoch: hb.Epoch, MetadataOffset: uint64(max(hb.MetadataOffset, 0)), WantShutdown: hb.WantShutdown,
		DiskFull: hb.DiskFull, Damaged: hb.Damaged,
	})
	return kafka.BrokerHeartbeatReply{IsCaughtUp: reply.IsCaughtUp, IsFenced: reply.IsFenced, ShouldShutdown: reply.ShouldShutdown},
		kafka.WithCode(err)
}

func (a localAPI) AlterPartition(ctx context.Context, tp metadata.TopicPartition, leader metadata.NodeID,
	leaderEpoch, partitionEpoch int32, newISR []metadata.NodeID) (metadata.Partition, error) {
	p, err := a.ctrl.AlterPartition(ctx, tp, leader, leaderEpoch, partitionEpoch, newISR)
	return p, kafka.WithCode(err)
}

func (a localAPI) AllocateProducerIDs(ctx context.Context, broker metadata.NodeID, brokerEpoch int64) (int64, int32, error) {
	start, n, err := a.ctrl.AllocateProducerIDBlock(ctx, broker, brokerEpoch)
	return start, n, kafka.WithCode(err)
}
