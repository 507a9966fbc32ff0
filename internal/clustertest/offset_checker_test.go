package clustertest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/runnel-io/runnel/internal/clustertest"
)

// offsetChecker commits ever larger offsets for one group (a client that assigns its
// own partitions, as kadm commits) and reads them back while faults go on, and checks
// that committed offsets never go backwards: every OffsetFetch must answer at least the
// largest offset whose commit had been acknowledged before the fetch was sent (issue
// 11 part 2: a node that lost the coordinator role must not answer from memory).
type offsetChecker struct {
	adm    *kadm.Client
	group  string
	topic  string
	cancel context.CancelFunc
	done   chan struct{}

	// Written by the run goroutine only; read after done.
	acked, fetches, commitErrs, fetchErrs int
	problems                              []string
}

func startOffsetChecker(t *testing.T, c *clustertest.Cluster, topic string) *offsetChecker {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	o := &offsetChecker{adm: c.Admin(t), group: "offsets-" + topic, topic: topic, cancel: cancel, done: make(chan struct{})}
	go o.run(ctx)
	t.Cleanup(o.stop)
	return o
}

func (o *offsetChecker) stop() {
	o.cancel()
	<-o.done
}

func (o *offsetChecker) run(ctx context.Context) {
	defer close(o.done)
	var maxAcked int64 = -1 // the largest offset whose commit was acknowledged
	for next := int64(0); ctx.Err() == nil; next++ {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		var os kadm.Offsets
		os.Add(kadm.Offset{Topic: o.topic, Partition: 0, At: next, LeaderEpoch: -1})
		resp, err := o.adm.CommitOffsets(cctx, o.group, os)
		cancel()
		if err == nil {
			err = resp.Error()
		}
		if err == nil {
			maxAcked, o.acked = next, o.acked+1
		} else if ctx.Err() == nil {
			o.commitErrs++
		}
		floor := maxAcked // acknowledged before the fetch is sent
		fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		fetched, err := o.adm.FetchOffsets(fctx, o.group)
		cancel()
		if err == nil {
			err = fetched.Error()
		}
		if err != nil {
			if ctx.Err() == nil {
				o.fetchErrs++
			}
			continue
		}
		o.fetches++
		got, ok := fetched.Lookup(o.topic, 0)
		switch {
		case !ok && floor >= 0:
			o.problems = append(o.problems, fmt.Sprintf("%s: OffsetFetch answered no offset after commit %d was acknowledged", time.Now().Format("15:04:05.000"), floor))
		case ok && got.At < floor:
			o.problems = append(o.problems, fmt.Sprintf("%s: OffsetFetch answered offset %d after commit %d was acknowledged", time.Now().Format("15:04:05.000"), got.At, floor))
		case ok && got.At > next:
			o.problems = append(o.problems, fmt.Sprintf("OffsetFetch answered offset %d, never committed (the last commit was %d)", got.At, next))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// check stops the checker and fails the test on any offset read going backwards, or
// when too few commits were acknowledged to prove anything.
func (o *offsetChecker) check(t *testing.T) {
	t.Helper()
	o.stop()
	t.Logf("committed offsets: %d commits acknowledged, %d failed; %d fetches checked, %d failed; %d went backwards",
		o.acked, o.commitErrs, o.fetches, o.fetchErrs, len(o.problems))
	if o.acked < 10 || o.fetches < 10 {
		t.Errorf("committed offsets: only %d commits acknowledged and %d fetches answered: the check proves nothing", o.acked, o.fetches)
	}
	for i, p := range o.problems {
		if i == 10 {
			t.Errorf("committed offsets: ... and %d more", len(o.problems)-i)
			break
		}
		t.Errorf("committed offsets went backwards: %s", p)
	}
}
