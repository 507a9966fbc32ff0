package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/metadata"
)

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func testLogger(t *testing.T) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("test", t.Name())
	}
	return slog.New(slog.DiscardHandler)
}

// testConfig is a single-node config in a fresh directory.
func testConfig(t *testing.T) Config {
	t.Helper()
	return Config{NodeID: 1, DataDir: t.TempDir(), Listen: freeAddr(t), Logger: testLogger(t),
		SessionTimeout: time.Minute, DisableAutoLeaderRebalance: true}
}

// startController starts cfg's node and closes it at the end of the test.
func startController(t *testing.T, cfg Config) *Controller {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatalf("start node %d: %v", cfg.NodeID, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// startWithBrokers starts a single-node controller and registers brokers 1..n (only
// node 1 runs; the others exist in the image so that placement has room).
func startWithBrokers(t *testing.T, n int) *Controller {
	t.Helper()
	c := startController(t, testConfig(t))
	for i := 1; i <= n; i++ {
		registerLive(t, c, metadata.Broker{ID: metadata.NodeID(i), Host: "localhost", Port: int32(9091 + i)})
	}
	return c
}

// registerLive registers b with c (the leader) and unfences it with a heartbeat that
// reports the latest offset. It returns the broker's epoch.
func registerLive(t *testing.T, c *Controller, b metadata.Broker) int64 {
	t.Helper()
	epoch, err := c.RegisterBroker(testCtx(t), Registration{Broker: b, IncarnationID: fmt.Sprintf("inc-%d", b.ID)})
	if err != nil {
		t.Fatalf("register %d: %v", b.ID, err)
	}
	reply, err := c.BrokerHeartbeat(testCtx(t), Heartbeat{ID: b.ID, Epoch: epoch, MetadataOffset: c.Image().Offset})
	if err != nil || reply.IsFenced || !reply.IsCaughtUp {
		t.Fatalf("first heartbeat of %d: %+v %v", b.ID, reply, err)
	}
	return epoch
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// eventually polls fn until it returns nil, failing with fn's last error after d.
func eventually(t *testing.T, d time.Duration, fn func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := fn()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still failing after %v: %v", d, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// wantErr fails unless err matches want (nil meaning no error).
func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if want == nil && err != nil || want != nil && !errors.Is(err, want) {
		t.Fatalf("%s: got error %v, want %v", what, err, want)
	}
}

func topicSpec(name string, partitions int32, rf int16) metadata.TopicSpec {
	return metadata.TopicSpec{Name: name, NumPartitions: partitions, ReplicationFactor: rf}
}

func mustCreate(t *testing.T, c *Controller, specs ...TopicSpec) {
	t.Helper()
	for i, err := range c.CreateTopics(testCtx(t), specs, false) {
		if err != nil {
			t.Fatalf("create %q: %v", specs[i].Name, err)
		}
	}
}

func ptr(s string) *string { return &s }

func describe(p metadata.Partition) string {
	return fmt.Sprintf("replicas=%v isr=%v leader=%d le=%d pe=%d", p.Replicas, p.ISR, p.Leader, p.LeaderEpoch, p.PartitionEpoch)
}
