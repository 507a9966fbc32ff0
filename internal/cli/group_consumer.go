package cli

// `runnel group describe` of KIP-848 consumer groups, which DescribeGroups does not
// describe (Kafka 4 answers GROUP_ID_NOT_FOUND there): ConsumerGroupDescribe gives the
// members, their epochs and assignments, and the lag comes from the committed offsets
// and the log end offsets, as for classic groups.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// groupProtocol is ListGroups v5's group type, "classic" when the broker does not say.
func groupProtocol(groupType string) string {
	if groupType == "" {
		return "classic"
	}
	return groupType
}

// describeConsumerGroup describes group if it is a consumer group; ok is false when it
// is not one (or the cluster has no ConsumerGroupDescribe).
func describeConsumerGroup(ctx context.Context, adm *kadm.Client, group string) (d *groupDescription, ok bool, err error) {
	ds, err := adm.DescribeConsumerGroups(ctx, group)
	if err != nil {
		return nil, false, nil // older brokers: not served; describe it as classic
	}
	cg, found := ds[group]
	if !found || cg.Err != nil {
		if cg.Err != nil && !errors.Is(cg.Err, kerr.GroupIDNotFound) && !errors.Is(cg.Err, kerr.UnsupportedVersion) {
			return nil, false, fmt.Errorf("describe group %q: %w", group, cg.Err)
		}
		return nil, false, nil
	}
	d = &groupDescription{Group: group, State: cg.State, Protocol: "consumer", ProtocolType: "consumer",
		Assignor: cg.AssignorName, GroupEpoch: cg.Epoch, AssignmentEpoch: cg.AssignmentEpoch,
		Coordinator: cg.Coordinator.NodeID, Members: []groupMember{}, Partitions: []groupPartition{}}
	owner := map[string]map[int32]*groupMember{}
	for _, m := range cg.Members {
		epoch := m.MemberEpoch
		gm := groupMember{MemberID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost, MemberEpoch: &epoch,
			Assignment: topicsSetMap(m.Assignment), TargetAssignment: topicsSetMap(m.TargetAssignment)}
		if m.InstanceID != nil {
			gm.InstanceID = *m.InstanceID
		}
		switch m.MemberType {
		case 0:
			gm.Protocol = "classic"
		case 1:
			gm.Protocol = "consumer"
		}
		d.Members = append(d.Members, gm)
	}
	for i := range d.Members {
		for t, ps := range d.Members[i].Assignment {
			if owner[t] == nil {
				owner[t] = map[int32]*groupMember{}
			}
			for _, p := range ps {
				owner[t][p] = &d.Members[i]
			}
		}
	}
	if err := consumerGroupLag(ctx, adm, d, owner); err != nil {
		return nil, true, err
	}
	return d, true, nil
}

// consumerGroupLag fills d.Partitions and d.TotalLag from the group's commits and the
// log end offsets of its committed and assigned partitions.
func consumerGroupLag(ctx context.Context, adm *kadm.Client, d *groupDescription, owner map[string]map[int32]*groupMember) error {
	committed, err := adm.FetchOffsets(ctx, d.Group)
	if err != nil {
		return fmt.Errorf("describe group %q: fetch offsets: %w", d.Group, err)
	}
	parts := map[string]map[int32]bool{}
	add := func(t string, p int32) {
		if parts[t] == nil {
			parts[t] = map[int32]bool{}
		}
		parts[t][p] = true
	}
	committed.Each(func(o kadm.OffsetResponse) { add(o.Topic, o.Partition) })
	for t, ps := range owner {
		for p := range ps {
			add(t, p)
		}
	}
	topics := slices.Sorted(maps.Keys(parts))
	var ends kadm.ListedOffsets
	if len(topics) > 0 {
		if ends, err = adm.ListEndOffsets(ctx, topics...); err != nil && ends == nil {
			return fmt.Errorf("describe group %q: list end offsets: %w", d.Group, err)
		}
	}
	for _, t := range topics {
		ps := make([]int32, 0, len(parts[t]))
		for p := range parts[t] {
			ps = append(ps, p)
		}
		sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
		for _, p := range ps {
			gp := groupPartition{Topic: t, Partition: p, CommittedOffset: -1, LogEndOffset: -1, Lag: -1}
			if o, ok := committed.Lookup(t, p); ok && o.Err == nil {
				gp.CommittedOffset = o.At
			}
			if e, ok := ends.Lookup(t, p); ok && e.Err == nil {
				gp.LogEndOffset = e.Offset
			} else if ok {
				gp.Error = oneLine(e.Err.Error())
			}
			if gp.LogEndOffset >= 0 {
				gp.Lag = gp.LogEndOffset - max(gp.CommittedOffset, 0)
				d.TotalLag += gp.Lag
			}
			if m := owner[t][p]; m != nil {
				gp.MemberID, gp.ClientID, gp.Host = m.MemberID, m.ClientID, m.Host
			}
			d.Partitions = append(d.Partitions, gp)
		}
	}
	return nil
}

func topicsSetMap(s kadm.TopicsSet) map[string][]int32 {
	out := map[string][]int32{}
	for t, ps := range s {
		if t == "" {
			continue // a topic deleted since (or a broker that names topics by id only)
		}
		for p := range ps {
			out[t] = append(out[t], p)
		}
		sort.Slice(out[t], func(i, j int) bool { return out[t][i] < out[t][j] })
	}
	return out
}

// describeShareAsGroup describes group for `group describe` if it is a share group
// (KIP-932): members with their epochs and assignments (a partition may be shared, so
// partitions name no member), and per partition the share-partition start offset as
// the current offset and its lag (`share describe` says more). ok is false when it is
// not one.
func describeShareAsGroup(ctx context.Context, adm *kadm.Client, group string) (d *groupDescription, ok bool, err error) {
	ds, err := adm.DescribeShareGroups(ctx, group)
	if err != nil {
		return nil, false, nil // older brokers: not served
	}
	if sg, found := ds[group]; !found || sg.Err != nil {
		return nil, false, nil
	}
	sd, err := describeShare(ctx, adm, group)
	if err != nil {
		return nil, false, err
	}
	d = &groupDescription{Group: group, State: sd.State, Protocol: "share", ProtocolType: "share", Assignor: sd.Assignor,
		GroupEpoch: sd.GroupEpoch, AssignmentEpoch: sd.AssignmentEpoch, Coordinator: sd.Coordinator,
		Members: []groupMember{}, Partitions: []groupPartition{}, TotalLag: sd.TotalLag}
	for _, m := range sd.Members {
		epoch := m.MemberEpoch
		d.Members = append(d.Members, groupMember{MemberID: m.MemberID, ClientID: m.ClientID, Host: m.Host,
			MemberEpoch: &epoch, Assignment: m.Assignment})
	}
	for _, p := range sd.Partitions {
		d.Partitions = append(d.Partitions, groupPartition{Topic: p.Topic, Partition: p.Partition, CommittedOffset: p.StartOffset,
			LogEndOffset: p.LogEndOffset, Lag: p.Lag, Error: p.Error})
	}
	return d, true, nil
}
