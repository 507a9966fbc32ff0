package controlplane

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/runnel-io/runnel/internal/config"
	"github.com/runnel-io/runnel/internal/controller"
	"github.com/runnel-io/runnel/internal/kafka"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/replica"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Admin implements kafka.Admin over the controller. On the active controller each
// operation runs on the local Controller; on any other node it is forwarded to the
// active controller through the controller channel (forward.go). Each
// operation returns once this node has applied the resulting metadata to its replicas,
// so that a client that creates a topic can produce to it right away. Errors wrap the
// *kerr.Error Kafka uses for them, with the controller's message kept.
type Admin struct {
	ctrl   *controller.Controller
	ch     *Channel
	logger *slog.Logger

	// view holds the image applied to the local replicas; settle waits on it.
	view *replica.Leadership

	pidMu sync.Mutex // guards pidNext and pidEnd
	// pidNext, pidEnd is the unused part of the producer id block this node got from
	// the active controller (AllocateProducerIDs) while it was not the controller.
	// Invariant: pidNext <= pidEnd.
	pidNext, pidEnd int64
}

// settleTimeout bounds the wait for a forwarded change to reach this node's image.
const settleTimeout = 5 * time.Second

var _ kafka.Admin = (*Admin)(nil)

// AdminConfig configures an Admin.
type AdminConfig struct {
	// Controller is this node's controller (a voter or a non-voter of the quorum).
	Controller *controller.Controller
	// View is this node's leadership view, which the node feeds the images applied to
	// its replicas (Leadership.SetApplied).
	View   *replica.Leadership
	Logger *slog.Logger
	// PeerClient gives the controller channel's dialer and SASL login for the
	// controller's inter-broker listener (Channel.SetPeerClient); nil: plaintext.
	PeerClient kafka.PeerClient
}

// NewAdmin returns the node's Admin with its controller channel (Channel).
func NewAdmin(cfg AdminConfig) *Admin {
	c := cfg.Controller
	a := &Admin{ctrl: c, ch: NewChannel(c, c.NodeID(), cfg.Logger), logger: cfg.Logger, view: cfg.View}
	a.ch.SetPeerClient(cfg.PeerClient)
	return a
}

// Channel is the node's channel to the active controller; it implements
// replica.IsrChanger.
func (a *Admin) Channel() *Channel { return a.ch }

// CaughtUp reports whether im shows this node's current registration unfenced. The
// controller unfences a registration only after a heartbeat reported an applied
// offset at least its own image's, so such an image holds every change committed
// before this node registered (what it missed while it was down) and it is safe to
// delete the logs it places elsewhere (replica.Options.CaughtUp). False before the
// first registration.
func (a *Admin) CaughtUp(im *metadata.Image) bool {
	epoch := a.ch.brokerEpoch.Load()
	b, ok := im.Brokers[a.ch.self]
	return epoch >= 0 && ok && b.Epoch == epoch && !b.Fenced
}

// waitLocal waits until the replicas have applied the image at offset.
func (a *Admin) waitLocal(ctx context.Context, offset uint64) error {
	return a.view.WaitFor(ctx, func(im *metadata.Image) bool { return im.Offset >= offset })
}

func (a *Admin) ControllerID() metadata.NodeID {
	if id, ok := a.ctrl.LeaderID(); ok {
		return id
	}
	return -1
}

// settle runs after a change this node's controller committed: it waits until the
// change is applied to the replicas of this node and of every other live, unfenced
// node (they report it in their heartbeats), so that whichever node a client asks
// next answers with the change. A timeout (the request's) is returned, wrapping
// REQUEST_TIMED_OUT and naming the nodes behind: the change is committed and will
// show everywhere, but not yet. what names the change in that error (`topic "orders"`).
func (a *Admin) settle(ctx context.Context, what string) error {
	if err := a.awaitEveryNode(ctx); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// awaitEveryNode is settle's wait; its error does not name the change.
func (a *Admin) awaitEveryNode(ctx context.Context) error {
	offset := a.ctrl.Image().Offset
	if err := a.waitLocal(ctx, offset); err != nil {
		return fmt.Errorf("%w: the change is committed but not yet applied on node %d (metadata offset %d): %w",
			kerr.RequestTimedOut, a.ctrl.NodeID(), offset, err)
	}
	err := a.ctrl.WaitBrokersApplied(ctx, offset)
	switch {
	case err == nil, notController(err), errors.Is(err, controller.ErrClosed):
		// A controller that lost its role mid-wait no longer hears the heartbeats; the
		// change is committed, so say so rather than fail it.
		return nil
	default:
		return kafka.WithCode(fmt.Errorf("the change is committed but not yet visible on every node: %w", err))
	}
}

// change is one metadata change of one or more items, as every Admin operation runs
// it (run). Errors are per item, in request order.
type change struct {
	// local runs the change on this node's controller; it refuses every item with
	// ErrNotController when that is not the active one.
	local func() []error
	// forward sends the change to the active controller (forward.go), which answers
	// once every live node applied it.
	forward func() []error
	// applied reports whether the items of a forwarded change that succeeded show in
	// im, this node's image.
	applied func(im *metadata.Image, errs []error) bool
	// item names item i in an error (`topic "orders"`).
	item         func(i int) string
	validateOnly bool
	// one: a change of one item, which settles only when it succeeded. A request of
	// items settles whatever its answers: a topic another request just created
	// answers TOPIC_ALREADY_EXISTS, and the caller (a FindCoordinator that lost the
	// race to create __consumer_offsets) then reads this node's image for it.
	one bool
}

// run runs c on this node's controller when it is the active one, else forwards it
// there (KIP-590; never a request another node forwarded, or two nodes that briefly
// disagree on the controller could bounce it between them). Unless validateOnly, it
// then waits until the change shows: a change run here until every live node applied
// it (settle), a forwarded one until this node did, so that whichever node a client
// asks next answers with it.
func (a *Admin) run(ctx context.Context, c change) []error {
	errs := c.local()
	if len(errs) > 0 && mayForward(ctx, errs[0]) {
		errs = c.forward()
		if !c.validateOnly {
			a.settleFor(ctx, func(im *metadata.Image) bool { return c.applied(im, errs) })
		}
		return errs
	}
	for i := range errs {
		errs[i] = kafka.WithCode(errs[i])
	}
	if c.validateOnly || c.one && errs[0] != nil {
		return errs
	}
	if err := a.awaitEveryNode(ctx); err != nil {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = fmt.Errorf("%s: %w", c.item(i), err)
			}
		}
	}
	return errs
}

// runOne is run for a change of one item, what.
func (a *Admin) runOne(ctx context.Context, what string, validateOnly bool, local, forward func() error, applied func(*metadata.Image) bool) error {
	return a.run(ctx, change{
		local:        func() []error { return []error{local()} },
		forward:      func() []error { return []error{forward()} },
		applied:      func(im *metadata.Image, errs []error) bool { return errs[0] != nil || applied(im) },
		item:         func(int) string { return what },
		validateOnly: validateOnly,
		one:          true,
	})[0]
}

// allApplied is a change's applied for items whose own applied is one: every item
// that succeeded shows in im.
func allApplied(n int, applied func(im *metadata.Image, i int) bool) func(*metadata.Image, []error) bool {
	return func(im *metadata.Image, errs []error) bool {
		for i := range n {
			if errs[i] == nil && !applied(im, i) {
				return false
			}
		}
		return true
	}
}

// settleFor waits (at most settleTimeout) until a forwarded change shows in the
// local image.
func (a *Admin) settleFor(ctx context.Context, ok func(*metadata.Image) bool) {
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	if err := a.view.WaitFor(ctx, ok); err != nil {
		a.logger.Warn("forwarded metadata change not yet applied locally", "err", err)
	}
}

// notController reports a local operation that must be forwarded.
func notController(err error) bool { return errors.Is(err, controller.ErrNotController) }

// mayForward reports whether a request refused by the local controller should be
// forwarded: it must not itself have been forwarded by another node, or two nodes that
// briefly disagree on the controller could bounce it between them until its deadline.
func mayForward(ctx context.Context, err error) bool {
	return notController(err) && !kafka.FromNode(ctx)
}

func (a *Admin) CreateTopics(ctx context.Context, specs []metadata.TopicSpec, validateOnly bool) []error {
	return a.run(ctx, change{
		local:        func() []error { return a.ctrl.CreateTopics(ctx, specs, validateOnly) },
		forward:      func() []error { return a.ch.createTopics(ctx, specs, validateOnly) },
		applied:      allApplied(len(specs), func(im *metadata.Image, i int) bool { return im.Topics[specs[i].Name] != nil }),
		item:         func(i int) string { return fmt.Sprintf("topic %q", specs[i].Name) },
		validateOnly: validateOnly,
	})
}

func (a *Admin) DeleteTopics(ctx context.Context, names []string) []error {
	return a.run(ctx, change{
		local:   func() []error { return a.ctrl.DeleteTopics(ctx, names) },
		forward: func() []error { return a.ch.deleteTopics(ctx, names) },
		applied: allApplied(len(names), func(im *metadata.Image, i int) bool { return im.Topics[names[i]] == nil }),
		item:    func(i int) string { return fmt.Sprintf("topic %q", names[i]) },
	})
}

func (a *Admin) CreatePartitions(ctx context.Context, topic string, total int32, as [][]metadata.NodeID, validateOnly bool) error {
	return a.runOne(ctx, fmt.Sprintf("partitions of topic %q", topic), validateOnly,
		func() error { return a.ctrl.CreatePartitions(ctx, topic, total, as, validateOnly) },
		func() error { return a.ch.createPartitions(ctx, topic, total, as, validateOnly) },
		func(im *metadata.Image) bool {
			t := im.Topics[topic]
			return t != nil && int32(len(t.Partitions)) >= total
		})
}

func (a *Admin) AlterTopicConfigs(ctx context.Context, topic string, set map[string]*string, replaceAll, validateOnly bool) error {
	return a.runOne(ctx, fmt.Sprintf("configs of topic %q", topic), validateOnly,
		func() error { return a.ctrl.AlterTopicConfigs(ctx, topic, set, replaceAll, validateOnly) },
		func() error { return a.ch.alterConfigs(ctx, topic, set, replaceAll, validateOnly) },
		func(im *metadata.Image) bool {
			t := im.Topics[topic]
			return t == nil || configsApplied(t.Configs, set, replaceAll)
		})
}

func (a *Admin) AlterBrokerConfigs(ctx context.Context, set map[string]*string, validateOnly bool) error {
	return a.runOne(ctx, "cluster-wide broker configs", validateOnly,
		func() error { return a.ctrl.AlterBrokerConfigs(ctx, set, validateOnly) },
		func() error { return a.ch.alterConfigs(ctx, "", set, false, validateOnly) },
		func(im *metadata.Image) bool { return configsApplied(im.Configs, set, false) })
}

// AlterNodeConfigs changes broker node's own dynamic configs (the broker resource
// named by its id; controller.AlterNodeConfigs).
func (a *Admin) AlterNodeConfigs(ctx context.Context, node metadata.NodeID, set map[string]*string, validateOnly bool) error {
	return a.runOne(ctx, fmt.Sprintf("dynamic configs of node %d", node), validateOnly,
		func() error { return a.ctrl.AlterNodeConfigs(ctx, node, set, validateOnly) },
		func() error { return a.ch.alterBrokerConfigs(ctx, strconv.Itoa(int(node)), set, validateOnly) },
		func(im *metadata.Image) bool {
			return configsApplied(config.BrokerOwnConfigs(im.Configs, int32(node)), set, false)
		})
}

// AlterGroupConfigs changes group's configs (the GROUP config resource;
// controller.AlterGroupConfigs).
func (a *Admin) AlterGroupConfigs(ctx context.Context, group string, set map[string]*string, replaceAll, validateOnly bool) error {
	return a.runOne(ctx, fmt.Sprintf("configs of group %q", group), validateOnly,
		func() error { return a.ctrl.AlterGroupConfigs(ctx, group, set, replaceAll, validateOnly) },
		func() error { return a.ch.alterGroupConfigs(ctx, group, set, replaceAll, validateOnly) },
		func(im *metadata.Image) bool {
			return configsApplied(config.GroupOwnConfigs(im.Configs, group), set, replaceAll)
		})
}

// configsApplied reports whether have reflects set (nil values deleted; with
// replaceAll, nothing else set).
func configsApplied(have map[string]string, set map[string]*string, replaceAll bool) bool {
	n := 0
	for k, v := range set {
		got, ok := have[k]
		if v == nil && ok || v != nil && (!ok || got != *v) {
			return false
		}
		if v != nil {
			n++
		}
	}
	return !replaceAll || len(have) == n
}

// AllocateProducerID allocates on the local controller when it is the active one,
// else from a block granted by the active controller (AllocateProducerIDs).
func (a *Admin) AllocateProducerID(ctx context.Context) (int64, error) {
	id, err := a.ctrl.AllocateProducerID(ctx)
	if !notController(err) {
		return id, kafka.WithCode(err)
	}
	a.pidMu.Lock()
	defer a.pidMu.Unlock()
	if a.pidNext == a.pidEnd {
		start, n, err := a.ch.allocateProducerIDs(ctx)
		if err != nil {
			return -1, err
		}
		a.pidNext, a.pidEnd = start, start+int64(n)
	}
	id = a.pidNext
	a.pidNext++
	return id, nil
}
