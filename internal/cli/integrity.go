package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/kafka"
)

// Integrity commands (docs/durability.md): `cluster scrub` runs a scrub pass
// on every node now, `topic repair --accept-loss` drops the damaged batches of a
// partition whose only copy is damaged, and `topic describe` and `cluster status`
// show damaged replicas. All speak Kafka: DescribeLogDirs and DeleteRecords with
// Runnel's tagged fields (internal/kafka/35_describe_log_dirs.go and
// 21_delete_records.go).

// nodeLogDirs is one node's DescribeLogDirs answer as Runnel's tags tell it.
type nodeLogDirs struct {
	Node int32
	// Integrity is nil when the node sent no NodeIntegrityTag (not Runnel, or a
	// version before v2).
	Integrity *kafka.NodeIntegrity
	// Damaged are the damaged ranges of the node's replicas.
	Damaged []nodeDamage
	Err     error
}

// nodeDamage is a damaged range of one replica.
type nodeDamage struct {
	Topic     string
	Partition int32
	kafka.DamagedRange
}

// liveNodes returns the ids of the nodes the cluster lists, sorted.
func liveNodes(ctx context.Context, adm *kadm.Client) ([]int32, error) {
	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return nil, fmt.Errorf("cluster metadata: %w", err)
	}
	ids := make([]int32, 0, len(md.Brokers))
	for _, b := range md.Brokers {
		ids = append(ids, b.NodeID)
	}
	slices.Sort(ids)
	return ids, nil
}

// describeNodeLogDirs sends DescribeLogDirs to each node at once, with a scrub
// request when scrub is not nil, and returns the answers in the order of nodes.
func describeNodeLogDirs(ctx context.Context, cl *kgo.Client, nodes []int32, scrub *kafka.ScrubRequest) []nodeLogDirs {
	out := make([]nodeLogDirs, len(nodes))
	var wg sync.WaitGroup
	for i, id := range nodes {
		wg.Go(func() { out[i] = describeNode(ctx, cl, id, scrub) })
	}
	wg.Wait()
	return out
}

func describeNode(ctx context.Context, cl *kgo.Client, id int32, scrub *kafka.ScrubRequest) nodeLogDirs {
	res := nodeLogDirs{Node: id}
	req := kmsg.NewPtrDescribeLogDirsRequest() // Topics nil: every partition
	if scrub != nil {
		b, _ := json.Marshal(scrub) // plain struct: cannot fail
		req.UnknownTags.Set(kafka.ScrubRequestTag, b)
	}
	resp, err := req.RequestWith(ctx, cl.Broker(int(id)))
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		res.Err = fmt.Errorf("node %d: describe log dirs: %w", id, err)
		return res
	}
	var bad error
	resp.UnknownTags.Each(func(tag uint32, b []byte) {
		if tag == kafka.NodeIntegrityTag {
			ni, err := kafka.DecodeNodeIntegrity(b)
			res.Integrity, bad = &ni, err
		}
	})
	for _, d := range resp.Dirs {
		for _, t := range d.Topics {
			for _, p := range t.Partitions {
				p.UnknownTags.Each(func(tag uint32, b []byte) {
					if tag != kafka.DamagedRangesTag {
						return
					}
					ds, err := kafka.DecodeDamagedRanges(b)
					bad = cmp.Or(bad, err)
					for _, r := range ds {
						res.Damaged = append(res.Damaged, nodeDamage{Topic: t.Topic, Partition: p.Partition, DamagedRange: r})
					}
				})
			}
		}
	}
	if bad != nil {
		res.Err = fmt.Errorf("node %d: reading its integrity fields: %w", id, bad)
	}
	slices.SortFunc(res.Damaged, func(a, b nodeDamage) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.FirstOffset, b.FirstOffset))
	})
	return res
}

// damageLine describes one damaged range for people.
func damageLine(d kafka.DamagedRange) string {
	var b strings.Builder
	if d.Offsets > 0 {
		fmt.Fprintf(&b, "offsets %d-%d (%d offsets)", d.FirstOffset, d.LastOffset, d.Offsets)
	} else {
		b.WriteString("bytes between two batches (no offsets: reads are not blocked)")
	}
	fmt.Fprintf(&b, " corrupt in %s at byte %d", d.File, d.Position)
	if d.Quarantine != "" {
		fmt.Fprintf(&b, ", quarantined copy %s", d.Quarantine)
	}
	return b.String()
}

// scrubReport is `cluster scrub --json`: INTERFACE.md fixes its fields.
type scrubReport struct {
	Nodes []scrubNodeRow `json:"nodes"`
}

type scrubNodeRow struct {
	Node           int32 `json:"node"`
	BatchesChecked int64 `json:"batches_checked"`
	// Corrupt counts the damaged ranges the pass found that were not known before.
	Corrupt int `json:"corrupt"`
	// Repaired counts the damaged ranges the node removed since the pass began
	// (fetched again from an intact replica, or dropped by accept-loss).
	Repaired int64 `json:"repaired"`
	// Unrepairable counts the partitions the node leads damaged with no intact copy.
	Unrepairable int `json:"unrepairable"`

	segments int
	bytes    int64
	seconds  float64
	err      error
	damaged  []nodeDamage
}

func newClusterScrub(conn *connFlags) *cobra.Command {
	var topics []string
	var wait time.Duration
	var out outputFlags
	cmd := &cobra.Command{
		Use:   "scrub",
		Short: "Verify every batch CRC and index entry on every node now, and report damage and repairs",
		Long: `Run one scrub pass now on every live node, as the background scrubber does
(log.scrub.*) but at full speed: each node reads the rolled segments of its logs
(of the --topic topics only, when given), verifies every batch's CRC-32C and the
offset and time index entries, rebuilds an index that disagrees, and records
damage (quarantined copy, WARN, runnel_corrupt_batches_total). A damaged replica
with an intact in-sync copy elsewhere is then repaired from it (it leaves the ISR,
truncates to the damage and fetches the range again); the command waits up to
--wait for those repairs. Prints per node the batches checked, the damaged ranges
found, those repaired since the pass began, and the partitions with no intact copy
(unrepairable: see runnel topic describe and runnel topic repair --accept-loss).
Exits non-zero when a node could not scrub or damage remains unrepairable. A
node's pass must end within 15 minutes (the client's read timeout; unpaced, a
pass reads at the disk's speed): scrub the topics of a larger node in turns with
--topic.

--output json (or --json) prints {"nodes":[{"node","batches_checked","corrupt",
"repaired","unrepairable"}]}.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			asJSON, err := out.json()
			if err != nil {
				return err
			}
			if wait < 0 {
				return usageErrorf("bad --wait %v: want a duration of 0 or more", wait)
			}
			// A pass reads every cold segment before the node answers: franz-go's
			// longest read timeout (15 minutes; --topic narrows a longer pass).
			cl, err := conn.client(kgo.RequestTimeoutOverhead(15 * time.Minute))
			if err != nil {
				return err
			}
			defer cl.Close()
			rows, err := runScrub(cmd.Context(), cl, topics, wait)
			if err != nil {
				return err
			}
			if asJSON {
				err = writeJSON(cmd.OutOrStdout(), scrubReport{Nodes: rows})
			} else {
				err = printScrub(cmd.OutOrStdout(), rows)
			}
			if err != nil {
				return err
			}
			return scrubFailures(rows)
		},
	}
	cmd.Flags().StringArrayVar(&topics, "topic", nil, "scrub only this topic's logs (repeatable)")
	cmd.Flags().DurationVar(&wait, "wait", time.Minute, "how long to wait for damaged replicas to be repaired from intact ones (0: do not wait)")
	out.add(cmd)
	return cmd
}

// runScrub scrubs every live node at once, then waits up to wait for the damage the
// nodes hold to be repaired or found unrepairable.
func runScrub(ctx context.Context, cl *kgo.Client, topics []string, wait time.Duration) ([]scrubNodeRow, error) {
	nodes, err := liveNodes(ctx, kadm.NewClient(cl))
	if err != nil {
		return nil, err
	}
	answers := describeNodeLogDirs(ctx, cl, nodes, &kafka.ScrubRequest{Topics: topics})
	rows := make([]scrubNodeRow, len(answers))
	for i, a := range answers {
		rows[i] = scrubRow(a, nil)
	}
	deadline := time.Now().Add(wait)
	for !settled(rows) && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
		later := describeNodeLogDirs(ctx, cl, nodes, nil)
		for i := range rows {
			if rows[i].err == nil && later[i].Err == nil {
				rows[i] = scrubRow(answers[i], &later[i])
			}
		}
	}
	return rows, nil
}

// scrubRow is a node's row from its scrub answer a and, once polled, its later state.
func scrubRow(a nodeLogDirs, later *nodeLogDirs) scrubNodeRow {
	row := scrubNodeRow{Node: a.Node, err: a.Err}
	switch {
	case a.Err != nil:
		return row
	case a.Integrity == nil || a.Integrity.Scrub == nil:
		row.err = fmt.Errorf("node %d did not scrub: it is not a Runnel node, or too old", a.Node)
		return row
	}
	s := a.Integrity.Scrub
	row.BatchesChecked, row.Corrupt, row.segments, row.bytes, row.seconds = s.BatchesChecked, s.Corrupt, s.Segments, s.BytesChecked, s.Seconds
	if len(s.Errors) > 0 {
		row.err = fmt.Errorf("node %d: %s", a.Node, strings.Join(s.Errors, "; "))
	}
	now := a
	if later != nil && later.Integrity != nil {
		now = *later
	}
	row.Repaired = now.Integrity.RepairedBatchesTotal - s.RepairedBefore
	row.Unrepairable = now.Integrity.UnrepairablePartitions
	row.damaged = slices.DeleteFunc(slices.Clone(now.Damaged), func(d nodeDamage) bool { return d.Offsets == 0 })
	return row
}

// settled reports whether no node holds damage that may still be repaired: every
// damaged partition is an unrepairable one.
func settled(rows []scrubNodeRow) bool {
	for _, r := range rows {
		parts := map[string]bool{}
		for _, d := range r.damaged {
			parts[fmt.Sprintf("%s-%d", d.Topic, d.Partition)] = true
		}
		if r.err == nil && len(parts) > r.Unrepairable {
			return false
		}
	}
	return true
}

func printScrub(w io.Writer, rows []scrubNodeRow) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "NODE\tSEGMENTS\tBATCHES-CHECKED\tMIB-CHECKED\tSECONDS\tCORRUPT\tREPAIRED\tUNREPAIRABLE")
	for _, r := range rows {
		if r.err != nil && r.BatchesChecked == 0 {
			fmt.Fprintf(tw, "%d\t-\t-\t-\t-\t-\t-\t-\n", r.Node)
			continue
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%.1f\t%.1f\t%d\t%d\t%d\n", r.Node, r.segments, r.BatchesChecked,
			float64(r.bytes)/(1<<20), r.seconds, r.Corrupt, r.Repaired, r.Unrepairable)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range rows {
		if r.err != nil {
			fmt.Fprintf(w, "node %d: error: %s\n", r.Node, oneLine(r.err.Error()))
		}
		for _, d := range r.damaged {
			fmt.Fprintf(w, "node %d: %s-%d still damaged: %s\n", r.Node, d.Topic, d.Partition, damageLine(d.DamagedRange))
		}
	}
	return nil
}

// scrubFailures is the command's error: nodes that could not scrub, damage that has
// no intact copy to be repaired from.
func scrubFailures(rows []scrubNodeRow) error {
	var errs []string
	unrepairable := 0
	for _, r := range rows {
		if r.err != nil {
			errs = append(errs, oneLine(r.err.Error()))
		}
		unrepairable += r.Unrepairable
	}
	if unrepairable > 0 {
		errs = append(errs, fmt.Sprintf("%d partitions are damaged with no intact copy to repair from: restore the files, or accept the loss with runnel topic repair NAME --partition P --accept-loss (runnel topic describe shows the damage)", unrepairable))
	}
	if len(errs) == 0 {
		return nil
	}
	return errors.New("scrub: " + strings.Join(errs, "; "))
}

// repairResult is `topic repair --json`.
type repairResult struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	kafka.AcceptDamageLossResult
}

func newTopicRepair(conn *connFlags) *cobra.Command {
	var partition int32
	var acceptLoss bool
	var out outputFlags
	cmd := &cobra.Command{
		Use:   "repair NAME --partition P --accept-loss",
		Short: "Drop the damaged batches of a partition whose only copy is corrupt (--accept-loss)",
		Long: `Accept the loss of the damaged batches of one partition whose only copy is corrupt
(docs/durability.md). Until then its leader serves the records before the damage
and answers reads at or past it with KAFKA_STORAGE_ERROR naming the file and the
offsets. With --accept-loss the leader replaces each damaged range by an empty
batch holding its offsets, so that every other record is readable again and no
offset is ever reused; the replicas damaged too fetch the result. Prints the
offsets lost, how many, and where the quarantined copy of the damaged segment is
(under DATA_DIR/quarantine/ on the leader: Runnel never deletes it, so the records
may still be recovered from it by hand).

It is refused while an intact copy exists (an in-sync replica that reports no
damage, or a live replica holding the damaged offsets): the partition then repairs
itself from it with nothing lost. Without --accept-loss nothing is changed: the
command shows the damage and explains.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := out.json()
			if err != nil {
				return err
			}
			if partition < 0 {
				return usageErrorf("--partition P is required")
			}
			cl, err := conn.client()
			if err != nil {
				return err
			}
			defer cl.Close()
			return repairTopic(cmd, cl, args[0], partition, acceptLoss, asJSON)
		},
	}
	cmd.Flags().Int32Var(&partition, "partition", -1, "the partition (required)")
	cmd.Flags().BoolVar(&acceptLoss, "accept-loss", false, "drop the damaged batches for good (required: their records are lost)")
	out.add(cmd)
	return cmd
}

func repairTopic(cmd *cobra.Command, cl *kgo.Client, topic string, partition int32, acceptLoss, asJSON bool) error {
	ctx := cmd.Context()
	adm := kadm.NewClient(cl)
	td, err := topicDetail(ctx, adm, topic)
	if err != nil {
		return fmt.Errorf("repair: %w", err)
	}
	if _, err := choosePartitions(td, partition); err != nil {
		return fmt.Errorf("repair: %w", err)
	}
	if !acceptLoss {
		w := cmd.ErrOrStderr()
		if nodes, err := liveNodes(ctx, adm); err == nil {
			found := false
			for _, a := range describeNodeLogDirs(ctx, cl, nodes, nil) {
				for _, d := range a.Damaged {
					if d.Topic == topic && d.Partition == partition && d.Offsets > 0 {
						found = true
						fmt.Fprintf(w, "node %d: %s\n", a.Node, damageLine(d.DamagedRange))
					}
				}
			}
			if !found {
				fmt.Fprintf(w, "No live node reports damage in topic %q partition %d.\n", topic, partition)
			}
		}
		return usageErrorf("topic repair drops the damaged batches of topic %q partition %d for good: their records are lost (the quarantined copy stays on the leader's disk). Add --accept-loss to do it; a partition with an intact in-sync replica repairs itself and needs nothing", topic, partition)
	}
	if !isRunnel(ctx, adm) {
		return fmt.Errorf("repair: the cluster is not Runnel (or a node did not answer ApiVersions): only Runnel knows damaged batches")
	}
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.TimeoutMillis = 30000
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	// Offset 0: a server that skipped the tag would delete nothing.
	rp.Partition, rp.Offset = partition, 0
	b, _ := json.Marshal(kafka.AcceptDamageLoss{AcceptLoss: true})
	rp.UnknownTags.Set(kafka.AcceptDamageLossTag, b)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("repair topic %q partition %d: %w", topic, partition, err)
	}
	var res *repairResult
	var code int16
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if t.Topic != topic || p.Partition != partition {
				continue
			}
			code = p.ErrorCode
			p.UnknownTags.Each(func(tag uint32, b []byte) {
				if tag == kafka.AcceptDamageLossTag {
					res = &repairResult{Topic: topic, Partition: partition}
					if err := json.Unmarshal(b, &res.AcceptDamageLossResult); err != nil {
						res = nil
					}
				}
			})
		}
	}
	switch {
	case res != nil && res.Refused != "":
		return fmt.Errorf("repair topic %q partition %d refused: %s", topic, partition, res.Refused)
	case res == nil && code != 0:
		return fmt.Errorf("repair topic %q partition %d: %w", topic, partition, kerr.ErrorForCode(code))
	case res == nil:
		return fmt.Errorf("repair topic %q partition %d: the leader did not answer the accept-loss request (not a Runnel node?)", topic, partition)
	case code != 0:
		return fmt.Errorf("repair topic %q partition %d: %w", topic, partition, withMessage(kerr.ErrorForCode(code), res.Message))
	}
	if asJSON {
		return writeJSON(cmd.OutOrStdout(), res)
	}
	w := cmd.OutOrStdout()
	if len(res.Dropped) == 0 {
		fmt.Fprintf(w, "Topic %q partition %d: nothing dropped: %s.\n", topic, partition, res.Message)
		return nil
	}
	fmt.Fprintf(w, "Topic %q partition %d: dropped %d offsets in %d damaged ranges on node %d (the leader); every other record is readable.\n",
		topic, partition, res.DroppedOffsets, len(res.Dropped), res.Leader)
	for _, d := range res.Dropped {
		fmt.Fprintf(w, "  lost offsets %d-%d (%d offsets), from %s at byte %d (%d bytes)\n", d.FirstOffset, d.LastOffset, d.Offsets, d.File, d.Position, d.Bytes)
		if d.Quarantine != "" {
			fmt.Fprintf(w, "  the damaged segment is kept in %s on node %d (never deleted by Runnel)\n", d.Quarantine, res.Leader)
		}
	}
	return nil
}
