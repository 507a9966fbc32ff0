package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/clustertest"
)

// TestShareCLI: `consume --share-group` consumes as a share group member and
// acknowledges what it prints (what it acquired beyond -n goes back to the group),
// `group list` and `group describe` show the group's protocol, `share describe` its start offset and lag,
// `share reset-offsets` plans (--dry-run) and sets the start offset, and `share
// delete` deletes it; against a Runnel node.
func TestShareCLI(t *testing.T) {
	b := clustertest.StartOne(t)
	mustRun(t, "", "topic", "create", "sq", "-b", b, "-p", "1")
	mustRun(t, "r0\nr1\nr2\nr3\nr4\nr5\nr6\nr7\nr8\nr9\n", "produce", "sq", "-b", b)
	setShareReset(t, b, "sg", "earliest")

	consume := func(n string) []string {
		t.Helper()
		r := mustRun(t, "", "consume", "sq", "-b", b, "--share-group", "sg", "-n", n, "--idle-timeout", "20s", "--format", "%s\n")
		return strings.Fields(r.stdout)
	}
	if got := consume("4"); strings.Join(got, ",") != "r0,r1,r2,r3" {
		t.Fatalf("first share consumer printed %v, want r0..r3", got)
	}
	if got := consume("6"); strings.Join(got, ",") != "r4,r5,r6,r7,r8,r9" {
		t.Fatalf("second share consumer printed %v, want r4..r9 (released by the first)", got)
	}

	var rows []groupRow
	if err := json.Unmarshal([]byte(mustRun(t, "", "group", "list", "-b", b, "--json").stdout), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Group != "sg" || rows[0].Protocol != "share" {
		t.Fatalf("group list: %+v, want sg with protocol share", rows)
	}

	if gd := describeGroupJSON(t, b, "sg"); gd.Protocol != "share" || len(gd.Partitions) != 1 || gd.Partitions[0].CommittedOffset != 10 {
		t.Fatalf("group describe of share group sg: %+v", gd)
	}

	describe := func() shareDescription {
		t.Helper()
		var d shareDescription
		r := mustRun(t, "", "share", "describe", "sg", "-b", b, "--json")
		if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
			t.Fatalf("share describe --json = %q (%v)", r.stdout, err)
		}
		return d
	}
	d := describe()
	if d.Protocol != "share" || d.State != "Empty" || len(d.Partitions) != 1 || d.Partitions[0].StartOffset != 10 || d.Partitions[0].Lag != 0 || d.Partitions[0].LogEndOffset != 10 {
		t.Fatalf("share describe after consuming everything: %+v", d)
	}
	if r := mustRun(t, "", "share", "describe", "sg", "-b", b); !strings.Contains(r.stdout, "Protocol: share") || !strings.Contains(r.stdout, "START-OFFSET") {
		t.Errorf("share describe: %q", r.stdout)
	}

	r := mustRun(t, "", "share", "reset-offsets", "sg", "--topic", "sq", "--to", "5", "--dry-run", "-b", b)
	if !strings.Contains(r.stdout, "Dry run") {
		t.Errorf("reset-offsets --dry-run: %q", r.stdout)
	}
	if d := describe(); d.Partitions[0].StartOffset != 10 {
		t.Fatalf("a dry run changed the start offset: %+v", d.Partitions)
	}
	mustRun(t, "", "share", "reset-offsets", "sg", "--topic", "sq", "--to", "5", "-b", b)
	if d := describe(); d.Partitions[0].StartOffset != 5 || d.Partitions[0].Lag != 5 {
		t.Fatalf("after reset-offsets --to 5: %+v", d.Partitions)
	}
	if got := consume("5"); strings.Join(got, ",") != "r5,r6,r7,r8,r9" {
		t.Fatalf("after reset to 5 printed %v, want r5..r9", got)
	}
	expectFailure(t, 2, "--to", "share", "reset-offsets", "sg", "--topic", "sq", "--to", "soon", "-b", b)
	expectFailure(t, 2, "cannot be used together", "consume", "sq", "-b", b, "--share-group", "sg", "--group", "g")
	expectFailure(t, 2, "cannot be used with --share-group", "consume", "sq", "-b", b, "--share-group", "sg", "--from-beginning")

	// An empty classic group with committed offsets is not a share group: share delete
	// refuses it, saying what it is, and the group keeps its offsets.
	commitOffset(t, b, "classic-g", "sq", 0, 3)
	expectFailure(t, 1, `delete share group "classic-g": it is a classic group, not a share group; delete it with runnel group delete`, "share", "delete", "classic-g", "-b", b)
	if gd := describeGroupJSON(t, b, "classic-g"); len(gd.Partitions) != 1 || gd.Partitions[0].CommittedOffset != 3 {
		t.Fatalf("classic group classic-g after share delete: %+v, want its offset 3 on sq-0", gd)
	}

	mustRun(t, "", "share", "delete", "sg", "-b", b)
	expectFailure(t, 1, `group "sg" does not exist`, "share", "describe", "sg", "-b", b)
}

// commitOffset commits offset for group on topic's partition p, with no member (an
// admin's commit, as kafka-consumer-groups --reset-offsets).
func commitOffset(t *testing.T, b, group, topic string, p int32, offset int64) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var offs kadm.Offsets
	offs.AddOffset(topic, p, offset, -1)
	if err := kadm.NewClient(cl).CommitAllOffsets(ctx, group, offs); err != nil {
		t.Fatalf("commit offset %d of group %s on %s-%d: %v", offset, group, topic, p, err)
	}
}

// setShareReset sets the group's share.auto.offset.reset (a GROUP config).
func setShareReset(t *testing.T, b, group, value string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "share.auto.offset.reset", &value
	res.Configs = append(res.Configs, c)
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.Resources[0].ErrorCode); err != nil {
		t.Fatalf("set share.auto.offset.reset of group %s: %v", group, err)
	}
}

// TestShareResetOffsetsNamesPartitions: partitions AlterShareGroupOffsets refuses are
// each named with the start offset asked and the broker's reason (a kfake broker
// answers every partition of sr refused, each with its own code and message).
func TestShareResetOffsetsNamesPartitions(t *testing.T) {
	c, b := newCluster(t, kfake.SeedTopics(2, "sr"))
	c.ControlKey(int16(kmsg.AlterShareGroupOffsets), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kr.(*kmsg.AlterShareGroupOffsetsRequest)
		resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewAlterShareGroupOffsetsResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
				sp.Partition = rp.Partition
				if rp.Partition == 0 {
					sp.ErrorCode, sp.ErrorMessage = kerr.UnknownTopicOrPartition.Code, kmsg.StringPtr("topic sr has no partition 0")
				} else {
					sp.ErrorCode, sp.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr("no, thanks")
				}
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	expectFailure(t, 1, `reset share group "srg" on topic "sr": `+
		`partition 0 (start offset 0): topic sr has no partition 0 (UNKNOWN_TOPIC_OR_PARTITION); `+
		`partition 1 (start offset 0): no, thanks (INVALID_REQUEST)`+"\n",
		"share", "reset-offsets", "srg", "--topic", "sr", "--to", "earliest", "-b", b)
}
