package controller

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/runnel-io/runnel/internal/metadata"
)

const (
	// maxTopicNameLength is Kafka's limit (a partition directory name is the topic name,
	// '-' and the partition number, within 255 bytes).
	maxTopicNameLength = 249
	// maxPartitions bounds one topic's partition count, so a typo cannot make the
	// controller build millions of partitions in memory.
	maxPartitions = 100_000
)

// internalTopics are created with Topic.Internal set.
var internalTopics = map[string]bool{"__consumer_offsets": true, "__transaction_state": true, "__share_group_state": true}

// ValidateTopicName applies Kafka's rules: not empty, not "." or "..", at most 249
// characters, only ASCII letters, digits, '.', '_' and '-'. The error wraps
// ErrInvalidTopic and names the problem.
func ValidateTopicName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: topic name is empty", ErrInvalidTopic)
	case name == "." || name == "..":
		return fmt.Errorf("%w: topic name cannot be %q", ErrInvalidTopic, name)
	case len(name) > maxTopicNameLength:
		return fmt.Errorf("%w: topic name is %d characters long, longer than %d", ErrInvalidTopic, len(name), maxTopicNameLength)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("%w: topic name %q contains %q; only ASCII letters, digits, '.', '_' and '-' are allowed",
				ErrInvalidTopic, name, r)
		}
	}
	return nil
}

// foldTopicName maps '.' to '_': Kafka metric names do the same, so two topics that
// differ only there would collide.
func foldTopicName(name string) string { return strings.ReplaceAll(name, ".", "_") }

// CreateTopics creates the topics of specs in one Raft entry and returns one error
// (or nil) per spec, in order. A topic named twice in specs fails with
// ErrInvalidRequest; the others fail or succeed on their own. With validateOnly
// nothing is proposed. On a non-leader every spec fails with ErrNotController.
func (c *Controller) CreateTopics(ctx context.Context, specs []metadata.TopicSpec, validateOnly bool) []error {
	errs := make([]error, len(specs))
	err := c.withLeader(ctx, func(im *metadata.Image) error {
		planned := c.planTopics(im, specs, errs)
		if validateOnly || len(planned) == 0 {
			return nil
		}
		recs := make([]metadata.Record, 0, len(planned))
		for _, p := range planned {
			recs = append(recs, metadata.Record{Type: metadata.CreateTopicType, Topic: p.t})
		}
		res, err := c.proposeLocked(ctx, recs)
		for _, p := range planned {
			i, t := p.i, p.t
			if err != nil {
				errs[i] = err
			} else if got := res.cur.Topics[t.Name]; got == nil || got.ID != t.ID {
				// Only possible if a stale image let another proposal create it first.
				errs[i] = fmt.Errorf("%w: %q", ErrTopicExists, t.Name)
			}
		}
		return nil
	})
	fillErrors(errs, err)
	return errs
}

// plannedTopic is a valid spec's new topic and the spec's index.
type plannedTopic struct {
	i int
	t *metadata.Topic
}

// planTopics validates specs against im and builds the topics to create, in spec
// order; invalid specs get their error in errs.
func (c *Controller) planTopics(im *metadata.Image, specs []metadata.TopicSpec, errs []error) []plannedTopic {
	count := map[string]int{}
	for _, s := range specs {
		count[s.Name]++
	}
	folded := map[string]string{}
	for name := range im.Topics {
		folded[foldTopicName(name)] = name
	}
	live := liveBrokers(im)
	var planned []plannedTopic
	for i, s := range specs {
		if count[s.Name] > 1 {
			errs[i] = fmt.Errorf("%w: topic %q appears more than once in the request", ErrInvalidRequest, s.Name)
			continue
		}
		t, err := c.planTopic(im, live, s)
		if err == nil {
			if other, ok := folded[foldTopicName(s.Name)]; ok {
				err = fmt.Errorf("%w: topic %q collides with topic %q ('.' and '_' are the same in metric names)",
					ErrInvalidTopic, s.Name, other)
			}
		}
		if err != nil {
			errs[i] = err
			continue
		}
		folded[foldTopicName(s.Name)] = s.Name
		planned = append(planned, plannedTopic{i, t})
	}
	return planned
}

// planTopic validates one spec and returns its new topic.
func (c *Controller) planTopic(im *metadata.Image, live []metadata.Broker, s metadata.TopicSpec) (*metadata.Topic, error) {
	if err := ValidateTopicName(s.Name); err != nil {
		return nil, err
	}
	if im.Topics[s.Name] != nil {
		return nil, fmt.Errorf("%w: %q", ErrTopicExists, s.Name)
	}
	for k, v := range s.Configs {
		if err := validateConfig(c.cfg.ValidateTopicConfig, k, &v); err != nil {
			return nil, err
		}
	}
	assign, err := c.topicAssignment(im, live, s)
	if err != nil {
		return nil, err
	}
	id, err := newTopicID()
	if err != nil {
		return nil, err
	}
	t := &metadata.Topic{Name: s.Name, ID: id, Partitions: newPartitions(assign), Internal: internalTopics[s.Name]}
	if len(s.Configs) > 0 {
		t.Configs = maps.Clone(s.Configs)
	}
	return t, nil
}

// topicAssignment checks a manual assignment or places the replicas.
func (c *Controller) topicAssignment(im *metadata.Image, live []metadata.Broker, s metadata.TopicSpec) ([][]metadata.NodeID, error) {
	if len(s.Assignments) > 0 {
		if s.NumPartitions != -1 || s.ReplicationFactor != -1 {
			return nil, fmt.Errorf("%w: topic %q sets both a replica assignment and a partition count or replication factor",
				ErrInvalidRequest, s.Name)
		}
		lists, err := assignmentLists(s.Assignments)
		if err != nil {
			return nil, err
		}
		return lists, checkReplicaLists(im, lists, 0)
	}
	n, rf := s.NumPartitions, s.ReplicationFactor
	if n == -1 {
		n = c.cfg.DefaultPartitions
	}
	if rf == -1 {
		rf = c.cfg.DefaultReplicationFactor
	}
	if n <= 0 || n > maxPartitions {
		return nil, fmt.Errorf("%w: number of partitions must be between 1 and %d, got %d", ErrInvalidPartitions, maxPartitions, n)
	}
	return placeReplicas(live, 0, n, rf, randomSeed(len(live)), randomSeed(len(live)))
}

func randomSeed(n int) int { return rand.IntN(max(n, 1)) }

// assignmentLists turns a manual assignment keyed 0..n-1 into a slice.
func assignmentLists(m map[int32][]metadata.NodeID) ([][]metadata.NodeID, error) {
	lists := make([][]metadata.NodeID, len(m))
	for p, r := range m {
		if p < 0 || int(p) >= len(m) {
			return nil, fmt.Errorf("%w: partitions must be numbered 0 to %d, got partition %d", ErrInvalidReplicaAssignment, len(m)-1, p)
		}
		lists[p] = r
	}
	return lists, nil
}

// checkReplicaLists checks manual replica lists: non-empty, the same length (rf when
// rf > 0), distinct, registered and unfenced brokers.
func checkReplicaLists(im *metadata.Image, lists [][]metadata.NodeID, rf int) error {
	if len(lists) > maxPartitions {
		return fmt.Errorf("%w: more than %d partitions", ErrInvalidPartitions, maxPartitions)
	}
	for p, r := range lists {
		if rf <= 0 {
			rf = len(r)
		}
		if len(r) == 0 || len(r) != rf {
			return fmt.Errorf("%w: partition %d has %d replicas, want %d (all partitions need the same non-zero count)",
				ErrInvalidReplicaAssignment, p, len(r), rf)
		}
		for i, id := range r {
			if slices.Contains(r[:i], id) {
				return fmt.Errorf("%w: partition %d lists broker %d twice", ErrInvalidReplicaAssignment, p, id)
			}
			if b, ok := im.Brokers[id]; !ok || b.Fenced {
				return fmt.Errorf("%w: partition %d names broker %d, which is not registered or is fenced",
					ErrInvalidReplicaAssignment, p, id)
			}
		}
	}
	return nil
}

// newPartitions makes partitions led by their first replica, with every replica in
// sync and both epochs 0.
func newPartitions(assign [][]metadata.NodeID) []metadata.Partition {
	ps := make([]metadata.Partition, len(assign))
	for i, r := range assign {
		ps[i] = metadata.Partition{Replicas: slices.Clone(r), ISR: slices.Clone(r), Leader: r[0]}
	}
	return ps
}

// DeleteTopics deletes the named topics in one Raft entry and returns one error (or
// nil) per name: ErrUnknownTopic, ErrInvalidRequest for a name given twice,
// ErrTopicDeletionDisabled, or ErrNotController for all.
func (c *Controller) DeleteTopics(ctx context.Context, names []string) []error {
	errs := make([]error, len(names))
	err := c.withLeader(ctx, func(im *metadata.Image) error {
		if c.cfg.DisableTopicDeletion {
			return fmt.Errorf("%w (delete.topic.enable=false)", ErrTopicDeletionDisabled)
		}
		count := map[string]int{}
		for _, n := range names {
			count[n]++
		}
		var recs []metadata.Record
		var idx []int
		for i, n := range names {
			switch {
			case count[n] > 1:
				errs[i] = fmt.Errorf("%w: topic %q appears more than once in the request", ErrInvalidRequest, n)
			case im.Topics[n] == nil:
				errs[i] = fmt.Errorf("%w: %q", ErrUnknownTopic, n)
			default:
				recs = append(recs, metadata.Record{Type: metadata.DeleteTopicType, TopicName: n})
				idx = append(idx, i)
			}
		}
		if len(recs) == 0 {
			return nil
		}
		if _, err := c.proposeLocked(ctx, recs); err != nil {
			for _, i := range idx {
				errs[i] = err
			}
		}
		return nil
	})
	fillErrors(errs, err)
	return errs
}

// fillErrors sets err on every item that has no error of its own.
func fillErrors(errs []error, err error) {
	if err == nil {
		return
	}
	for i := range errs {
		if errs[i] == nil {
			errs[i] = err
		}
	}
}

// CreatePartitions grows topic to newTotal partitions. assignments, if not nil, gives
// the replicas of each new partition (len newTotal minus the current count), with the
// topic's replication factor; otherwise they are placed like a new topic's.
func (c *Controller) CreatePartitions(ctx context.Context, topic string, newTotal int32, assignments [][]metadata.NodeID, validateOnly bool) error {
	return c.withLeader(ctx, func(im *metadata.Image) error {
		t := im.Topics[topic]
		if t == nil {
			return fmt.Errorf("%w: %q", ErrUnknownTopic, topic)
		}
		cur := int32(len(t.Partitions))
		if newTotal <= cur || newTotal > maxPartitions {
			return fmt.Errorf("%w: topic %q has %d partitions; the new total must be more than %d and at most %d, got %d",
				ErrInvalidPartitions, topic, cur, cur, maxPartitions, newTotal)
		}
		assign, err := c.newPartitionAssignment(im, t, newTotal, assignments)
		if err != nil || validateOnly {
			return err
		}
		_, err = c.proposeLocked(ctx, []metadata.Record{{
			Type: metadata.CreatePartitionsType, TopicName: topic, NewPartitions: newPartitions(assign),
		}})
		return err
	})
}

func (c *Controller) newPartitionAssignment(im *metadata.Image, t *metadata.Topic, newTotal int32, assignments [][]metadata.NodeID) ([][]metadata.NodeID, error) {
	cur := int32(len(t.Partitions))
	rf := 1
	if cur > 0 {
		rf = len(t.Partitions[0].Replicas)
	}
	if assignments == nil {
		live := liveBrokers(im)
		return placeReplicas(live, cur, newTotal-cur, int16(rf), randomSeed(len(live)), randomSeed(len(live)))
	}
	if int32(len(assignments)) != newTotal-cur {
		return nil, fmt.Errorf("%w: %d assignments given for %d new partitions", ErrInvalidReplicaAssignment, len(assignments), newTotal-cur)
	}
	return assignments, checkReplicaLists(im, assignments, rf)
}

// TopicSpec is metadata.TopicSpec. The alias lasts until links.go spells it so.
type TopicSpec = metadata.TopicSpec
