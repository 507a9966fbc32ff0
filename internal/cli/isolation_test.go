package cli

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestConsumeIsolation(t *testing.T) {
	_, b := newCluster(t, kfake.SeedTopics(1, "t"))
	cl := newProducer(t, b, kgo.TransactionalID("tx"), kgo.DefaultProduceTopic("t"))
	ctx := ctxTimeout(t, 10*time.Second)
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("pending")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	consume := func(isolation string) string {
		return mustRun(t, "", "consume", "t", "-b", b, "--from-beginning", "--isolation", isolation,
			"--idle-timeout", "300ms").stdout
	}
	if got := consume("read_uncommitted"); got != "pending\n" {
		t.Errorf("read_uncommitted printed %q before the commit", got)
	}
	if got := consume("read_committed"); got != "" {
		t.Errorf("read_committed printed %q before the commit", got)
	}
	if err := cl.EndTransaction(context.Background(), kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	if got := consume("read_committed"); got != "pending\n" {
		t.Errorf("read_committed printed %q after the commit", got)
	}
}
