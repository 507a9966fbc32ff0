package mirror_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/clustertest"
	"github.com/runnel-io/runnel/mirror"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// startRunnel starts a real single-node Runnel cluster in this process (the same
// server the binary runs, over real sockets) and returns its Kafka address.
func startRunnel(t *testing.T, sets ...string) string {
	t.Helper()
	return clustertest.StartOne(t, sets...)
}

// startKfake starts franz-go's kfake, a different Kafka-protocol implementation.
func startKfake(t *testing.T, opts ...kfake.Opt) string {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return strings.Join(c.ListenAddrs(), ",")
}

func newClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(strings.Split(addr, ",")...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func createTopic(t *testing.T, addr, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	adm := kadm.NewClient(newClient(t, addr))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, partitions, -1, configs, topic); err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
}

// runMirror runs a Mirror until the test ends (or the returned stop is called).
func runMirror(t *testing.T, cfg mirror.Config) (*mirror.Mirror, func()) {
	t.Helper()
	if cfg.Logger == nil {
		logs := &clustertest.LockedBuffer{}
		cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("mirror %s log:\n%s", cfg.Name, logs)
			}
		})
	}
	m, err := mirror.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("mirror %s: %v", cfg.Name, err)
				}
			case <-time.After(30 * time.Second):
				t.Errorf("mirror %s did not stop within 30s", cfg.Name)
			}
		})
	}
	t.Cleanup(stop)
	return m, stop
}

// readAll reads topic from addr (read_committed) until it holds n records or d
// passes, and returns them by partition.
func readAll(t *testing.T, addr, topic string, n int, d time.Duration) map[int32][]*kgo.Record {
	t.Helper()
	cl := newClient(t, addr, kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.MetadataMinAge(100*time.Millisecond), kgo.MetadataMaxAge(time.Second))
	out := map[int32][]*kgo.Record{}
	got := 0
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for got < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records of %s from %s within %v", got, n, topic, addr, d)
		}
		fs.EachRecord(func(r *kgo.Record) {
			out[r.Partition] = append(out[r.Partition], r)
			got++
		})
	}
	return out
}

// sameRecord reports how a mirrored record differs from its source, ignoring the
// provenance header the mirror adds.
func sameRecord(src, tgt *kgo.Record) error {
	var hs []kgo.RecordHeader
	for _, h := range tgt.Headers {
		if h.Key != mirror.PathHeader {
			hs = append(hs, h)
		}
	}
	switch {
	case src.Partition != tgt.Partition:
		return fmt.Errorf("partition %d, want %d", tgt.Partition, src.Partition)
	case !bytes.Equal(src.Key, tgt.Key) || (src.Key == nil) != (tgt.Key == nil):
		return fmt.Errorf("key %q, want %q", tgt.Key, src.Key)
	case !bytes.Equal(src.Value, tgt.Value) || (src.Value == nil) != (tgt.Value == nil):
		return fmt.Errorf("value %q, want %q", tgt.Value, src.Value)
	case !src.Timestamp.Equal(tgt.Timestamp):
		return fmt.Errorf("timestamp %v, want %v", tgt.Timestamp, src.Timestamp)
	case len(hs) != len(src.Headers):
		return fmt.Errorf("headers %v, want %v", hs, src.Headers)
	}
	for i := range hs {
		if hs[i].Key != src.Headers[i].Key || !bytes.Equal(hs[i].Value, src.Headers[i].Value) {
			return fmt.Errorf("header %d %v, want %v", i, hs[i], src.Headers[i])
		}
	}
	return nil
}
