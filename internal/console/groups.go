package console

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/httpd"
)

// The groups of every protocol: classic and consumer (KIP-848) groups are described
// with their lag (DescribeGroups, OffsetFetch, ListOffsets: kadm's Lag), share groups
// (KIP-932) as runnel share describe does, with ShareGroupDescribe and
// DescribeShareGroupOffsets, their lag being the share state's.

// groupsAnswer is what describeGroups found.
type groupsAnswer struct {
	// lags are the classic and consumer groups.
	lags kadm.DescribedGroupLags
	// protocols are each listed group's type (groupProtocol).
	protocols map[string]string
	// shares are the share groups, each as its page shows it.
	shares map[string]*httpd.Group
}

// groupProtocol is a ListGroups group type as runnel group list shows it: a broker
// that does not say (ListGroups before v5) has classic groups only.
func groupProtocol(groupType string) string {
	if groupType == "" {
		return "classic"
	}
	return groupType
}

// describeGroups describes the groups (every group when none is named) through this
// node's listener; share groups only with shares. A coordinator that did not answer
// leaves its groups out, or marked with their error, and err says so.
func (s *source) describeGroups(ctx context.Context, shares bool, groups ...string) (groupsAnswer, error) {
	out := groupsAnswer{lags: kadm.DescribedGroupLags{}, protocols: map[string]string{}, shares: map[string]*httpd.Group{}}
	adm, err := s.kafkaAdmin()
	if err != nil {
		return out, err
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel()
	// The list gives each group's protocol, which says how to describe it.
	var listErr error
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		listErr = fmt.Errorf("listing the groups: %w (a coordinator did not answer: some groups may be missing)", err)
	}
	for _, g := range listed {
		out.protocols[g.Group] = groupProtocol(g.GroupType)
	}
	if len(groups) == 0 {
		groups = listed.Groups()
	}
	var others []string
	for _, g := range groups {
		if out.protocols[g] == "share" {
			if shares {
				out.shares[g] = describeShareGroup(ctx, adm, g)
			}
		} else {
			others = append(others, g)
		}
	}
	if len(others) == 0 {
		return out, listErr
	}
	lags, err := adm.Lag(ctx, others...)
	if err != nil {
		err = fmt.Errorf("describing the groups: %w", err)
	}
	if lags != nil {
		out.lags = lags
	}
	return out, errors.Join(listErr, err)
}

// describeShareGroup is share group id's page: its state, members and, per share
// partition, the start offset, the end offset and the lag (the end less the start
// offset when the broker cannot say, as runnel share describe shows it). A failure is
// the group's Error.
func describeShareGroup(ctx context.Context, adm *kadm.Client, id string) *httpd.Group {
	g := &httpd.Group{GroupSummary: httpd.GroupSummary{GroupID: id, Protocol: "share", ProtocolType: "share", Coordinator: -1,
		Topics: []string{}}, Members: []httpd.GroupMember{}, Offsets: []httpd.GroupOffset{}}
	ds, err := adm.DescribeShareGroups(ctx, id)
	if err == nil {
		err = ds[id].Err
	}
	switch {
	case err == nil:
		sg := ds[id]
		g.State, g.Assignor, g.MemberCount = sg.GroupState, sg.Assignor, len(sg.Members)
		if sg.Coordinator.Host != "" {
			g.Coordinator = sg.Coordinator.NodeID
		}
		for _, m := range sg.Members {
			gm := httpd.GroupMember{MemberID: m.MemberID, ClientID: m.ClientID, ClientHost: m.ClientHost, Assigned: []string{}}
			for t, ps := range m.Assignment {
				for p := range ps {
					gm.Assigned = append(gm.Assigned, fmt.Sprintf("%s/%d", t, p))
				}
			}
			sort.Strings(gm.Assigned)
			g.Members = append(g.Members, gm)
		}
	case errors.Is(err, kerr.GroupIDNotFound):
		// Membership is not kept across a coordinator move: a group known by its
		// share state alone is Empty.
		g.State = "Empty"
	default:
		g.Error = fmt.Sprintf("describing share group %s: %v", id, err)
		return g
	}
	offs, err := adm.DescribeShareGroupOffsets(ctx, id)
	if err == nil {
		err = offs[id].Err
	}
	if err != nil {
		g.Error = fmt.Sprintf("share state of group %s: %v", id, err)
		return g
	}
	var topics []string
	for t := range offs[id].Offsets {
		topics = append(topics, t)
	}
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		g.Error = fmt.Sprintf("end offsets of share group %s's topics: %v", id, err)
	}
	for _, so := range offs[id].Offsets.Sorted() {
		o := httpd.GroupOffset{Topic: so.Topic, Partition: so.Partition}
		if so.Err != nil {
			o.Error = so.Err.Error()
		}
		if so.StartOffset >= 0 {
			start := so.StartOffset
			o.StartOffset = &start
		}
		lag := so.Lag
		if e, ok := ends.Lookup(so.Topic, so.Partition); ok && e.Err == nil {
			end := e.Offset
			o.End = &end
			if lag < 0 && so.StartOffset >= 0 {
				lag = max(end-so.StartOffset, 0)
			}
		}
		if lag >= 0 {
			o.Lag = &lag
		}
		g.Offsets = append(g.Offsets, o)
	}
	return g
}

// visibleShare is g less the topics the request of ctx may not DESCRIBE, with its
// topics and total lag summed from what is left.
func (s *source) visibleShare(ctx context.Context, v *view, g *httpd.Group) *httpd.Group {
	out := *g
	out.Offsets, out.Topics = []httpd.GroupOffset{}, []string{}
	var total int64
	known := g.Error == ""
	for _, o := range g.Offsets {
		if !s.canDescribe(ctx, v, auth.Topic(o.Topic)) {
			continue
		}
		out.Offsets = append(out.Offsets, o)
		if len(out.Topics) == 0 || out.Topics[len(out.Topics)-1] != o.Topic {
			out.Topics = append(out.Topics, o.Topic)
		}
		if o.Lag == nil {
			known = false
			if out.Error == "" {
				out.Error = fmt.Sprintf("%s/%d: lag not known %s", o.Topic, o.Partition, o.Error)
			}
			continue
		}
		total += *o.Lag
	}
	out.Members = make([]httpd.GroupMember, 0, len(g.Members))
	for _, m := range g.Members {
		assigned := []string{}
		for _, a := range m.Assigned {
			if t, _, ok := cutPartition(a); ok && s.canDescribe(ctx, v, auth.Topic(t)) {
				assigned = append(assigned, a)
			}
		}
		m.Assigned = assigned
		out.Members = append(out.Members, m)
	}
	if known {
		out.Lag = &total
	}
	return &out
}

// cutPartition splits "topic/partition".
func cutPartition(tp string) (string, string, bool) {
	for i := len(tp) - 1; i >= 0; i-- {
		if tp[i] == '/' {
			return tp[:i], tp[i+1:], true
		}
	}
	return "", "", false
}
