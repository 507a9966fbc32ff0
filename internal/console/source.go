package console

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/httpd"
	"github.com/runnel-io/runnel/internal/metadata"
)

// The web console's data (docs/console.md). Where each number comes from:
//   - the cluster, its nodes, topics, partitions (leader, replicas, ISR) and the
//     reassignments in progress: this node's metadata image, which every node
//     replays from the same quorum, so any node shows the cluster the controller
//     does (up to the records it has not applied yet: the header says which offset);
//   - a partition's offsets: this node's replica when it leads the partition and
//     holds its lease; otherwise the leader's answer to ListOffsets, asked through
//     this node's own Kafka listener;
//   - consumer groups and their lag: DescribeGroups, OffsetFetch and ListOffsets
//     (kadm's Lag) through the same listener, which finds each group's coordinator,
//     wherever it runs;
//   - mirror links: their progress topics on this cluster, read with the mirror
//     package's ReadProgress, as `runnel mirror status` does.
//   - cluster links: the image's links, their partitions' status asked of every
//     broker with link.StatusEveryBroker, as `runnel link status` does (links.go).
//
// What a leader or coordinator does not answer within askTimeout is shown as
// unavailable with the error, never as an old number.
//
// Who sees what (auth.go): with a signed-in user, a topic or group it may not
// DESCRIBE is left out of every list and its own page is refused (403, naming the
// missing ACL, whether or not it exists), the reassignments need DESCRIBE on the
// cluster (Kafka's ListPartitionReassignments), as do the cluster links (`runnel
// link status`); the nodes need nothing (Kafka's
// DescribeCluster), their damaged replicas are those of topics the user may DESCRIBE.

// askTimeout bounds the questions the console asks over Kafka, below the
// console's own deadline (httpd.DefaultConsoleTimeout) so the page still renders
// with what did answer.
const askTimeout = 2 * time.Second

// source implements httpd.ConsoleSource over the node.
type source struct {
	n      Node
	acl    authz
	logger *slog.Logger
	charts *chartStore // charts.go

	// reassignPrev is the reassignments page's last sample of the replicas' sizes,
	// for the rate of the next (sizes.go).
	reassignMu   sync.Mutex
	reassignPrev *reassignSample
}

// canDescribe reports whether the request of ctx may DESCRIBE res.
func (s *source) canDescribe(ctx context.Context, v *view, res auth.Resource) bool {
	return s.acl.allowed(ctx, v.im, metadata.ACLOpDescribe, res)
}

// visibleTopics are sortedTopics less those the request of ctx may not DESCRIBE.
func (s *source) visibleTopics(ctx context.Context, v *view) []*metadata.Topic {
	var out []*metadata.Topic
	for _, t := range sortedTopics(v.im) {
		if s.canDescribe(ctx, v, auth.Topic(t.Name)) {
			out = append(out, t)
		}
	}
	return out
}

// view is the metadata the answers read, with the header that goes with it.
type view struct {
	im     *metadata.Image
	hdr    httpd.Header
	ctrlID int32
	alive  map[metadata.NodeID]bool // registered and unfenced
}

// snapshot takes the node's current image, or says why there is none yet.
func (s *source) snapshot() (*view, error) {
	n := s.n
	if !n.Serving() {
		return nil, fmt.Errorf("%w: node %d is starting: waiting for the metadata quorum", httpd.ErrUnavailable, n.ID())
	}
	im := n.Image()
	if im == nil {
		return nil, fmt.Errorf("%w: node %d is starting: waiting for the first metadata image", httpd.ErrUnavailable, n.ID())
	}
	v := &view{im: im, ctrlID: n.ControllerID(), alive: map[metadata.NodeID]bool{}}
	for id, b := range im.Brokers {
		v.alive[id] = !b.Fenced
	}
	v.hdr = httpd.Header{ServedBy: n.ID(), GeneratedAt: time.Now(), MetadataOffset: im.Offset}
	if err := n.ReadyErr(); err != nil {
		v.hdr.Warnings = append(v.hdr.Warnings, fmt.Sprintf("Node %d is not ready (%v).", n.ID(), err))
	}
	if !n.LeaseValid() {
		v.hdr.Warnings = append(v.hdr.Warnings, fmt.Sprintf("Node %d has no current lease from the controller (no heartbeat "+
			"answered unfenced within broker.session.timeout.ms): the metadata shown (offset %d) may be out of date; "+
			"ask another node.", n.ID(), im.Offset))
	}
	if v.ctrlID < 0 {
		v.hdr.Warnings = append(v.hdr.Warnings, fmt.Sprintf("Node %d knows no active controller: the metadata quorum may have lost its majority.", n.ID()))
	}
	return v, nil
}

// minISR is a topic's effective min.insync.replicas.
func (s *source) minISR(im *metadata.Image, t *metadata.Topic) int32 {
	return s.n.MinISR(im, t)
}

// status classifies a partition, with Kafka's rules: a partition without a live
// leader is offline; one whose ISR is below min.insync.replicas refuses acks=all;
// one whose ISR is smaller than its replication factor (the replicas less those a
// reassignment is adding, as Kafka counts) is under-replicated.
func (v *view) status(p metadata.Partition, minISR int32) string {
	switch {
	case p.Leader == metadata.NoLeader || !v.alive[p.Leader]:
		return httpd.StatusOffline
	case int32(len(p.ISR)) < minISR:
		return httpd.StatusUnderMinISR
	case len(p.ISR) < len(p.Replicas)-len(p.AddingReplicas):
		return httpd.StatusUnderReplicated
	}
	return httpd.StatusOK
}

func ids(in []metadata.NodeID) []int32 {
	out := make([]int32, len(in))
	for i, id := range in {
		out[i] = int32(id)
	}
	return out
}

func isInternalTopic(t *metadata.Topic) bool { return t.Internal || strings.HasPrefix(t.Name, "__") }

// sortedTopics are the image's topics, user topics first, each group by name.
func sortedTopics(im *metadata.Image) []*metadata.Topic {
	ts := make([]*metadata.Topic, 0, len(im.Topics))
	for _, t := range im.Topics {
		ts = append(ts, t)
	}
	sort.Slice(ts, func(i, j int) bool {
		if a, b := isInternalTopic(ts[i]), isInternalTopic(ts[j]); a != b {
			return b
		}
		return ts[i].Name < ts[j].Name
	})
	return ts
}

func (s *source) Cluster(ctx context.Context) (*httpd.Cluster, error) {
	v, err := s.snapshot()
	if err != nil {
		return nil, err
	}
	c := &httpd.Cluster{Header: v.hdr, ClusterID: v.im.ClusterID, ControllerID: v.ctrlID, NodeReady: s.n.Ready(),
		Problems: []httpd.PartitionProblem{}, Nodes: s.nodes(ctx, v)}
	c.NodesTotal = len(c.Nodes)
	for _, nd := range c.Nodes {
		if nd.State == httpd.NodeDown {
			c.NodesDown++
		}
	}
	rank := map[string]int{httpd.StatusOffline: 0, httpd.StatusUnderMinISR: 1, httpd.StatusUnderReplicated: 2}
	for _, t := range s.visibleTopics(ctx, v) {
		c.Topics++
		if strings.HasPrefix(t.Name, mirrorProgressPrefix) {
			c.Mirrors++
		}
		sum := s.summary(v, t)
		c.Partitions += sum.PartitionCount
		c.Offline += sum.Offline
		c.UnderMinISR += sum.UnderMinISR
		c.UnderReplicated += sum.UnderReplicated
		c.Reassigning += sum.Reassigning
		minISR := s.minISR(v.im, t)
		for i, p := range t.Partitions {
			if st := v.status(p, minISR); st != httpd.StatusOK {
				c.Problems = append(c.Problems, httpd.PartitionProblem{Topic: t.Name, Partition: int32(i), Status: st,
					Leader: int32(p.Leader), Replicas: ids(p.Replicas), ISR: ids(p.ISR)})
			}
		}
	}
	sort.SliceStable(c.Problems, func(i, j int) bool { return rank[c.Problems[i].Status] < rank[c.Problems[j].Status] })
	if len(c.Problems) > httpd.ProblemsLimit {
		c.Problems, c.ProblemsTruncated = c.Problems[:httpd.ProblemsLimit], true
	}
	return c, nil
}

func (s *source) Nodes(ctx context.Context) (*httpd.Nodes, error) {
	v, err := s.snapshot()
	if err != nil {
		return nil, err
	}
	return &httpd.Nodes{Header: v.hdr, ControllerID: v.ctrlID, Nodes: s.nodes(ctx, v)}, nil
}

// nodes lists the registered brokers and the nodes that hold replicas without being
// registered (unregistered while a replica stayed, or never joined), by id.
func (s *source) nodes(ctx context.Context, v *view) []httpd.Node {
	byID := map[metadata.NodeID]*httpd.Node{}
	for id, b := range v.im.Brokers {
		nd := &httpd.Node{ID: int32(id), Host: b.Host, Port: b.Port, Rack: b.Rack, Registered: true, State: httpd.NodeUp,
			Fenced: b.Fenced, DiskFull: b.DiskFull}
		for _, d := range b.Damaged {
			if !s.canDescribe(ctx, v, auth.Topic(d.Topic)) {
				continue
			}
			nd.Damaged = append(nd.Damaged, httpd.DamagedReplica{Topic: d.Topic, Partition: d.Partition,
				FirstOffset: d.FirstOffset, LastOffset: d.LastOffset, File: d.File})
		}
		if b.Fenced {
			nd.State = httpd.NodeDown
			if b.FencedAtMs > 0 {
				at := time.UnixMilli(b.FencedAtMs)
				nd.FencedAt = &at
			}
		}
		byID[id] = nd
	}
	for _, t := range v.im.Topics {
		for _, p := range t.Partitions {
			for _, r := range p.Replicas {
				nd := byID[r]
				if nd == nil {
					nd = &httpd.Node{ID: int32(r), State: httpd.NodeDown}
					byID[r] = nd
				}
				nd.Replicas++
			}
			if nd := byID[p.Leader]; nd != nil {
				nd.Leaders++
			}
		}
	}
	out := make([]httpd.Node, 0, len(byID))
	for id, nd := range byID {
		nd.Controller = int32(id) == v.ctrlID
		nd.Self = int32(id) == s.n.ID()
		out = append(out, *nd)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// summary counts a topic's partitions by status.
func (s *source) summary(v *view, t *metadata.Topic) httpd.TopicSummary {
	sum := httpd.TopicSummary{Name: t.Name, Internal: isInternalTopic(t), PartitionCount: len(t.Partitions)}
	minISR := s.minISR(v.im, t)
	for _, p := range t.Partitions {
		sum.ReplicationFactor = max(sum.ReplicationFactor, len(p.TargetReplicas()))
		switch v.status(p, minISR) {
		case httpd.StatusOffline:
			sum.Offline++
		case httpd.StatusUnderMinISR:
			sum.UnderMinISR++
		}
		// Under min ISR and offline partitions are under-replicated too, as in
		// Kafka's UnderReplicatedPartitions.
		if len(p.ISR) < len(p.Replicas)-len(p.AddingReplicas) {
			sum.UnderReplicated++
		}
		if p.Reassigning() {
			sum.Reassigning++
		}
	}
	return sum
}

func (s *source) Topics(ctx context.Context) (*httpd.Topics, error) {
	v, err := s.snapshot()
	if err != nil {
		return nil, err
	}
	out := &httpd.Topics{Header: v.hdr, Topics: []httpd.TopicSummary{}}
	for _, t := range s.visibleTopics(ctx, v) {
		out.Topics = append(out.Topics, s.summary(v, t))
	}
	s.fillTopicSizes(ctx, v, out)
	return out, nil
}

func (s *source) Topic(ctx context.Context, name string) (*httpd.Topic, error) {
	// Refused before the lookup, so that a refusal does not tell whether it exists.
	v, err := s.requireOn(ctx, metadata.ACLOpDescribe, auth.Topic(name))
	if err != nil {
		return nil, err
	}
	t := v.im.Topic(name)
	if t == nil {
		return nil, fmt.Errorf("%w: topic %q does not exist (metadata offset %d on node %d)", httpd.ErrNotFound, name, v.im.Offset, s.n.ID())
	}
	out := &httpd.Topic{Header: v.hdr, TopicSummary: s.summary(v, t), ID: topicID(t.ID),
		MinISR: s.minISR(v.im, t), Configs: map[string]string{}, Partitions: []httpd.Partition{}, Groups: []httpd.TopicGroupLag{}}
	for k, val := range t.Configs {
		out.Configs[k] = val
	}
	for i, p := range t.Partitions {
		hp := httpd.Partition{Partition: int32(i), Leader: int32(p.Leader), LeaderEpoch: p.LeaderEpoch,
			Replicas: ids(p.Replicas), ISR: ids(p.ISR), Status: v.status(p, out.MinISR)}
		if p.Reassigning() {
			hp.Adding, hp.Removing = ids(p.AddingReplicas), ids(p.RemovingReplicas)
		}
		for _, r := range p.Replicas {
			if !v.alive[r] {
				hp.DownReplicas = append(hp.DownReplicas, int32(r))
			}
		}
		out.Partitions = append(out.Partitions, hp)
	}
	// The offsets and the groups' lag come from other nodes: ask both at once.
	var wg sync.WaitGroup
	wg.Go(func() { s.fillOffsets(ctx, v, t, out.Partitions) })
	wg.Go(func() { out.Groups, out.GroupsError = s.topicGroups(ctx, v, name) })
	wg.Wait()
	return out, nil
}

// fillOffsets sets each partition's offsets: from the local replica when this node
// leads it and holds its lease (so the numbers are the leader's own), else from the
// leader through ListOffsets.
func (s *source) fillOffsets(ctx context.Context, v *view, t *metadata.Topic, parts []httpd.Partition) {
	ask := false
	for i := range parts {
		hp := &parts[i]
		if o, ok := s.n.LeaderOffsets(metadata.TopicPartition{Topic: t.Name, Partition: hp.Partition}); ok {
			hp.Offsets = httpd.Offsets{LogStart: &o.LogStart, HighWatermark: &o.HighWatermark, LogEnd: &o.LogEnd, Source: httpd.OffsetsLocal}
			continue
		}
		if hp.Status == httpd.StatusOffline {
			hp.Offsets = httpd.Offsets{Source: httpd.OffsetsUnavailable, Error: "no live leader"}
			continue
		}
		ask = true
	}
	if !ask {
		return
	}
	starts, ends, err := s.listOffsets(ctx, t.Name)
	for i := range parts {
		hp := &parts[i]
		if hp.Offsets.Source != "" {
			continue
		}
		hp.Offsets = listedOffsets(starts, ends, err, t.Name, hp.Partition, hp.Leader)
	}
}

// listedOffsets are one partition's offsets from the leader's ListOffsets answers,
// or unavailable with the reason.
func listedOffsets(starts, ends kadm.ListedOffsets, err error, topic string, partition, leader int32) httpd.Offsets {
	unavailable := func(why error) httpd.Offsets {
		return httpd.Offsets{Source: httpd.OffsetsUnavailable, Error: fmt.Sprintf("leader %d did not answer: %v", leader, why)}
	}
	s, sok := starts.Lookup(topic, partition)
	e, eok := ends.Lookup(topic, partition)
	switch {
	case sok && s.Err != nil:
		return unavailable(s.Err)
	case eok && e.Err != nil:
		return unavailable(e.Err)
	case !sok || !eok:
		if err == nil {
			err = errors.New("no answer for the partition")
		}
		return unavailable(err)
	}
	return httpd.Offsets{LogStart: &s.Offset, HighWatermark: &e.Offset, Source: httpd.OffsetsListOffsets}
}

// listOffsets asks the leaders of topic's partitions for their log start and end
// offsets (the end a consumer sees: the high watermark). The answers hold what did
// answer even when err is set.
func (s *source) listOffsets(ctx context.Context, topic string) (starts, ends kadm.ListedOffsets, err error) {
	adm, err := s.kafkaAdmin()
	if err != nil {
		return nil, nil, err
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel()
	var serr, eerr error
	var wg sync.WaitGroup
	wg.Go(func() { starts, serr = adm.ListStartOffsets(ctx, topic) })
	wg.Go(func() { ends, eerr = adm.ListEndOffsets(ctx, topic) })
	wg.Wait()
	return starts, ends, errors.Join(serr, eerr)
}

// kafkaOpts are the options of the console's Kafka clients: the node's own listener
// with its inter-broker login (Node.KafkaClient). One client per answer, closed after
// it: the console keeps no connection open between pages.
func (s *source) kafkaOpts() ([]kgo.Opt, error) {
	seed, opts, err := s.n.KafkaClient(askTimeout)
	if err != nil {
		return nil, err
	}
	return append([]kgo.Opt{kgo.ClientID(fmt.Sprintf("runnel-console-%d", s.n.ID())), kgo.SeedBrokers(seed)}, opts...), nil
}

// kafkaClient is a new client of the node's own listener; the caller closes it.
func (s *source) kafkaClient(extra ...kgo.Opt) (*kgo.Client, error) {
	opts, err := s.kafkaOpts()
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(append(opts, extra...)...)
	if err != nil {
		return nil, fmt.Errorf("console client of node %d's own listener: %w", s.n.ID(), err)
	}
	return cl, nil
}

func (s *source) kafkaAdmin() (*kadm.Client, error) {
	cl, err := s.kafkaClient()
	if err != nil {
		return nil, err
	}
	return kadm.NewClient(cl), nil
}

func (s *source) Reassignments(ctx context.Context) (*httpd.Reassignments, error) {
	// As ListPartitionReassignments: DESCRIBE on the cluster.
	v, err := s.requireOn(ctx, metadata.ACLOpDescribe, auth.Cluster)
	if err != nil {
		return nil, err
	}
	out := &httpd.Reassignments{Header: v.hdr, Reassignments: []httpd.Reassignment{}}
	for _, t := range sortedTopics(v.im) {
		for i, p := range t.Partitions {
			if !p.Reassigning() {
				continue
			}
			r := httpd.Reassignment{Topic: t.Name, Partition: int32(i), Leader: int32(p.Leader), Replicas: ids(p.Replicas),
				Target: ids(p.TargetReplicas()), Adding: ids(p.AddingReplicas), Removing: ids(p.RemovingReplicas), ISR: ids(p.ISR),
				AddingInSync: []int32{}}
			for _, a := range p.AddingReplicas {
				if metadata.Contains(p.ISR, a) {
					r.AddingInSync = append(r.AddingInSync, int32(a))
				}
			}
			tp := metadata.TopicPartition{Topic: t.Name, Partition: int32(i)}
			if b, moving := s.n.ReassignmentBytesRemaining(tp); moving {
				r.BytesRemaining = &b
			}
			out.Reassignments = append(out.Reassignments, r)
		}
	}
	s.fillReassignProgress(ctx, out)
	return out, nil
}

func (s *source) Groups(ctx context.Context) (*httpd.Groups, error) {
	v, err := s.snapshot()
	if err != nil {
		return nil, err
	}
	out := &httpd.Groups{Header: v.hdr, Groups: []httpd.GroupSummary{}}
	ga, err := s.describeGroups(ctx, true)
	if err != nil {
		out.Error = err.Error()
	}
	lags := s.visibleGroups(ctx, v, ga.lags)
	for id, g := range ga.shares {
		if s.canDescribe(ctx, v, auth.Group(id)) {
			out.Groups = append(out.Groups, s.visibleShare(ctx, v, g).GroupSummary)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(lags)) {
		out.Groups = append(out.Groups, groupSummary(lags[id], ga.protocols[id]))
	}
	sort.Slice(out.Groups, func(i, j int) bool { return out.Groups[i].GroupID < out.Groups[j].GroupID })
	return out, nil
}

func (s *source) Group(ctx context.Context, id string) (*httpd.Group, error) {
	v, err := s.requireOn(ctx, metadata.ACLOpDescribe, auth.Group(id))
	if err != nil {
		return nil, err
	}
	ga, err := s.describeGroups(ctx, true, id)
	if g, ok := ga.shares[id]; ok {
		out := s.visibleShare(ctx, v, g)
		out.Header = v.hdr
		return out, nil
	}
	lags := s.visibleGroups(ctx, v, ga.lags)
	l, ok := lags[id]
	switch {
	case !ok && err != nil:
		return nil, fmt.Errorf("group %q: %w", id, err)
	case !ok || l.DescribeErr == nil && l.State == "Dead" && len(l.Lag) == 0 || errors.Is(l.DescribeErr, kerr.GroupIDNotFound):
		return nil, fmt.Errorf("%w: consumer group %q does not exist", httpd.ErrNotFound, id)
	}
	out := &httpd.Group{Header: v.hdr, GroupSummary: groupSummary(l, ga.protocols[id]), Members: []httpd.GroupMember{}, Offsets: []httpd.GroupOffset{}}
	for _, m := range l.Members {
		gm := httpd.GroupMember{MemberID: m.MemberID, InstanceID: m.InstanceID, ClientID: m.ClientID, ClientHost: m.ClientHost, Assigned: []string{}}
		if ca, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range ca.Topics {
				if !s.canDescribe(ctx, v, auth.Topic(t.Topic)) {
					continue
				}
				for _, p := range t.Partitions {
					gm.Assigned = append(gm.Assigned, fmt.Sprintf("%s/%d", t.Topic, p))
				}
			}
		}
		out.Members = append(out.Members, gm)
	}
	for _, ml := range l.Lag.Sorted() {
		out.Offsets = append(out.Offsets, groupOffset(ml))
	}
	return out, nil
}

// groupOffset is one partition of a group's lag.
func groupOffset(ml kadm.GroupMemberLag) httpd.GroupOffset {
	o := httpd.GroupOffset{Topic: ml.End.Topic, Partition: ml.End.Partition}
	if o.Topic == "" {
		o.Topic, o.Partition = ml.Commit.Topic, ml.Commit.Partition
	}
	if ml.Member != nil {
		o.MemberID, o.ClientID = ml.Member.MemberID, ml.Member.ClientID
	}
	if ml.Commit.At >= 0 {
		c := ml.Commit.At
		o.Committed = &c
	}
	if ml.Err != nil {
		o.Error = ml.Err.Error()
		return o
	}
	end, lag := ml.End.Offset, ml.Lag
	o.End, o.Lag = &end, &lag
	return o
}

// groupSummary is a group's line in the list (protocol: its type, as ListGroups
// gave it): its total lag is null, with the first error, as soon as one partition's
// lag is not known.
func groupSummary(l kadm.DescribedGroupLag, protocol string) httpd.GroupSummary {
	g := httpd.GroupSummary{GroupID: l.Group, State: l.State, Protocol: protocol, ProtocolType: l.ProtocolType, Assignor: l.Protocol,
		Coordinator: l.Coordinator.NodeID, MemberCount: len(l.Members), Topics: []string{}}
	if l.Coordinator.Host == "" {
		g.Coordinator = -1
	}
	if err := l.Error(); err != nil {
		g.Error = err.Error()
		return g
	}
	var total int64
	for _, t := range slices.Sorted(maps.Keys(l.Lag)) {
		g.Topics = append(g.Topics, t)
		for _, ml := range l.Lag[t] {
			if ml.Err != nil && g.Error == "" {
				g.Error = fmt.Sprintf("%s/%d: %v", t, ml.End.Partition, ml.Err)
			}
			total += max(ml.Lag, 0)
		}
	}
	if g.Error == "" {
		g.Lag = &total
	}
	return g
}

// topicGroups is the lag of every group with offsets on topic, or why it is not known.
func (s *source) topicGroups(ctx context.Context, v *view, topic string) ([]httpd.TopicGroupLag, string) {
	lags, err := s.groupLags(ctx)
	lags = s.visibleGroups(ctx, v, lags)
	out := []httpd.TopicGroupLag{}
	for _, id := range slices.Sorted(maps.Keys(lags)) {
		l := lags[id]
		ps, ok := l.Lag[topic]
		if !ok {
			continue
		}
		tg := httpd.TopicGroupLag{GroupID: id, State: l.State}
		var total int64
		for _, ml := range ps {
			if ml.Err != nil && tg.Error == "" {
				tg.Error = fmt.Sprintf("partition %d: %v", ml.End.Partition, ml.Err)
			}
			total += max(ml.Lag, 0)
		}
		if tg.Error == "" {
			tg.Lag = &total
		}
		out = append(out, tg)
	}
	if err != nil {
		return out, err.Error()
	}
	return out, ""
}

// groupLags describes the groups (every group when none is named) with their lag,
// through this node's listener. A coordinator that did not answer leaves its groups
// out, or marked with their error, and err says so.
// Share groups are left out (describeGroups has them).
func (s *source) groupLags(ctx context.Context, groups ...string) (kadm.DescribedGroupLags, error) {
	ga, err := s.describeGroups(ctx, false, groups...)
	return ga.lags, err
}

// visibleGroups are lags less the groups the request of ctx may not DESCRIBE, and
// less, in each, the topics it may not DESCRIBE (as OffsetFetch leaves them out).
// The groups are described by the node's own client: the filter is what keeps a
// user to its ACLs.
func (s *source) visibleGroups(ctx context.Context, v *view, lags kadm.DescribedGroupLags) kadm.DescribedGroupLags {
	out := kadm.DescribedGroupLags{}
	for id, l := range lags {
		if !s.canDescribe(ctx, v, auth.Group(id)) {
			continue
		}
		if l.Lag != nil {
			lag := kadm.GroupLag{}
			for t, ps := range l.Lag {
				if s.canDescribe(ctx, v, auth.Topic(t)) {
					lag[t] = ps
				}
			}
			l.Lag = lag
		}
		out[id] = l
	}
	return out
}

func (s *source) Mirrors(ctx context.Context) (*httpd.Mirrors, error) {
	v, err := s.snapshot()
	if err != nil {
		return nil, err
	}
	prefix := mirrorProgressPrefix
	var names []string
	for _, name := range v.im.TopicNames() {
		// A mirror is shown to who may DESCRIBE its progress topic.
		if !s.canDescribe(ctx, v, auth.Topic(name)) {
			continue
		}
		if mname, ok := strings.CutPrefix(name, prefix); ok && mname != "" {
			names = append(names, mname)
		}
	}
	out := &httpd.Mirrors{Header: v.hdr, Mirrors: make([]httpd.MirrorLink, len(names))}
	ctx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() { out.Mirrors[i] = s.mirrorLink(ctx, name) })
	}
	wg.Wait()
	return out, nil
}

// mirrorProgressPrefix is the name of every mirror's progress topic before the
// mirror's name (mirror.ProgressTopic).
const mirrorProgressPrefix = "__runnel_mirror."

// mirrorLink reads one mirror's progress topic (mirrors.go).
func (s *source) mirrorLink(ctx context.Context, name string) httpd.MirrorLink {
	link := httpd.MirrorLink{Name: name, ProgressTopic: mirrorProgressPrefix + name, Partitions: []httpd.MirrorPartition{}, Groups: []httpd.MirrorCheckpoint{}}
	seed, opts, err := s.n.KafkaClient(askTimeout)
	if err != nil {
		link.Error = fmt.Sprintf("cannot read the progress of mirror %s: %v", name, err)
		return link
	}
	opts = append([]kgo.Opt{kgo.ClientID(fmt.Sprintf("runnel-console-%d", s.n.ID()))}, opts...)
	got, err := readMirrorLink(ctx, []string{seed}, opts, name)
	if err != nil {
		link.Error = fmt.Sprintf("cannot read the progress of mirror %s: %v", name, err)
		return link
	}
	return got
}
