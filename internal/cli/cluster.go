package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// minISRKey is the topic config that sets how many in-sync replicas acks=all needs.
const minISRKey = "min.insync.replicas"

func newClusterCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Inspect the cluster",
		Args:  cobra.ArbitraryArgs,
		RunE:  groupRunE,
	}
	conn := addConnFlags(cmd.PersistentFlags())
	cmd.AddCommand(newClusterStatus(conn), newClusterConfig(conn), newClusterScrub(conn))
	cmd.AddCommand(clusterExtra(conn)...)
	return cmd
}

// clusterStatus is `cluster status`'s output.
type clusterStatus struct {
	ClusterID     string    `json:"cluster_id"`
	Controller    int32     `json:"controller"`
	Nodes         []nodeRow `json:"nodes"`
	NodesDown     int       `json:"nodes_down"`
	NodesDegraded int       `json:"nodes_degraded"`
	// NodesDamaged counts the nodes holding a damaged replica (Nodes[].Damaged).
	NodesDamaged    int                `json:"nodes_damaged"`
	Partitions      int                `json:"partitions"`
	UnderReplicated int                `json:"under_replicated"`
	UnderMinISR     int                `json:"under_min_isr"` // -1 when min.insync.replicas could not be read
	Offline         int                `json:"offline"`
	Problems        []partitionProblem `json:"problems"`
	// Reassignments are the partitions being moved (ListPartitionReassignments);
	// nil when the cluster could not say.
	Reassignments []reassigningPartition `json:"reassignments"`
}

// reassigningPartition is a partition move in progress.
type reassigningPartition struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Replicas  []int32 `json:"replicas"`
	Adding    []int32 `json:"adding"`
	Removing  []int32 `json:"removing"`
}

type nodeRow struct {
	ID      int32  `json:"id"`
	Host    string `json:"host"`
	Port    int32  `json:"port"`
	Rack    string `json:"rack,omitempty"`
	Leaders int    `json:"leaders"`
	// Replicas counts the partition replicas the node holds: with Leaders, the
	// balance of the cluster.
	Replicas int `json:"replicas"`
	// Down is a node that the cluster lists as fenced (DescribeCluster v2), or that
	// partitions name as a replica but the cluster does not list among its live
	// brokers: it was killed, stopped or cut off.
	Down bool `json:"down"`
	// Fenced: the controller fenced it (it has no session: no heartbeat within
	// broker.session.timeout.ms, its process gone, or a controlled shutdown).
	Fenced bool `json:"fenced,omitempty"`
	// DiskFull is a node whose data disk is full: it is up and serves reads, but takes
	// no writes and hands its leaderships to replicas that can (its DescribeLogDirs
	// answers KAFKA_STORAGE_ERROR for the directory).
	DiskFull bool `json:"disk_full,omitempty"`
	// DiskTotal and DiskFree are the data directory's filesystem size and usable
	// bytes, -1 (or absent) when unknown.
	DiskTotal int64 `json:"disk_total_bytes,omitempty"`
	DiskFree  int64 `json:"disk_free_bytes,omitempty"`
	// Damaged are the node's replicas holding a damaged range (a batch that failed
	// its CRC: docs/durability.md), from its DescribeLogDirs answer.
	Damaged []damagedReplica `json:"damaged,omitempty"`
}

// damagedReplica is a damaged range of a node's replica of a partition.
type damagedReplica struct {
	Topic       string `json:"topic"`
	Partition   int32  `json:"partition"`
	FirstOffset int64  `json:"first_offset"`
	LastOffset  int64  `json:"last_offset"`
	File        string `json:"file"`
	Quarantine  string `json:"quarantine,omitempty"`
}

// partitionProblem is a partition that is offline, under-replicated or under its
// min.insync.replicas.
type partitionProblem struct {
	Topic     string   `json:"topic"`
	Partition int32    `json:"partition"`
	Leader    int32    `json:"leader"`
	Replicas  []int32  `json:"replicas"`
	ISR       []int32  `json:"isr"`
	MinISR    int      `json:"min_isr,omitempty"`
	Problems  []string `json:"problems"`
}

func newClusterStatus(conn *connFlags) *cobra.Command {
	var out outputFlags
	var w watchFlags
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show nodes, the controller, leaders per node, and unhealthy partitions",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			asJSON, err := out.json()
			if err == nil {
				err = w.check()
			}
			if err != nil {
				return err
			}
			cl, err := conn.client()
			if err != nil {
				return err
			}
			defer cl.Close()
			return func(adm *kadm.Client) error {
				render := func(o io.Writer) error {
					st, err := loadClusterStatus(cmd.Context(), cl, adm, cmd.ErrOrStderr())
					if err != nil {
						return err
					}
					if asJSON {
						return writeJSON(o, st)
					}
					return printClusterStatus(o, st)
				}
				return runWatch(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), &w, cmd.CommandPath(), asJSON, render)
			}(kadm.NewClient(cl))
		},
	}
	out.add(cmd)
	w.add(cmd)
	return cmd
}

// loadClusterStatus reads metadata and min.insync.replicas; a failure to read the
// latter is a warning on warn, and the under-min-ISR count is then -1.
func loadClusterStatus(ctx context.Context, cl *kgo.Client, adm *kadm.Client, warn io.Writer) (*clusterStatus, error) {
	md, err := adm.Metadata(ctx)
	if err != nil {
		return nil, fmt.Errorf("cluster metadata: %w", err)
	}
	minISR, err := minISRs(ctx, adm, md.Topics.Names())
	if err != nil {
		fmt.Fprintf(warn, "runnel: warning: %v; under-min-ISR partitions not counted\n", err)
	}
	st := summarize(md, minISR)
	st.addFenced(ctx, cl)
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	dirs, err := adm.DescribeAllLogDirs(dctx, nil)
	if err != nil {
		fmt.Fprintf(warn, "runnel: warning: describe log dirs: %v; disk states of some nodes unknown\n", err)
	}
	st.addDisks(dirs)
	st.addDamage(dctx, cl)
	st.addReassignments(ctx, adm, md, warn)
	return st, nil
}

// addReassignments lists the partition moves in progress.
func (st *clusterStatus) addReassignments(ctx context.Context, adm *kadm.Client, md kadm.Metadata, warn io.Writer) {
	set := kadm.TopicsSet{}
	for _, td := range md.Topics {
		for p := range td.Partitions {
			set.Add(td.Topic, p)
		}
	}
	st.Reassignments = []reassigningPartition{}
	if len(set) == 0 {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := adm.ListPartitionReassignments(rctx, set)
	if err != nil {
		fmt.Fprintf(warn, "runnel: warning: list partition reassignments: %v\n", err)
		st.Reassignments = nil
		return
	}
	for _, r := range resp.Sorted() {
		st.Reassignments = append(st.Reassignments, reassigningPartition{Topic: r.Topic, Partition: r.Partition,
			Replicas: r.Replicas, Adding: r.AddingReplicas, Removing: r.RemovingReplicas})
	}
}

// addFenced names the nodes that are down with what the cluster knows of them:
// DescribeCluster v2 (KIP-1073) with IncludeFencedBrokers lists fenced nodes, so a
// node that holds no replicas shows too, with its address. Against a cluster that
// does not answer v2, the rows summarize inferred from the replicas stay.
func (st *clusterStatus) addFenced(ctx context.Context, cl *kgo.Client) {
	req := kmsg.NewPtrDescribeClusterRequest()
	req.IncludeFencedBrokers = true
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.ErrorCode != 0 || resp.Version < 2 {
		return
	}
	for _, b := range resp.Brokers {
		if !b.IsFenced {
			continue
		}
		i := slices.IndexFunc(st.Nodes, func(n nodeRow) bool { return n.ID == b.NodeID })
		if i < 0 {
			st.Nodes = append(st.Nodes, nodeRow{ID: b.NodeID})
			st.NodesDown++
			i = len(st.Nodes) - 1
		}
		n := &st.Nodes[i]
		if !n.Down {
			n.Down = true // listed live by a node that had not applied the fence yet
			st.NodesDown++
		}
		n.Host, n.Port, n.Fenced = b.Host, b.Port, true
		if b.Rack != nil {
			n.Rack = *b.Rack
		}
	}
	slices.SortFunc(st.Nodes, func(a, b nodeRow) int { return cmp.Compare(a.ID, b.ID) })
}

// addDisks fills in each node's disk from its DescribeLogDirs answer: a directory
// answered KAFKA_STORAGE_ERROR is full (Runnel reports nothing else there: a node
// with any other disk error stops).
func (st *clusterStatus) addDisks(dirs kadm.DescribedAllLogDirs) {
	for i := range st.Nodes {
		n := &st.Nodes[i]
		n.DiskTotal, n.DiskFree = -1, -1
		for _, d := range dirs[n.ID] {
			n.DiskTotal, n.DiskFree = d.TotalBytes, d.UsableBytes
			if errors.Is(d.Err, kerr.KafkaStorageError) && !n.DiskFull {
				n.DiskFull = true
				st.NodesDegraded++
			}
		}
	}
}

// addDamage fills in each live node's damaged replicas from its DescribeLogDirs
// answer (Runnel's DamagedRangesTag; nothing from a node that does not send it).
func (st *clusterStatus) addDamage(ctx context.Context, cl *kgo.Client) {
	var ids []int32
	for _, n := range st.Nodes {
		if !n.Down {
			ids = append(ids, n.ID)
		}
	}
	for _, a := range describeNodeLogDirs(ctx, cl, ids, nil) {
		i := slices.IndexFunc(st.Nodes, func(n nodeRow) bool { return n.ID == a.Node })
		for _, d := range a.Damaged {
			if d.Offsets == 0 {
				continue // bytes between batches: no record is unreadable
			}
			st.Nodes[i].Damaged = append(st.Nodes[i].Damaged, damagedReplica{Topic: d.Topic, Partition: d.Partition,
				FirstOffset: d.FirstOffset, LastOffset: d.LastOffset, File: d.File, Quarantine: d.Quarantine})
		}
		if len(st.Nodes[i].Damaged) > 0 {
			st.NodesDamaged++
		}
	}
}

// minISRs returns each topic's effective min.insync.replicas.
func minISRs(ctx context.Context, adm *kadm.Client, topics []string) (map[string]int, error) {
	m := map[string]int{}
	if len(topics) == 0 {
		return m, nil
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("describe topic configs: %w", err)
	}
	for _, rc := range rcs {
		if rc.Err != nil {
			return nil, fmt.Errorf("configs of topic %q: %w", rc.Name, withMessage(rc.Err, rc.ErrMessage))
		}
		for _, c := range rc.Configs {
			if c.Key != minISRKey {
				continue
			}
			n, err := strconv.Atoi(c.MaybeValue())
			if err != nil {
				return nil, fmt.Errorf("topic %q: bad %s %q", rc.Name, minISRKey, c.MaybeValue())
			}
			m[rc.Name] = n
		}
	}
	return m, nil
}

// summarize counts leaders per node and unhealthy partitions. minISR is nil when
// unknown; a topic missing from it is never under its minimum.
func summarize(md kadm.Metadata, minISR map[string]int) *clusterStatus {
	st := &clusterStatus{ClusterID: md.Cluster, Controller: md.Controller, Problems: []partitionProblem{}}
	if minISR == nil {
		st.UnderMinISR = -1
	}
	leaders, replicas := map[int32]int{}, map[int32]int{}
	for _, td := range md.Topics.Sorted() {
		for _, p := range td.Partitions.Sorted() {
			st.Partitions++
			leaders[p.Leader]++
			for _, r := range p.Replicas {
				replicas[r]++
			}
			if pr, ok := st.check(p, minISR[td.Topic]); ok {
				st.Problems = append(st.Problems, pr)
			}
		}
	}
	live := map[int32]bool{}
	for _, b := range md.Brokers {
		row := nodeRow{ID: b.NodeID, Host: b.Host, Port: b.Port, Leaders: leaders[b.NodeID], Replicas: replicas[b.NodeID]}
		if b.Rack != nil {
			row.Rack = *b.Rack
		}
		live[b.NodeID] = true
		st.Nodes = append(st.Nodes, row)
	}
	// Metadata lists live brokers only (as Kafka's); a node that still holds replicas
	// but is missing there is down.
	for _, td := range md.Topics {
		for _, p := range td.Partitions {
			for _, id := range p.Replicas {
				if !live[id] {
					live[id] = true
					st.Nodes = append(st.Nodes, nodeRow{ID: id, Down: true, Replicas: replicas[id]})
					st.NodesDown++
				}
			}
		}
	}
	slices.SortFunc(st.Nodes, func(a, b nodeRow) int { return cmp.Compare(a.ID, b.ID) })
	return st
}

// check counts p's problems and reports whether it has any.
func (st *clusterStatus) check(p kadm.PartitionDetail, minISR int) (partitionProblem, bool) {
	pr := partitionProblem{Topic: p.Topic, Partition: p.Partition, Leader: p.Leader,
		Replicas: p.Replicas, ISR: p.ISR, MinISR: minISR}
	if p.Leader < 0 {
		st.Offline++
		pr.Problems = append(pr.Problems, "offline")
	}
	if len(p.ISR) < len(p.Replicas) {
		st.UnderReplicated++
		pr.Problems = append(pr.Problems, "under-replicated")
	}
	if minISR > 0 && len(p.ISR) < minISR {
		st.UnderMinISR++
		pr.Problems = append(pr.Problems, "under-min-isr")
	}
	if p.Err != nil {
		pr.Problems = append(pr.Problems, oneLine(p.Err.Error()))
	}
	return pr, len(pr.Problems) > 0
}

func printClusterStatus(w io.Writer, st *clusterStatus) error {
	fmt.Fprintf(w, "Cluster ID: %s\nController: %s\n\n", orDash(st.ClusterID), dash(int64(st.Controller)))
	tw := newTable(w)
	fmt.Fprintln(tw, "NODE\tHOST:PORT\tRACK\tREPLICAS\tLEADERS\tSTATE")
	for _, n := range st.Nodes {
		if n.Down && n.Fenced {
			fmt.Fprintf(tw, "%d\t%s:%d\t%s\t%d\t%d\tdown (fenced by the controller: no heartbeat, process gone or stopped)\n", n.ID, n.Host, n.Port, orDash(n.Rack), n.Replicas, n.Leaders)
			continue
		}
		if n.Down {
			fmt.Fprintf(tw, "%d\t-\t-\t%d\t%d\tdown (fenced or not registered; it still holds replicas)\n", n.ID, n.Replicas, n.Leaders)
			continue
		}
		fmt.Fprintf(tw, "%d\t%s:%d\t%s\t%d\t%d\t%s\n", n.ID, n.Host, n.Port, orDash(n.Rack), n.Replicas, n.Leaders, n.state())
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if st.NodesDown > 0 {
		fmt.Fprintf(w, "\n%d of %d nodes down\n", st.NodesDown, len(st.Nodes))
	} else {
		fmt.Fprintf(w, "\n%d of %d nodes up\n", len(st.Nodes), len(st.Nodes))
	}
	if st.NodesDegraded > 0 {
		fmt.Fprintf(w, "%d of %d nodes degraded (disk full: no writes, leaderships handed to other replicas)\n", st.NodesDegraded, len(st.Nodes))
	}
	if st.NodesDamaged > 0 {
		fmt.Fprintf(w, "%d of %d nodes hold damaged replicas (batches that failed their CRC: docs/durability.md):\n", st.NodesDamaged, len(st.Nodes))
	}
	for _, n := range st.Nodes {
		for _, d := range n.Damaged {
			fmt.Fprintf(w, "node %d: %s-%d offsets %d-%d corrupt in %s (quarantined copy %s): repaired from an intact in-sync replica if there is one, else see runnel topic repair\n",
				n.ID, d.Topic, d.Partition, d.FirstOffset, d.LastOffset, d.File, orDash(d.Quarantine))
		}
	}
	underMin := "unknown"
	if st.UnderMinISR >= 0 {
		underMin = strconv.Itoa(st.UnderMinISR)
	}
	fmt.Fprintf(w, "\nPartitions: %d  under-replicated: %d  under-min-ISR: %s  offline: %d\n",
		st.Partitions, st.UnderReplicated, underMin, st.Offline)
	if len(st.Reassignments) > 0 {
		fmt.Fprintf(w, "Reassignments in progress (%d; runnel reassign status for bytes left):\n", len(st.Reassignments))
		for _, r := range st.Reassignments {
			fmt.Fprintf(w, "  %s-%d  replicas %s  adding %s  removing %s\n", r.Topic, r.Partition,
				joinInt32s(r.Replicas), joinInt32s(r.Adding), joinInt32s(r.Removing))
		}
	}
	if len(st.Problems) == 0 {
		return nil
	}
	fmt.Fprintln(tw, "\nTOPIC\tPARTITION\tLEADER\tREPLICAS\tISR\tPROBLEMS")
	for _, p := range st.Problems {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", p.Topic, p.Partition, dash(int64(p.Leader)),
			joinInt32s(p.Replicas), joinInt32s(p.ISR), strings.Join(p.Problems, ","))
	}
	return tw.Flush()
}

// state is the STATE column of a node that is up.
func (n nodeRow) state() string {
	if !n.DiskFull {
		if len(n.Damaged) > 0 {
			return fmt.Sprintf("degraded: %d damaged replica ranges", len(n.Damaged))
		}
		return "up"
	}
	if n.DiskTotal > 0 && n.DiskFree >= 0 {
		return fmt.Sprintf("degraded: disk full (%s free of %s)", mib(n.DiskFree), mib(n.DiskTotal))
	}
	return "degraded: disk full"
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
