package controlplane

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/runnel-io/runnel/internal/controller"
	"github.com/runnel-io/runnel/internal/kafka"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/replica"
	"github.com/runnel-io/runnel/internal/testutil"
	"github.com/runnel-io/runnel/internal/txn"
)

func TestLeaseGrantRevoke(t *testing.T) {
	l := NewLease()
	testutil.True(t, !l.Valid(), "a new lease does not hold")
	l.grant(time.Now(), time.Hour)
	testutil.True(t, l.Valid(), "granted for an hour")
	l.revoke()
	testutil.True(t, !l.Valid(), "revoked")
	// The lease runs from the heartbeat's send time, not from its answer.
	l.grant(time.Now().Add(-2*time.Second), time.Second)
	testutil.True(t, !l.Valid(), "granted from a send time more than a session timeout ago")
}

func TestRetriable(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{kerr.NotController, true},
		{fmt.Errorf("wrapped: %w", controller.ErrNotController), true},
		{errors.New("connection refused"), true},
		{kerr.StaleBrokerEpoch, false},
		{fmt.Errorf("%w: the answer", kerr.InvalidRequest), false},
		{controller.ErrClosed, false},
		{errChannelClosed, false},
		{context.DeadlineExceeded, false},
		{context.Canceled, false},
	} {
		testutil.Equal(t, retriable(tc.err), tc.want, "retriable(%v)", tc.err)
	}
}

// A forwarded request is retried as a whole only when every item was refused with
// NOT_CONTROLLER; an item the controller answered keeps its answer.
func TestMatchAnswers(t *testing.T) {
	errs := make([]error, 2)
	err := matchAnswers(errs, []string{"a", "b"}, map[string]error{"a": kerr.NotController, "b": kerr.NotController}, topicName)
	testutil.ErrorIs(t, err, kerr.NotController, "all refused: retry")

	errs = make([]error, 3)
	err = matchAnswers(errs, []string{"a", "b", "c"}, map[string]error{"a": nil, "b": kerr.NotController}, topicName)
	testutil.NoError(t, err, "one answered: no retry")
	testutil.NoError(t, errs[0], "a")
	testutil.ErrorIs(t, errs[1], kerr.NotController, "b")
	testutil.ErrorIs(t, errs[2], kerr.UnknownServerError, "c has no answer")

	fillErrors(errs, kerr.RequestTimedOut)
	testutil.ErrorIs(t, errs[0], kerr.RequestTimedOut, "an item without an error gets the call's")
	testutil.ErrorIs(t, errs[1], kerr.RequestTimedOut, "NOT_CONTROLLER is replaced by the call's error")
	testutil.ErrorIs(t, errs[2], kerr.UnknownServerError, "an item's own error stays")
}

func TestAnswerErrorKeepsMessage(t *testing.T) {
	msg := "retention.ms: not an integer"
	err := answerError(kerr.InvalidConfig.Code, &msg)
	testutil.ErrorIs(t, err, kerr.InvalidConfig, "code")
	testutil.Equal(t, err.Error(), msg, "message")
	testutil.NoError(t, answerError(0, &msg), "code 0")
	testutil.Equal(t, answerError(kerr.InvalidConfig.Code, nil), error(kerr.InvalidConfig), "no message")
}

// A request from a client may be forwarded; only NOT_CONTROLLER is.
func TestMayForward(t *testing.T) {
	ctx := context.Background()
	testutil.True(t, mayForward(ctx, controller.ErrNotController), "client request refused by a plain broker")
	testutil.True(t, !mayForward(ctx, controller.ErrTopicExists), "an answer is not forwarded")
	testutil.True(t, !mayForward(ctx, nil), "success")
}

func TestConfigsApplied(t *testing.T) {
	v := func(s string) *string { return &s }
	have := map[string]string{"a": "1", "b": "2"}
	testutil.True(t, configsApplied(have, map[string]*string{"a": v("1")}, false), "set")
	testutil.True(t, !configsApplied(have, map[string]*string{"a": v("9")}, false), "other value")
	testutil.True(t, !configsApplied(have, map[string]*string{"b": nil}, false), "not deleted yet")
	testutil.True(t, configsApplied(have, map[string]*string{"c": nil}, false), "deleted")
	testutil.True(t, !configsApplied(have, map[string]*string{"a": v("1")}, true), "replaceAll: b still set")
	testutil.True(t, configsApplied(have, map[string]*string{"a": v("1"), "b": v("2")}, true), "replaceAll")
}

// startController starts a single-voter quorum on loopback.
func startController(t *testing.T) *controller.Controller {
	t.Helper()
	c, err := controller.New(controller.Config{NodeID: 1, DataDir: t.TempDir(), Listen: testutil.FreeAddr(t),
		Logger: slog.New(slog.DiscardHandler), SessionTimeout: time.Minute, DisableAutoLeaderRebalance: true,
		DefaultPartitions: 1, DefaultReplicationFactor: 1})
	testutil.NoError(t, err, "new controller")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	testutil.NoError(t, c.Start(ctx), "start controller")
	t.Cleanup(func() { c.Close() })
	return c
}

// The whole node side on the active controller (the channel's local path): register,
// heartbeat until unfenced with a lease, an admin change that settles on this node,
// a producer id, and the controlled shutdown that revokes the lease.
func TestLifecycleOnActiveController(t *testing.T) {
	c := startController(t)
	view := replica.NewLeadership(replica.LeadershipOptions{Self: 1, SessionTimeout: time.Minute})
	a := NewAdmin(AdminConfig{Controller: c, View: view, Logger: slog.New(slog.DiscardHandler)})
	unsub := c.Subscribe(func(_, cur *metadata.Image) { view.SetApplied(cur) })
	defer unsub()
	testutil.True(t, a.Channel().IsLocal(), "a single voter is the active controller")
	testutil.Equal(t, a.ControllerID(), metadata.NodeID(1), "controller id")

	lease := NewLease()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l, err := StartLifecycle(ctx, LifecycleConfig{
		Registration: kafka.BrokerRegistration{ID: 1, ClusterID: c.Image().ClusterID, IncarnationID: "00112233445566778899aabbccddeeff",
			Host: "127.0.0.1", Port: 9092, RaftAddr: c.Addr()},
		Controller: c, Admin: a, Lease: lease, Interval: 50 * time.Millisecond, SessionTimeout: time.Minute,
		DiskFull: func() bool { return false }, Logger: slog.New(slog.DiscardHandler),
	})
	testutil.NoError(t, err, "start lifecycle")
	testutil.NoError(t, l.AwaitUnfenced(ctx), "unfenced")
	testutil.Eventually(t, 10*time.Second, func() error {
		if !lease.Valid() {
			return errors.New("no lease after the node was unfenced")
		}
		return nil
	})

	errs := a.CreateTopics(ctx, []metadata.TopicSpec{{Name: "t", NumPartitions: 2, ReplicationFactor: 1}}, false)
	testutil.NoError(t, errs[0], "create topic")
	testutil.True(t, view.Image().Topics["t"] != nil, "the creation is applied on this node when CreateTopics returns")
	errs = a.CreateTopics(ctx, []metadata.TopicSpec{{Name: "t", NumPartitions: 1, ReplicationFactor: 1}}, false)
	testutil.ErrorIs(t, errs[0], kerr.TopicAlreadyExists, "second creation")

	id1, err := a.AllocateProducerID(ctx)
	testutil.NoError(t, err, "producer id")
	id2, err := a.AllocateProducerID(ctx)
	testutil.NoError(t, err, "producer id")
	testutil.True(t, id2 > id1, "producer ids grow: %d then %d", id1, id2)

	l.ControlledShutdown(ctx)
	testutil.True(t, !lease.Valid(), "the controlled shutdown revokes the lease")
	b := view.Image().Brokers[1]
	testutil.True(t, b.Fenced, "fenced after the controlled shutdown: %+v", b)
}

// A remote coordinator's answer maps to the coordinator's own errors, so that a
// produce is answered as for a local coordinator; anything else is retriable.
func TestVerifyError(t *testing.T) {
	testutil.NoError(t, verifyError(0), "no error")
	for _, tc := range []struct {
		code int16
		want error
	}{
		{kerr.InvalidTxnState.Code, txn.ErrInvalidTxnState},
		{kerr.ProducerFenced.Code, txn.ErrProducerFenced},
		{kerr.InvalidProducerEpoch.Code, txn.ErrProducerFenced},
		{kerr.InvalidProducerIDMapping.Code, txn.ErrInvalidProducerIDMapping},
		{kerr.ConcurrentTransactions.Code, txn.ErrConcurrentTransactions},
		{kerr.NotCoordinator.Code, txn.ErrCoordinatorNotAvailable},
	} {
		testutil.ErrorIs(t, verifyError(tc.code), tc.want, "code %d", tc.code)
	}
}

// Closed peers refuse to send: the coordinator stops with the node.
func TestTxnPeersClosed(t *testing.T) {
	im := metadata.Empty()
	p := NewTxnPeers(TxnPeersConfig{Self: 1, Image: func() *metadata.Image { return im }})
	p.Close()
	_, err := p.client(peerConn{addr: "127.0.0.1:1"})
	testutil.ErrorIs(t, err, txn.ErrNotCoordinator, "client after Close")
	err = p.WriteMarker(context.Background(), metadata.TopicPartition{Topic: "none"}, 1, 0, 0, true)
	testutil.ErrorIs(t, err, replica.ErrUnknownTopicOrPartition, "marker for an unknown partition")
}
