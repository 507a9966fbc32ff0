package clustertest_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/clustertest"
	"github.com/runnel-io/runnel/internal/testutil"
	"github.com/runnel-io/runnel/mirror"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestMirrorProcessesZombieFenced pauses a `runnel mirror run` process while it is
// inside a transaction on the target (records of the data partition produced, not yet
// committed: seen on the target's transaction coordinator with DescribeTransactions
// while the process is stopped), lets a second process take the partition over and
// commit more, then resumes the paused one. Its transaction must not commit: the
// target holds each source record once, in order, with no gap.
//
// The transaction timeout (60 s) is far longer than the takeover, so the only thing
// that can stop the zombie's commit is the new owner's fence (same transactional.id).
// With per-process transactional ids instead (fencing off) the test fails: the
// zombie commits on resume and the target holds the records it had in flight twice.
func TestMirrorProcessesZombieFenced(t *testing.T) {
	t.Parallel() // the mirror tests mostly wait on sessions and timers: they overlap
	// group.min.session.timeout.ms=1000 lets the mirrors use a 3 s session.
	src := clustertest.Start(t, clustertest.Options{Nodes: 1, StartTimeout: startTimeout,
		Sets: append(append([]string{}, clustertest.FastFailureDetection...), "group.min.session.timeout.ms=1000")})
	tgt := startCluster(t, 1)
	const topic, name = "orders", "dr"
	createTopic(t, src, topic, 1, 1)
	args := []string{"--source", src.Bootstrap(), "--target", tgt.Bootstrap(), "--name", name, "--source-alias", "east",
		"--session-timeout", "3s", "--transaction-timeout", "60s"}
	a := startMirrorProc(t, args...)
	b := startMirrorProc(t, args...)
	procs := map[string]*mirrorProc{ownerOf(a): a, ownerOf(b): b}

	// A steady load, so that the owner is (almost) always inside a transaction.
	var produced atomic.Int64
	stopLoad := make(chan struct{})
	loadDone := make(chan error, 1)
	go func() { loadDone <- produceUntil(src, topic, stopLoad, &produced) }()
	loadStopped := false
	stop := func() error {
		if loadStopped {
			return nil
		}
		loadStopped = true
		close(stopLoad)
		return <-loadDone
	}
	defer stop()

	tgtAdm := tgt.Admin(t)
	tp := mirror.TopicPartition{Topic: topic, Partition: 0}
	// Set-up: one process owns the partition and has committed some records.
	var owner string
	testutil.Eventually(t, 60*time.Second, func() error {
		st, err := partitionState(tgt, name, tp)
		if err != nil {
			return err
		}
		if procs[st.Owner] == nil || st.Records < 1000 {
			return fmt.Errorf("partition %s: owner %q, %d records mirrored; want one of the two processes, 1000 records", tp, st.Owner, st.Records)
		}
		owner = st.Owner
		return nil
	})
	zombie := procs[owner]
	var other string
	for o := range procs {
		if o != owner {
			other = o
		}
	}

	// Pause the owner until it is caught with a transaction open on the data
	// partition. The mirror writes a transaction's records and its state together
	// (once its offsets are predictable), so the transaction is usually open on the
	// progress topic too, which holds read_committed reads of the progress until the
	// new owner's fence aborts it: the position before the pause is read while the
	// process still runs.
	txnPrefix := "runnel-mirror." + name + "." + topic + ".0"
	var caught kadm.DescribedTransaction
	var before *mirror.PartitionState
	for attempt := 0; ; attempt++ {
		if attempt == 50 {
			t.Fatalf("never caught process %s inside a transaction on east.%s/0 in %d pauses", owner, topic, attempt)
		}
		var err error
		before, err = partitionState(tgt, name, tp)
		testutil.NoError(t, err, "progress before the pause")
		zombie.signal(syscall.SIGSTOP)
		d1, ok1 := openTxn(t, tgtAdm, txnPrefix, "east."+topic)
		// A request the process sent before it stopped may still be served: the state
		// must be the same a moment later, when nothing it sent is left in flight.
		time.Sleep(300 * time.Millisecond)
		d2, ok2 := openTxn(t, tgtAdm, txnPrefix, "east."+topic)
		if ok1 && ok2 && d1.ProducerEpoch == d2.ProducerEpoch && d1.StartTimestamp == d2.StartTimestamp {
			caught = d2
			break
		}
		zombie.signal(syscall.SIGCONT)
		time.Sleep(time.Duration(50+rand.IntN(200)) * time.Millisecond) // the fault schedule: try again a little later
	}
	t.Logf("process %s paused inside transaction %s (producer %d epoch %d, partitions %v)",
		owner, caught.TxnID, caught.ProducerID, caught.ProducerEpoch, caught.Topics)

	// The other process takes the partition over and commits past the zombie's position.
	testutil.Eventually(t, 60*time.Second, func() error {
		st, err := partitionState(tgt, name, tp)
		if err != nil {
			return err
		}
		if st.Owner != other || st.Next <= before.Next+1000 {
			return fmt.Errorf("partition %s: owner %s next offset %d; want process %s past %d (the paused owner's position + 1000)",
				tp, st.Owner, st.Next, other, before.Next+1000)
		}
		return nil
	})
	resumedAt := len(zombie.all.String())
	zombie.signal(syscall.SIGCONT)
	// Set-up: the resumed process has noticed it lost the partition (group) or was
	// fenced (target), so that whatever it tried after resuming has been tried.
	testutil.Eventually(t, 30*time.Second, func() error {
		out := zombie.all.String()[resumedAt:]
		if !strings.Contains(out, "partitions revoked") && !strings.Contains(out, "fenced") {
			return fmt.Errorf("the resumed process %s has not logged losing partition %s yet", owner, tp)
		}
		return nil
	})
	if err := stop(); err != nil {
		t.Fatalf("producing: %v", err)
	}
	total := int(produced.Load())
	want := readTopic(t, src, topic, total)
	// Set-up: the mirror has copied up to the source end.
	srcEnd := want[0][len(want[0])-1].Offset + 1
	testutil.Eventually(t, 60*time.Second, func() error {
		st, err := partitionState(tgt, name, tp)
		if err != nil {
			return err
		}
		if st.Next < srcEnd {
			return fmt.Errorf("partition %s: next offset %d, source end %d", tp, st.Next, srcEnd)
		}
		return nil
	})
	got := readTopicAll(t, tgt, "east."+topic)
	compareMirrored(t, want, got)
	t.Logf("%d records, each once in order on the target; zombie output after resume:\n%s",
		total, tailLines(grepLines(zombie.all.String()[resumedAt:], "fenced", "revoked", "restarting"), 10))
}

// ownerOf is the owner string a mirror process writes in its states (host/pid).
func ownerOf(p *mirrorProc) string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/%d", host, p.cmd.Process.Pid)
}

// partitionState reads tp's committed state from the mirror's progress topic.
func partitionState(tgt *clustertest.Cluster, name string, tp mirror.TopicPartition) (*mirror.PartitionState, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p, err := mirror.ReadProgress(ctx, strings.Split(tgt.Bootstrap(), ","), nil, name)
	if err != nil {
		return nil, err
	}
	st := p.States[tp]
	if st == nil {
		return nil, fmt.Errorf("no state of %s in the progress of mirror %s yet", tp, name)
	}
	return st, nil
}

// openTxn finds the transaction of an id starting with prefix that is Ongoing on
// the target with dataTopic among its partitions.
func openTxn(t *testing.T, adm *kadm.Client, prefix, dataTopic string) (kadm.DescribedTransaction, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ds, err := adm.DescribeTransactions(ctx)
	if err != nil {
		t.Logf("describe transactions: %v", err)
		return kadm.DescribedTransaction{}, false
	}
	for id, d := range ds {
		if !strings.HasPrefix(id, prefix) || d.Err != nil || d.State != "Ongoing" {
			continue
		}
		if _, ok := d.Topics[dataTopic]; !ok {
			continue
		}
		return d, true
	}
	return kadm.DescribedTransaction{}, false
}

// produceUntil produces keyed records with headers to partition 0 of topic at a
// steady rate until stop closes, counting the acknowledged ones.
func produceUntil(c *clustertest.Cluster, topic string, stop <-chan struct{}, n *atomic.Int64) error {
	cl, err := kgo.NewClient(append(c.ClientDefaults(), kgo.DefaultProduceTopic(topic))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond) // 200 records every 20 ms: 10,000/s
	defer tick.Stop()
	for j := 0; ; {
		select {
		case <-stop:
			return nil
		case <-tick.C:
		}
		var rs []*kgo.Record
		for end := j + 200; j < end; j++ {
			rs = append(rs, &kgo.Record{Key: []byte(fmt.Sprintf("k%d", j%97)), Value: []byte(fmt.Sprintf("v%07d", j)),
				Headers: []kgo.RecordHeader{{Key: "seq", Value: []byte(fmt.Sprint(j))}}})
		}
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			return err
		}
		n.Add(int64(len(rs)))
	}
}

// readTopicAll reads every committed record of topic, by partition: it stops when a
// read_committed fetch has reached the partitions' end offsets as listed first.
func readTopicAll(t *testing.T, c *clustertest.Cluster, topic string) map[int32][]*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	ends, err := c.Admin(t).ListEndOffsets(ctx, topic)
	testutil.NoError(t, err, "end offsets of "+topic)
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { want[o.Partition] = o.Offset })
	cl := c.Client(t, kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.KeepControlRecords())
	out := map[int32][]*kgo.Record{}
	reached := map[int32]bool{}
	for p, e := range want {
		reached[p] = e == 0
	}
	done := func() bool {
		for _, r := range reached {
			if !r {
				return false
			}
		}
		return true
	}
	for !done() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s: end offsets %v not reached: %v", topic, want, reached)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset+1 >= want[r.Partition] {
				reached[r.Partition] = true
			}
			if !r.Attrs.IsControl() {
				out[r.Partition] = append(out[r.Partition], r)
			}
		})
	}
	return out
}

// compareMirrored checks that got holds exactly want, partition by partition, in
// order, record by record (key, value, headers, timestamp).
func compareMirrored(t *testing.T, want, got map[int32][]*kgo.Record) {
	t.Helper()
	for part, ws := range want {
		gs := got[part]
		for i := range min(len(ws), len(gs)) {
			if err := sameMirrored(ws[i], gs[i]); err != nil {
				t.Fatalf("partition %d, record %d (source offset %d, target offset %d): %v", part, i, ws[i].Offset, gs[i].Offset, err)
			}
		}
		if len(gs) != len(ws) {
			t.Fatalf("partition %d: %d records on the target, want %d", part, len(gs), len(ws))
		}
	}
	for part, gs := range got {
		if _, ok := want[part]; !ok {
			t.Fatalf("partition %d: %d records on the target, none on the source", part, len(gs))
		}
	}
}

func grepLines(s string, words ...string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		for _, w := range words {
			if strings.Contains(l, w) {
				out = append(out, l)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}
