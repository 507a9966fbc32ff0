package cli

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// newCluster starts an in-process Kafka-protocol cluster (kfake) and returns it with
// its bootstrap address; it is closed when the test ends.
func newCluster(t *testing.T, opts ...kfake.Opt) (*kfake.Cluster, string) {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	if err != nil {
		t.Fatalf("kfake.NewCluster: %v", err)
	}
	t.Cleanup(c.Close)
	return c, strings.Join(c.ListenAddrs(), ",")
}

// holdProduce makes the cluster park every Produce request until the returned
// function is called.
func holdProduce(c *kfake.Cluster) (release func()) {
	ch := make(chan struct{})
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		c.SleepControl(func() { <-ch })
		return nil, nil, false
	})
	var released bool
	return func() {
		if !released {
			released = true
			close(ch)
		}
	}
}

// newProducer returns a kgo client for bootstrap, closed when the test ends.
func newProducer(t *testing.T, bootstrap string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(strings.Split(bootstrap, ",")...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// eventually polls fn until it returns nil or d passes, then fails naming what never
// happened.
func eventually(t *testing.T, d time.Duration, fn func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := fn()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %v", d, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// result is what one run of the command line produced.
type result struct {
	code           int
	stdout, stderr string
}

// run runs the runnel command line in-process with stdin as its input.
func run(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := MainIO(args, strings.NewReader(stdin), &out, &errb)
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// mustRun runs the command line and fails the test unless it exits 0.
func mustRun(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	r := run(t, stdin, args...)
	if r.code != 0 {
		t.Fatalf("runnel %s: exit %d, stderr %q", strings.Join(args, " "), r.code, r.stderr)
	}
	return r
}

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func errIf(cond bool, format string, args ...any) error {
	if cond {
		return fmt.Errorf(format, args...)
	}
	return nil
}
