package controlplane

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/runnel-io/runnel/internal/controller"
	"github.com/runnel-io/runnel/internal/kafka"
	"github.com/runnel-io/runnel/internal/metadata"
)

const (
	// controlledShutdownTimeout bounds the wait for the controller to move this node's
	// leadership away, so that a node that cannot reach any controller still stops.
	controlledShutdownTimeout = 30 * time.Second
	// fencedHeartbeatInterval paces heartbeats while this node is fenced, so that it is
	// unfenced as soon as it has caught up rather than a whole interval later.
	fencedHeartbeatInterval = 50 * time.Millisecond
	// failedHeartbeatRetry paces heartbeats while the controller cannot be reached.
	failedHeartbeatRetry = 250 * time.Millisecond
)

// LifecycleConfig configures a Lifecycle.
type LifecycleConfig struct {
	// Registration describes this node (its advertised Kafka address, rack, Raft
	// address, a new incarnation id).
	Registration kafka.BrokerRegistration
	// Controller is this node's controller: StartLifecycle waits until it is in the
	// quorum, ControlledShutdown hands its Raft leadership over.
	Controller *controller.Controller
	// Admin gives the channel to the active controller and the image applied to the
	// local replicas (whose offset each heartbeat reports).
	Admin *Admin
	// Lease is granted and revoked by the heartbeats' answers.
	Lease *Lease
	// Interval is broker.heartbeat.interval.ms (2 s when not positive).
	Interval time.Duration
	// SessionTimeout is broker.session.timeout.ms: the lease a heartbeat grants, and
	// how long heartbeats may fail before ControlledShutdown stops waiting.
	SessionTimeout time.Duration
	// DiskFull reports whether the data disk is full (sent in every heartbeat).
	DiskFull func() bool
	// Damaged lists this node's replicas whose logs hold a damaged range, sorted by
	// metadata.SortDamage (sent in every heartbeat); nil: none.
	Damaged func() []metadata.DamagedReplica
	Logger  *slog.Logger
}

// Lifecycle is this node's life as a broker as the active controller sees it
// (Kafka's BrokerLifecycleManager): it registers at start, heartbeats every
// broker.heartbeat.interval.ms with the offset of the metadata it has applied,
// registers again when the controller no longer knows its epoch, and runs the
// controlled shutdown. It works the same on the active controller (the channel calls
// the local Controller) and on every other node.
type Lifecycle struct {
	ctrl     *controller.Controller
	admin    *Admin
	ch       *Channel
	logger   *slog.Logger
	reg      kafka.BrokerRegistration // immutable
	interval time.Duration
	diskFull func() bool
	damaged  func() []metadata.DamagedReplica

	// wantShutdown is set by ControlledShutdown; heartbeats then carry WantShutdown.
	wantShutdown atomic.Bool
	// failingSince is when heartbeats started failing (UnixNano), 0 while they succeed.
	failingSince atomic.Int64
	// sessionTimeout is broker.session.timeout.ms: after failing that long, this node
	// has been fenced (or there is no controller), so shutdown stops waiting.
	sessionTimeout time.Duration
	wake           chan struct{} // capacity 1: sends the next heartbeat at once
	// lease is granted and revoked by the heartbeats' answers (lease.go).
	lease *Lease
	// leaseHeld is the lease's validity last logged; only the heartbeat loop uses it.
	leaseHeld bool
	// shutdownOK is closed when the controller answers ShouldShutdown.
	shutdownOK   chan struct{}
	shutdownOnce sync.Once

	ctx    context.Context // the heartbeat loop's; cancel stops it
	cancel context.CancelFunc
	done   chan struct{} // closed when the heartbeat loop has returned
}

// StartLifecycle registers this node with the active controller, waits until it is
// in the quorum (a node joining as a non-voter catches up here) and starts the
// heartbeat loop. Call AwaitUnfenced next; Stop or ControlledShutdown ends the loop.
func StartLifecycle(ctx context.Context, cfg LifecycleConfig) (*Lifecycle, error) {
	lctx, cancel := context.WithCancel(context.Background())
	l := &Lifecycle{ctrl: cfg.Controller, admin: cfg.Admin, ch: cfg.Admin.ch,
		logger: cfg.Logger.With("component", "broker-lifecycle"), reg: cfg.Registration,
		interval: cfg.Interval, sessionTimeout: cfg.SessionTimeout, diskFull: cfg.DiskFull, damaged: cfg.Damaged,
		wake: make(chan struct{}, 1), shutdownOK: make(chan struct{}), ctx: lctx, cancel: cancel, done: make(chan struct{}),
		lease: cfg.Lease}
	if l.interval <= 0 {
		l.interval = 2 * time.Second
	}
	if err := l.register(ctx); err != nil {
		cancel()
		return nil, err
	}
	if err := l.ctrl.WaitReady(ctx); err != nil {
		cancel()
		return nil, fmt.Errorf("node %d joining the metadata quorum: %w", l.reg.ID, err)
	}
	go l.run()
	return l, nil
}

// AwaitUnfenced returns once this node's own image shows it registered with its
// current epoch and unfenced.
func (l *Lifecycle) AwaitUnfenced(ctx context.Context) error {
	err := l.admin.view.WaitFor(ctx, func(im *metadata.Image) bool {
		b, ok := im.Brokers[l.reg.ID]
		return ok && b.Epoch == l.ch.brokerEpoch.Load() && !b.Fenced
	})
	if err != nil {
		return fmt.Errorf("node %d waiting to be unfenced by the controller: %w", l.reg.ID, err)
	}
	return nil
}

// register sends the registration until the controller accepts it.
func (l *Lifecycle) register(ctx context.Context) error {
	epoch, err := l.ch.registerBroker(ctx, l.reg)
	if err != nil {
		return fmt.Errorf("register node %d with the controller: %w", l.reg.ID, err)
	}
	l.ch.brokerEpoch.Store(epoch)
	l.logger.Info("registered with the controller", "epoch", epoch)
	return nil
}

// run is the heartbeat loop; it returns when cancel is called.
func (l *Lifecycle) run() {
	defer close(l.done)
	// The first heartbeat can only unfence this node once its image holds the
	// registration; wait for that rather than a whole interval.
	wctx, cancel := context.WithTimeout(l.ctx, l.interval)
	l.admin.view.WaitFor(wctx, func(im *metadata.Image) bool { return im.Brokers[l.reg.ID].Epoch >= l.ch.brokerEpoch.Load() })
	cancel()
	for {
		next := l.beat()
		t := time.NewTimer(next)
		select {
		case <-t.C:
		case <-l.wake:
			t.Stop()
		case <-l.ctx.Done():
			t.Stop()
			return
		}
	}
}

// beat sends one heartbeat and returns when to send the next.
func (l *Lifecycle) beat() time.Duration {
	ctx, cancel := context.WithTimeout(l.ctx, max(l.interval, time.Second))
	defer cancel()
	hb := kafka.BrokerHeartbeat{ID: l.reg.ID, Epoch: l.ch.brokerEpoch.Load(),
		MetadataOffset: int64(l.admin.view.Image().Offset), WantShutdown: l.wantShutdown.Load(), DiskFull: l.diskFull()}
	if l.damaged != nil {
		hb.Damaged = l.damaged()
	}
	sent := time.Now()
	reply, err := l.ch.heartbeat(ctx, hb)
	defer l.logLease()
	switch {
	case l.ctx.Err() != nil:
		return 0
	case errors.Is(err, kerr.StaleBrokerEpoch), errors.Is(err, kerr.BrokerIDNotRegistered):
		l.lease.revoke()
		l.logger.Warn("the controller does not know this node's registration; registering again", "err", err)
		if err := l.register(ctx); err != nil {
			l.logger.Warn("registering again failed", "err", err)
			return failedHeartbeatRetry
		}
		return 0
	case err != nil:
		if l.failingSince.CompareAndSwap(0, time.Now().UnixNano()) {
			l.logger.Warn("heartbeat to the controller failed", "err", err)
		}
		return failedHeartbeatRetry
	}
	if l.failingSince.Swap(0) != 0 {
		l.logger.Info("heartbeats to the controller succeed again")
	}
	switch {
	case reply.IsFenced || reply.ShouldShutdown:
		l.lease.revoke()
	case reply.IsCaughtUp:
		l.lease.grant(sent, l.sessionTimeout)
	}
	if reply.ShouldShutdown {
		l.shutdownOnce.Do(func() { close(l.shutdownOK) })
	}
	if reply.IsFenced && !hb.WantShutdown {
		return fencedHeartbeatInterval
	}
	return l.interval
}

// logLease logs when the lease is lost or held again.
func (l *Lifecycle) logLease() {
	valid := l.lease.Valid()
	if valid == l.leaseHeld {
		return
	}
	l.leaseHeld = valid
	switch {
	case valid:
		l.logger.Info("the controller confirms this node's metadata: serving as leader and coordinator")
	case l.wantShutdown.Load():
		l.logger.Info("controlled shutdown: no longer answering as leader or coordinator")
	default:
		l.logger.Warn("no current confirmation from the controller (paused, cut off, fenced or behind on metadata): refusing to answer as leader or coordinator until a heartbeat succeeds")
	}
}

// Nudge sends the next heartbeat now: after a newly applied image (an admin change
// is acknowledged only once every live node has reported it), a disk-full change or
// a controller move.
func (l *Lifecycle) Nudge() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Stop ends the heartbeat loop and waits for it, without telling the controller (as
// a crash would).
func (l *Lifecycle) Stop() {
	l.cancel()
	<-l.done
}

// ControlledShutdown asks the active controller to move this node's leadership to
// other in-sync replicas and fence it, waits (at most controlledShutdownTimeout, or
// ctx) for its answer and for this node to apply it, stops the heartbeats, hands Raft
// leadership over if this node is the active controller, and closes the controller
// channel. Call it first when the node stops, while it still serves Kafka requests. A
// timeout is logged, not returned, since the node must stop anyway.
func (l *Lifecycle) ControlledShutdown(ctx context.Context) {
	defer l.ch.Close()
	ctx, cancel := context.WithTimeout(ctx, controlledShutdownTimeout)
	defer cancel()
	start := time.Now()
	l.wantShutdown.Store(true)
	l.Nudge()
	if err := l.awaitShutdownOK(ctx); err != nil {
		l.Stop()
		l.logger.Warn("controlled shutdown: stopping without the controller's answer", "reason", err, "waited", time.Since(start))
		return
	}
	l.Stop()
	epoch := l.ch.brokerEpoch.Load()
	l.admin.settleFor(ctx, func(im *metadata.Image) bool {
		b := im.Brokers[l.reg.ID]
		return b.Fenced || b.Epoch != epoch
	})
	if err := l.ctrl.Resign(ctx); err != nil {
		l.logger.Info("could not hand the metadata quorum leadership over", "err", err)
	}
	l.logger.Info("controlled shutdown done", "took", time.Since(start))
}

// awaitShutdownOK waits for the controller's ShouldShutdown. It gives up when ctx
// ends, or when heartbeats have failed for a whole session timeout: the controller
// has fenced this node by then, or there is no controller to ask (the rest of the
// quorum is down).
func (l *Lifecycle) awaitShutdownOK(ctx context.Context) error {
	tick := time.NewTicker(failedHeartbeatRetry)
	defer tick.Stop()
	for {
		select {
		case <-l.shutdownOK:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
			if since := l.failingSince.Load(); since != 0 && time.Since(time.Unix(0, since)) > l.sessionTimeout {
				return fmt.Errorf("no controller reachable for %v (broker.session.timeout.ms)", l.sessionTimeout)
			}
		}
	}
}
