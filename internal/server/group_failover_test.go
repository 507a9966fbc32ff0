package server_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Kill the node coordinating a group right after the group committed: every commit that
// was acknowledged is still there on the new coordinator (the leader of the group's
// __consumer_offsets partition elsewhere), and a consumer of the group resumes exactly
// after it: no record skipped, none read twice.
func TestGroupCoordinatorFailover(t *testing.T) {
	nodes := startCluster(t, 3)
	seeds := []string{nodes[0].addr(), nodes[1].addr(), nodes[2].addr()}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := adminOf(t, nodes[0])
	_, err := adm.CreateTopic(ctx, 3, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, "gf")
	testutil.NoError(t, err, "create topic")

	prod, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic("gf"))
	testutil.NoError(t, err, "producer")
	defer prod.Close()
	const total = 300
	for i := range total {
		r := prod.ProduceSync(ctx, &kgo.Record{Key: []byte(fmt.Sprint(i % 7)), Value: []byte(fmt.Sprint(i))})
		testutil.NoError(t, r.FirstErr(), "produce %d", i)
	}

	seen := map[string]bool{}
	consume := func(cl *kgo.Client, n int) {
		t.Helper()
		for got := 0; got < n; {
			fs := cl.PollRecords(ctx, n-got)
			if err := ctx.Err(); err != nil {
				t.Fatalf("consumed %d of %d records before the deadline", got, n)
			}
			fs.EachRecord(func(r *kgo.Record) {
				v := string(r.Value)
				if seen[v] {
					t.Errorf("record %s (partition %d offset %d) consumed twice", v, r.Partition, r.Offset)
				}
				seen[v] = true
				got++
			})
		}
	}
	groupOpts := []kgo.Opt{kgo.SeedBrokers(seeds...), kgo.ConsumerGroup("gf-group"), kgo.ConsumeTopics("gf"),
		kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.SessionTimeout(6 * time.Second)}
	first, err := kgo.NewClient(groupOpts...)
	testutil.NoError(t, err, "first consumer")
	consume(first, total/2)
	testutil.NoError(t, first.CommitUncommittedOffsets(ctx), "commit")
	acked := first.CommittedOffsets()
	first.Close() // leaves the group; its commits are already acknowledged

	found := adm.FindGroupCoordinators(ctx, "gf-group")["gf-group"]
	testutil.NoError(t, found.Err, "find coordinator")
	coord := found.NodeID
	victim := nodes[coord-1]
	t.Logf("killing coordinator node %d", coord)
	victim.kill()

	var survivor *testNode
	for _, tn := range nodes {
		if tn != victim {
			survivor = tn
		}
	}
	testutil.Eventually(t, 20*time.Second, func() error {
		// A fresh client each time: the point is what the cluster answers, not how
		// long one client caches a dead coordinator.
		fetched, err := adminOf(t, survivor).FetchOffsets(ctx, "gf-group")
		if err != nil {
			return err
		}
		for p, o := range acked["gf"] {
			got, ok := fetched.Lookup("gf", p)
			if !ok || got.At != o.Offset {
				return fmt.Errorf("partition %d: committed offset %v on the new coordinator, acknowledged %d", p, got.At, o.Offset)
			}
		}
		return nil
	})
	var survivorSeeds []string
	for _, tn := range nodes {
		if tn != victim {
			survivorSeeds = append(survivorSeeds, tn.addr())
		}
	}
	second, err := kgo.NewClient(append(groupOpts, kgo.SeedBrokers(survivorSeeds...))...)
	testutil.NoError(t, err, "second consumer")
	defer second.Close()
	consume(second, total-total/2)
	if len(seen) != total {
		t.Fatalf("consumed %d distinct records, want %d", len(seen), total)
	}
}
