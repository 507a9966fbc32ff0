package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/clitext"
	"github.com/runnel-io/runnel/internal/kafka"
)

// The KIP-73 throttle configs, as kafka-reassign-partitions.sh sets them.
const (
	leaderRateKey      = "leader.replication.throttled.rate"       // broker, bytes/s
	followerRateKey    = "follower.replication.throttled.rate"     // broker, bytes/s
	leaderReplicasKey  = "leader.replication.throttled.replicas"   // topic, PARTITION:BROKER,...
	followerReplicaKey = "follower.replication.throttled.replicas" // topic, PARTITION:BROKER,...
)

func newReassignExecute(conn *connFlags) *cobra.Command {
	var file string
	var throttle int64
	var additional bool
	cmd := &cobra.Command{
		Use:   "execute",
		Short: "Start the moves of a reassignment plan (AlterPartitionReassignments), optionally throttled",
		Long: `Start the moves of a plan (Kafka's reassignment JSON, from 'runnel reassign plan' or
any Kafka tool) through AlterPartitionReassignments. The plan is checked first: every
topic and partition must exist, every replica list be non-empty, without a node twice,
and name live nodes only.

Before starting, the current assignment of the plan's partitions is printed: save it to
roll back with 'runnel reassign execute --plan'.

--throttle BYTES_PER_SEC throttles the copies (KIP-73: leader.replication.throttled.rate
and follower.replication.throttled.rate, and on each topic
leader.replication.throttled.replicas, the current replicas of the moving partitions,
and follower.replication.throttled.replicas, the new ones). On Runnel the controller
sets them in the same metadata change that starts the moves and removes them when the
last move ends or is cancelled; nothing else removes them meanwhile. On another Kafka
implementation they are set first, as kafka-reassign-partitions.sh does, and 'runnel
reassign status' removes them once nothing moves.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if throttle < 0 {
				return usageErrorf("--throttle must not be negative")
			}
			plan, err := readPlanFile(cmd.InOrStdin(), file)
			if err != nil {
				return err
			}
			cl, err := conn.client()
			if err != nil {
				return err
			}
			defer cl.Close()
			return executePlan(cmd.Context(), cl, cmd.OutOrStdout(), plan, throttle, additional)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&file, "plan", "", "the reassignment JSON file (- for stdin) (required)")
	fs.Int64Var(&throttle, "throttle", 0, "throttle the copies to this many bytes/s per node (0: no throttle)")
	fs.BoolVar(&additional, "additional", false, "start even though other reassignments are in progress (their throttled replicas are kept)")
	_ = cmd.MarkFlagRequired("plan")
	return cmd
}

// readPlanFile reads and parses a reassignment file; it checks its shape only (the
// cluster is checked by validatePlan).
func readPlanFile(stdin io.Reader, file string) ([]reassignPartition, error) {
	var data []byte
	var err error
	if file == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(file)
	}
	if err != nil {
		return nil, fmt.Errorf("read plan: %w", err)
	}
	ps, err := parsePlan(data)
	if err != nil {
		return nil, fmt.Errorf("plan %s: %w", file, err)
	}
	return ps, nil
}

// parsePlan parses Kafka's reassignment JSON, refusing what Kafka's tool refuses.
func parsePlan(data []byte) ([]reassignPartition, error) {
	var raw struct {
		Version    *int `json:"version"`
		Partitions []struct {
			Topic     *string  `json:"topic"`
			Partition *int32   `json:"partition"`
			Replicas  []int32  `json:"replicas"`
			LogDirs   []string `json:"log_dirs"`
		} `json:"partitions"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("not Kafka's reassignment JSON: %w", err)
	}
	if raw.Version == nil || *raw.Version != 1 {
		return nil, errors.New(`want "version": 1`)
	}
	if len(raw.Partitions) == 0 {
		return nil, errors.New("no partition to reassign")
	}
	var ps []reassignPartition
	var problems []string
	for i, p := range raw.Partitions {
		switch {
		case p.Topic == nil || *p.Topic == "":
			problems = append(problems, fmt.Sprintf("entry %d has no topic", i+1))
		case p.Partition == nil:
			problems = append(problems, fmt.Sprintf("entry %d (topic %q) has no partition", i+1, *p.Topic))
		case slices.ContainsFunc(p.LogDirs, func(d string) bool { return d != "any" }):
			problems = append(problems, fmt.Sprintf("topic %q partition %d: log_dirs other than \"any\" are not supported", *p.Topic, *p.Partition))
		default:
			ps = append(ps, reassignPartition{Topic: *p.Topic, Partition: *p.Partition, Replicas: p.Replicas})
		}
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "\n"))
	}
	return ps, nil
}

// validatePlan checks the plan against the cluster and returns the current
// replicas of each of its partitions, in the plan's order.
func validatePlan(v *clusterView, ps []reassignPartition) ([][]int32, error) {
	current := map[string]map[int32][]int32{}
	for _, p := range v.parts {
		if current[p.Topic] == nil {
			current[p.Topic] = map[int32][]int32{}
		}
		current[p.Topic][p.Partition] = p.Replicas
	}
	var problems []string
	bad := func(p reassignPartition, format string, args ...any) {
		problems = append(problems, fmt.Sprintf("topic %q partition %d: ", p.Topic, p.Partition)+fmt.Sprintf(format, args...))
	}
	seen := map[string]bool{}
	olds := make([][]int32, len(ps))
	for i, p := range ps {
		key := p.Topic + "/" + strconv.Itoa(int(p.Partition))
		old, ok := current[p.Topic][p.Partition]
		switch {
		case current[p.Topic] == nil:
			bad(p, "unknown topic")
		case !ok:
			bad(p, "unknown partition (the topic has %d)", len(current[p.Topic]))
		case seen[key]:
			bad(p, "listed twice")
		case len(p.Replicas) == 0:
			bad(p, "empty replica list")
		}
		seen[key] = true
		olds[i] = old
		for j, id := range p.Replicas {
			if slices.Contains(p.Replicas[:j], id) {
				bad(p, "node %d is listed twice in the replicas %s", id, joinInt32s(p.Replicas))
			} else if _, live := v.live[id]; !live {
				bad(p, "unknown node %d (live nodes: %s)", id, joinInt32s(v.liveIDs()))
			}
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("invalid plan: %s", strings.Join(problems, "\n"))
	}
	return olds, nil
}

// executePlan validates the plan, refuses it while other moves are in progress
// (unless additional), prints the rollback plan, sets the throttles and starts the
// moves.
func executePlan(ctx context.Context, cl *kgo.Client, out io.Writer, ps []reassignPartition, throttle int64, additional bool) error {
	adm := kadm.NewClient(cl) // a view of cl: closing cl is the caller's
	v, err := loadClusterView(ctx, adm)
	if err != nil {
		return err
	}
	olds, err := validatePlan(v, ps)
	if err != nil {
		return err
	}
	if !additional {
		moving, err := listReassignments(ctx, adm, v)
		if err != nil {
			return err
		}
		if len(moving) > 0 {
			return fmt.Errorf("%s in progress (%s): wait for them ('runnel reassign status'), cancel them, or pass --additional",
				clitext.Plural(len(moving), "reassignment is", "reassignments are"), describeMoving(moving))
		}
	}
	rollback := make([]reassignPartition, len(ps))
	for i, p := range ps {
		rollback[i] = reassignPartition{Topic: p.Topic, Partition: p.Partition, Replicas: olds[i]}
	}
	fmt.Fprintln(out, "Current assignment (save it to roll back with 'runnel reassign execute --plan'):")
	if err := writeReassignment(out, rollback); err != nil {
		return err
	}
	runnel := throttle > 0 && isRunnel(ctx, adm)
	if throttle > 0 && !runnel {
		if err := setThrottles(ctx, adm, out, v, ps, olds, throttle, additional); err != nil {
			return err
		}
	}
	var owned int64
	if runnel {
		owned = throttle
	}
	if err := startMoves(ctx, cl, out, ps, olds, owned); err != nil {
		return err
	}
	if runnel {
		fmt.Fprintf(out, "Throttled the copies to %d bytes/s; the controller removes the throttles when the moves end.\n", throttle)
	}
	return nil
}

// startMoves sends AlterPartitionReassignments and prints each partition's result.
// ownedThrottle > 0 asks a Runnel controller to throttle the moves it starts with
// throttles it owns (kafka.ReassignmentThrottleTag); 0 sends Kafka's request alone.
func startMoves(ctx context.Context, cl *kgo.Client, out io.Writer, ps []reassignPartition, olds [][]int32, ownedThrottle int64) error {
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	req.TimeoutMillis = 60_000
	for _, p := range ps {
		if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != p.Topic {
			t := kmsg.NewAlterPartitionAssignmentsRequestTopic()
			t.Topic = p.Topic
			req.Topics = append(req.Topics, t)
		}
		rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		rp.Partition, rp.Replicas = p.Partition, p.Replicas
		t := &req.Topics[len(req.Topics)-1]
		t.Partitions = append(t.Partitions, rp)
	}
	if ownedThrottle > 0 {
		kafka.SetReassignmentThrottle(req, ownedThrottle)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err == nil {
		err = answerErr(resp.ErrorCode, resp.ErrorMessage)
	}
	if err != nil {
		return fmt.Errorf("alter partition reassignments: %w", err)
	}
	answers := map[string]map[int32]error{}
	for _, t := range resp.Topics {
		answers[t.Topic] = map[int32]error{}
		for _, p := range t.Partitions {
			answers[t.Topic][p.Partition] = answerErr(p.ErrorCode, p.ErrorMessage)
		}
	}
	failed := 0
	for i, p := range ps {
		err, ok := answers[p.Topic][p.Partition]
		switch {
		case !ok:
			failed++
			fmt.Fprintf(out, "topic %q partition %d: no answer from the cluster\n", p.Topic, p.Partition)
		case err != nil:
			failed++
			fmt.Fprintf(out, "topic %q partition %d: %v\n", p.Topic, p.Partition, err)
		default:
			fmt.Fprintf(out, "Started %s/%d: %s -> %s\n", p.Topic, p.Partition, joinInt32s(olds[i]), joinInt32s(p.Replicas))
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %s refused (see above)", failed, clitext.Plural(len(ps), "reassignment was", "reassignments were"))
	}
	fmt.Fprintf(out, "Started %s; follow them with 'runnel reassign status'.\n", clitext.Plural(len(ps), "reassignment", "reassignments"))
	return nil
}

// brokerMessage folds kadm's ErrAndMessage into withMessage's form.
func brokerMessage(err error) error {
	var em *kadm.ErrAndMessage
	if errors.As(err, &em) {
		return withMessage(em.Err, em.ErrMessage)
	}
	return err
}

// throttledReplicas are the KIP-73 lists of one topic: the leader side holds every
// current replica of a moving partition, the follower side its new replicas.
func throttledReplicas(ps []reassignPartition, olds [][]int32) (leaders, followers map[string][]string, nodes []int32) {
	leaders, followers = map[string][]string{}, map[string][]string{}
	for i, p := range ps {
		adding := slices.DeleteFunc(slices.Clone(p.Replicas), func(id int32) bool { return slices.Contains(olds[i], id) })
		if len(adding) == 0 && len(p.Replicas) == len(olds[i]) {
			continue // a new order only: nothing is copied
		}
		for _, id := range olds[i] {
			leaders[p.Topic] = append(leaders[p.Topic], fmt.Sprintf("%d:%d", p.Partition, id))
		}
		for _, id := range adding {
			followers[p.Topic] = append(followers[p.Topic], fmt.Sprintf("%d:%d", p.Partition, id))
		}
		for _, id := range append(slices.Clone(olds[i]), p.Replicas...) {
			if !slices.Contains(nodes, id) {
				nodes = append(nodes, id)
			}
		}
	}
	slices.Sort(nodes)
	return leaders, followers, nodes
}

// setThrottles sets the KIP-73 throttles for the plan (incremental SET operations,
// as kafka-reassign-partitions.sh): the rate on every node involved and the
// throttled replica lists on every topic moving.
func setThrottles(ctx context.Context, adm *kadm.Client, out io.Writer, v *clusterView, ps []reassignPartition, olds [][]int32, rate int64, additional bool) error {
	leaders, followers, nodes := throttledReplicas(ps, olds)
	// A node that is down (a dead one being drained) sends nothing and cannot be
	// configured: the rate goes to the live ones.
	nodes = slices.DeleteFunc(nodes, func(id int32) bool { _, live := v.live[id]; return !live })
	if len(nodes) == 0 {
		return nil
	}
	if additional {
		// The moves already in progress keep their throttled replicas.
		if err := mergeThrottled(ctx, adm, leaders, followers); err != nil {
			return err
		}
	}
	r := strconv.FormatInt(rate, 10)
	resps, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: leaderRateKey, Value: &r},
		{Op: kadm.SetConfig, Name: followerRateKey, Value: &r},
	}, nodes...)
	if err = alterConfigsErr(resps, err, "node"); err != nil {
		return fmt.Errorf("set the throttle rate: %w", err)
	}
	topics := make([]string, 0, len(leaders))
	for t := range leaders {
		topics = append(topics, t)
	}
	slices.Sort(topics)
	for _, t := range topics {
		l, f := strings.Join(leaders[t], ","), strings.Join(followers[t], ",")
		resps, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
			{Op: kadm.SetConfig, Name: leaderReplicasKey, Value: &l},
			{Op: kadm.SetConfig, Name: followerReplicaKey, Value: &f},
		}, t)
		if err = alterConfigsErr(resps, err, "topic"); err != nil {
			return fmt.Errorf("set the throttled replicas: %w", err)
		}
	}
	fmt.Fprintf(out, "Throttled the copies to %d bytes/s on nodes %s (topics %s).\n", rate, joinInt32s(nodes), strings.Join(topics, ", "))
	return nil
}

// mergeThrottled adds the topics' current throttled replica lists to the new ones.
func mergeThrottled(ctx context.Context, adm *kadm.Client, leaders, followers map[string][]string) error {
	topics := make([]string, 0, len(leaders))
	for t := range leaders {
		topics = append(topics, t)
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, topics...)
	if err != nil {
		return fmt.Errorf("describe the throttled replicas: %w", brokerMessage(err))
	}
	for _, rc := range rcs {
		if rc.Err != nil {
			return fmt.Errorf("configs of topic %q: %w", rc.Name, withMessage(rc.Err, rc.ErrMessage))
		}
		for _, c := range rc.Configs {
			var into map[string][]string
			switch c.Key {
			case leaderReplicasKey:
				into = leaders
			case followerReplicaKey:
				into = followers
			default:
				continue
			}
			for item := range strings.SplitSeq(c.MaybeValue(), ",") {
				if item = strings.TrimSpace(item); item != "" && !slices.Contains(into[rc.Name], item) {
					into[rc.Name] = append(into[rc.Name], item)
				}
			}
		}
	}
	return nil
}

// alterConfigsErr is the first error of an AlterConfigs call, naming the resource.
func alterConfigsErr(resps kadm.AlterConfigsResponses, err error, kind string) error {
	if err != nil {
		return brokerMessage(err)
	}
	for _, r := range resps {
		if r.Err != nil {
			return fmt.Errorf("%s %s: %w", kind, r.Name, withMessage(r.Err, r.ErrMessage))
		}
	}
	return nil
}
