package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/runnel-io/runnel/internal/controller"
	"github.com/runnel-io/runnel/internal/kafka"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
)

// admin implements kafka.Admin over the controller. Each operation returns once this
// node has applied the resulting metadata to its replicas, so that a client that
// creates a topic can produce to it right away. Errors wrap the *kerr.Error Kafka uses
// for them, with the controller's message kept.
type admin struct {
	ctrl   *controller.Controller
	logger *slog.Logger

	mu      sync.Mutex // guards applied and cond
	cond    *sync.Cond
	applied *metadata.Image // the last image applied to the replicas
}

func newAdmin(c *controller.Controller, logger *slog.Logger) *admin {
	a := &admin{ctrl: c, logger: logger, applied: metadata.Empty()}
	a.cond = sync.NewCond(&a.mu)
	return a
}

func (a *admin) setApplied(im *metadata.Image) {
	a.mu.Lock()
	a.applied = im
	a.cond.Broadcast()
	a.mu.Unlock()
}

// waitLocal waits until the replicas have applied the image at offset.
func (a *admin) waitLocal(ctx context.Context, offset uint64) error {
	stop := context.AfterFunc(ctx, func() {
		a.mu.Lock()
		a.cond.Broadcast()
		a.mu.Unlock()
	})
	defer stop()
	a.mu.Lock()
	defer a.mu.Unlock()
	for a.applied.Offset < offset {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		a.cond.Wait()
	}
	return nil
}

// Image is the image applied to the local replicas (not the controller's newest), so
// metadata never names a partition this node cannot serve yet.
func (a *admin) Image() *metadata.Image {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.applied
}

func (a *admin) ControllerID() metadata.NodeID {
	if id, ok := a.ctrl.LeaderID(); ok {
		return id
	}
	return -1
}

func (a *admin) settle(ctx context.Context) {
	if err := a.waitLocal(ctx, a.ctrl.Image().Offset); err != nil {
		a.logger.Warn("metadata change not yet applied locally", "err", err)
	}
}

func (a *admin) CreateTopics(ctx context.Context, specs []kafka.TopicSpec, validateOnly bool) []error {
	cs := make([]controller.TopicSpec, len(specs))
	for i, s := range specs {
		cs[i] = controller.TopicSpec{Name: s.Name, NumPartitions: s.NumPartitions, ReplicationFactor: s.ReplicationFactor,
			Assignments: s.Assignments, Configs: s.Configs}
	}
	errs := a.ctrl.CreateTopics(ctx, cs, validateOnly)
	a.settle(ctx)
	for i := range errs {
		errs[i] = kafkaError(errs[i])
	}
	return errs
}

func (a *admin) DeleteTopics(ctx context.Context, names []string) []error {
	errs := a.ctrl.DeleteTopics(ctx, names)
	a.settle(ctx)
	for i := range errs {
		errs[i] = kafkaError(errs[i])
	}
	return errs
}

func (a *admin) CreatePartitions(ctx context.Context, topic string, total int32, as [][]metadata.NodeID, validateOnly bool) error {
	err := a.ctrl.CreatePartitions(ctx, topic, total, as, validateOnly)
	a.settle(ctx)
	return kafkaError(err)
}

func (a *admin) AlterTopicConfigs(ctx context.Context, topic string, set map[string]*string, replaceAll, validateOnly bool) error {
	err := a.ctrl.AlterTopicConfigs(ctx, topic, set, replaceAll, validateOnly)
	a.settle(ctx)
	return kafkaError(err)
}

func (a *admin) AlterBrokerConfigs(ctx context.Context, set map[string]*string, validateOnly bool) error {
	err := a.ctrl.AlterBrokerConfigs(ctx, set, validateOnly)
	a.settle(ctx)
	return kafkaError(err)
}

func (a *admin) AllocateProducerID(ctx context.Context) (int64, error) {
	id, err := a.ctrl.AllocateProducerID(ctx)
	return id, kafkaError(err)
}

// controllerErrors maps the controller's sentinels to Kafka's codes.
var controllerErrors = []struct {
	err  error
	kerr *kerr.Error
}{
	{controller.ErrNotController, kerr.NotController},
	{controller.ErrTopicExists, kerr.TopicAlreadyExists},
	{controller.ErrUnknownTopic, kerr.UnknownTopicOrPartition},
	{controller.ErrInvalidTopic, kerr.InvalidTopicException},
	{controller.ErrInvalidPartitions, kerr.InvalidPartitions},
	{controller.ErrInvalidReplicationFactor, kerr.InvalidReplicationFactor},
	{controller.ErrInvalidReplicaAssignment, kerr.InvalidReplicaAssignment},
	{controller.ErrInvalidConfig, kerr.InvalidConfig},
	{controller.ErrInvalidRequest, kerr.InvalidRequest},
	{controller.ErrIneligibleReplica, kerr.IneligibleReplica},
	{controller.ErrTopicDeletionDisabled, kerr.TopicDeletionDisabled},
	{controller.ErrFencedLeaderEpoch, kerr.FencedLeaderEpoch},
	{controller.ErrInvalidUpdateVersion, kerr.InvalidUpdateVersion},
	{controller.ErrTimeout, kerr.RequestTimedOut},
	{controller.ErrClosed, kerr.NotController},
	{context.DeadlineExceeded, kerr.RequestTimedOut},
}

// kafkaError wraps err with the Kafka error it stands for, keeping its message.
func kafkaError(err error) error {
	if err == nil {
		return nil
	}
	for _, e := range controllerErrors {
		if errors.Is(err, e.err) {
			return fmt.Errorf("%w: %v", e.kerr, err)
		}
	}
	return err
}
