package server_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/internal/config"
	"github.com/runnel-io/runnel/internal/testutil"
)

// transaction.abort.timed.out.transaction.cleanup.interval.ms, read from a
// server.properties file like any broker property, sets how often the coordinator
// aborts timed-out transactions: a transaction left open past its 300 ms timeout is
// aborted within about the interval (250 ms), far below the 10 s default.
func TestTxnAbortIntervalProperty(t *testing.T) {
	const interval, timeout = 250 * time.Millisecond, 300 * time.Millisecond
	file := filepath.Join(t.TempDir(), "server.properties")
	props := []string{"node.id=1", "listen=127.0.0.1:0", "http.listen=127.0.0.1:0",
		"controller.listen=" + testutil.FreeAddr(t), "log.dirs=" + t.TempDir(),
		"transaction.abort.timed.out.transaction.cleanup.interval.ms=250"}
	testutil.NoError(t, os.WriteFile(file, []byte(strings.Join(append(props, fastLiveness...), "\n")), 0o644), "write properties")
	cfg, err := config.Load(file, nil)
	testutil.NoError(t, err, "config.Load")
	testutil.Equal(t, cfg.TransactionAbortIntervalMs, int32(250), "interval read from the file")
	tn, _ := startOwn(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	adm := adminOf(t, tn)
	_, err = adm.CreateTopic(ctx, 1, 1, nil, "abort-interval")
	testutil.NoError(t, err, "create topic")

	p, err := kgo.NewClient(kgo.SeedBrokers(tn.addr()), kgo.TransactionalID("abort-interval"),
		kgo.TransactionTimeout(timeout))
	testutil.NoError(t, err, "client")
	defer p.Close()
	testutil.NoError(t, p.BeginTransaction(), "begin")
	testutil.NoError(t, p.ProduceSync(ctx, &kgo.Record{Topic: "abort-interval", Value: []byte("left open")}).FirstErr(), "produce")
	opened := time.Now()
	testutil.Eventually(t, 5*time.Second, func() error {
		desc, err := adm.DescribeTransactions(ctx, "abort-interval")
		if err != nil {
			return err
		}
		if st := desc["abort-interval"].State; st != "CompleteAbort" {
			return &stateError{st}
		}
		return nil
	})
	took := time.Since(opened)
	t.Logf("aborted %v after the first write (timeout %v, interval %v)", took, timeout, interval)
	if limit := timeout + interval + time.Second; took > limit {
		t.Fatalf("the open transaction was aborted after %v, want within %v", took, limit)
	}
}

type stateError struct{ state string }

func (e *stateError) Error() string { return "transaction state " + e.state + ", want CompleteAbort" }
