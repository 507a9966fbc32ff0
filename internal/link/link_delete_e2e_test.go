package link_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/clustertest"
	"github.com/runnel-io/runnel/internal/testutil"
)

// linkNames is `link list --json`'s link names.
func linkNames(t *testing.T, boot string) []string {
	t.Helper()
	var res struct {
		Links []struct {
			Link string `json:"link"`
		} `json:"links"`
	}
	if err := json.Unmarshal([]byte(runCLI(t, "link", "list", "--json", "-b", boot)), &res); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range res.Links {
		out = append(out, l.Link)
	}
	return out
}

// awaitStates waits until `link status NAME` shows every partition of topic (want
// of them) in state.
func awaitStates(t *testing.T, boot, name, topic string, want int, state string) {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, func() error {
		n := 0
		for _, p := range status(t, boot, name).Partitions {
			if p.Topic != topic {
				continue
			}
			if p.State != state {
				return fmt.Errorf("link %s: %s-%d is %s, want %s", name, p.Topic, p.Partition, p.State, state)
			}
			n++
		}
		if n != want {
			return fmt.Errorf("link %s: status shows %d partitions of %s, want %d", name, n, topic, want)
		}
		return nil
	})
}

// TestLinkDelete: `link create` with --exclude leaves the excluded topic out and
// with --replication-factor places the mirror's replicas so; `link delete` removes
// the link and leaves its mirror topics read-only (a default producer refused at
// once) and paused (nothing fetched: the source's later records do not arrive),
// and `link promote NAME --all` still promotes them; `link delete --promote`
// promotes first, so the topic takes writes at once.
func TestLinkDelete(t *testing.T) {
	src := startNode(t)
	dst := clustertest.Start(t, clustertest.Options{Nodes: 2, InProcess: true, StartTimeout: 30 * time.Second,
		Sets: []string{"num.partitions=1", "default.replication.factor=1", "transaction.state.log.replication.factor=1",
			"offsets.topic.replication.factor=1", "transaction.state.log.min.isr=1"}})
	ctx := context.Background()
	sadm, dadm := src.Admin(t), dst.Admin(t)
	for _, topic := range []string{"kept", "kept-archive", "moved"} {
		if _, err := sadm.CreateTopic(ctx, 2, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	for p := int32(0); p < 2; p++ {
		produceTo(t, src, "kept", p, "k", 10)
		produceTo(t, src, "kept-archive", p, "x", 1)
		produceTo(t, src, "moved", p, "m", 5)
	}

	out := runCLI(t, "link", "create", "dr", "--source", src.Bootstrap(), "--topics", "kept.*", "--exclude", "kept-archive",
		"--replication-factor", "2", "-b", dst.Bootstrap())
	if !strings.Contains(out, "1 mirror topics: kept") {
		t.Fatalf("link create with --exclude kept-archive: %s", out)
	}
	runCLI(t, "link", "create", "mv", "--source", src.Bootstrap(), "--topics", "moved", "-b", dst.Bootstrap())
	awaitCaughtUp(t, sadm, dadm, "kept")
	awaitCaughtUp(t, sadm, dadm, "moved")
	td, err := dadm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if td.Has("kept-archive") {
		t.Fatalf("kept-archive, excluded by --exclude, is on the destination: %+v", td["kept-archive"])
	}
	for p, pd := range td["kept"].Partitions {
		if len(pd.Replicas) != 2 {
			t.Fatalf("mirror topic kept-%d has replicas %v, want 2 (--replication-factor 2)", p, pd.Replicas)
		}
	}
	for p, pd := range td["moved"].Partitions {
		if len(pd.Replicas) != 1 {
			t.Fatalf("mirror topic moved-%d has replicas %v, want 1 (default.replication.factor)", p, pd.Replicas)
		}
	}

	// delete: the link goes, its mirror topics stay read-only and paused.
	runCLI(t, "link", "delete", "dr", "-b", dst.Bootstrap())
	if names := linkNames(t, dst.Bootstrap()); slices.Contains(names, "dr") || !slices.Contains(names, "mv") {
		t.Fatalf("link list after deleting dr: %v, want mv alone", names)
	}
	awaitStates(t, dst.Bootstrap(), "dr", "kept", 2, "paused")
	refusedAtOnce(t, dst.Client(t), "kept")
	// Not fetched: what the source takes now is not copied, and the promote below
	// makes the topic writable right after what was copied before the delete.
	produceTo(t, src, "kept", 0, "after-delete", 3)
	rows := rowsOf(t, runCLI(t, "link", "promote", "dr", "--all", "--json", "-b", dst.Bootstrap()))
	if len(rows) != 2 || rows[0].WritableFrom != 10 || rows[1].WritableFrom != 10 {
		t.Fatalf("promote of a deleted link's topics: %+v, want both partitions of kept writable from 10", rows)
	}
	if offs := produceTo(t, dst, "kept", 0, "own", 1); offs[0] != 10 {
		t.Fatalf("first write to kept-0 after the promote at offset %d, want 10", offs[0])
	}
	awaitStates(t, dst.Bootstrap(), "dr", "kept", 2, "promoted")

	// delete --promote: promoted first, writable as soon as it returns.
	runCLI(t, "link", "delete", "mv", "--promote", "-b", dst.Bootstrap())
	if names := linkNames(t, dst.Bootstrap()); len(names) != 0 {
		t.Fatalf("link list after deleting both links: %v", names)
	}
	for p := int32(0); p < 2; p++ {
		if offs := produceTo(t, dst, "moved", p, "own", 1); offs[0] != 5 {
			t.Fatalf("first write to moved-%d after delete --promote at offset %d, want 5", p, offs[0])
		}
	}
	awaitStates(t, dst.Bootstrap(), "mv", "moved", 2, "promoted")
}
