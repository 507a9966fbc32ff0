package cli

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestGroupConsumerProtocol: `consume --group-protocol consumer` joins with KIP-848,
// and `group list`/`describe` show the protocol, member epochs and assignments.
func TestGroupConsumerProtocol(t *testing.T) {
	_, b := newCluster(t, kfake.SeedTopics(2, "t"))
	mustRun(t, "a\nb\nc\nd\n", "produce", "t", "-b", b)
	mustRun(t, "", "consume", "t", "-b", b, "--group", "g848", "--group-protocol", "consumer", "--from-beginning", "-n", "4")
	mustRun(t, "", "consume", "t", "-b", b, "--group", "gclassic", "--from-beginning", "-n", "4")
	expectFailure(t, 2, `--group-protocol must be classic or consumer`, "consume", "t", "-b", b, "--group", "x", "--group-protocol", "eager")

	var rows []groupRow
	r := mustRun(t, "", "group", "list", "-b", b, "--json")
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil {
		t.Fatalf("group list --json = %q (%v)", r.stdout, err)
	}
	protocols := map[string]string{}
	for _, row := range rows {
		protocols[row.Group] = row.Protocol
	}
	if protocols["g848"] != "consumer" || protocols["gclassic"] != "classic" {
		t.Fatalf("group list protocols: %v", protocols)
	}

	// A live member: describe shows its epoch, assignment and target.
	var assigned atomic.Bool
	cl := newProducer(t, b, kgo.ConsumerGroup("g848"), kgo.ConsumeTopics("t"), kgo.ClientID("member-1"),
		kgo.ServerSideBalancer(), kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) { assigned.Store(true) }))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for !assigned.Load() && ctx.Err() == nil {
		pctx, pcancel := context.WithTimeout(ctx, 50*time.Millisecond)
		cl.PollFetches(pctx)
		pcancel()
	}
	d := describeGroupJSON(t, b, "g848")
	// (kfake names assigned topics by id only, so the assignment is checked against
	// Runnel in internal/group's tests.)
	if d.Protocol != "consumer" || d.State != "Stable" || len(d.Members) != 1 || d.Members[0].MemberEpoch == nil ||
		*d.Members[0].MemberEpoch < 1 || d.GroupEpoch < 1 || d.TotalLag != 0 || len(d.Partitions) == 0 {
		t.Fatalf("describe of a consumer group with one member: %+v", d)
	}
	r = mustRun(t, "", "group", "describe", "g848", "-b", b)
	if !strings.Contains(r.stdout, "Protocol: consumer") || !strings.Contains(r.stdout, "EPOCH") {
		t.Errorf("group describe: %q", r.stdout)
	}
	if d := describeGroupJSON(t, b, "gclassic"); d.Protocol != "classic" {
		t.Errorf("classic group described as %q", d.Protocol)
	}
}
