package controller

// The controller's throttles: those of the balancer's moves and of an operator's
// reassignment started with a rate (runnel reassign execute --throttle, a Runnel
// tagged field of AlterPartitionReassignments). Such a move copies at a bounded rate, so that the
// leaders' disks and links keep serving producers and in-sync followers: in the
// proposal that starts the moves, the balancer does what kafka-reassign-partitions.sh
// --throttle does (KIP-73) —
//
//   - each moving partition's current replicas are added to its topic's
//     leader.replication.throttled.replicas, the replicas being added to
//     follower.replication.throttled.replicas (a list that is "*" already names them
//     all and is left alone);
//   - leader.replication.throttled.rate and follower.replication.throttled.rate are
//     set cluster-wide (the dynamic default broker configs, which every node applies)
//     to BalancerConfig.ThrottleRate, unless an operator has set them: the operator's
//     rate then applies to the balancer's moves too.
//
// What it added is recorded in the same proposal under balancerThrottlesKey, a key of
// the cluster-wide configs reserved for the controller's own state (no property has
// it; config.ControllerStatePrefix), so that whichever controller is active when the
// moves end — completed, or cancelled by an operator — removes exactly those list
// items and those rates (a rate only while it still has the value the balancer set),
// and nothing an operator set. They are removed in the proposal that ends the last
// reassignment in progress (its completion or cancellation: throttlesDoneRecords),
// and by the balancer's tick if anything ends reassignments otherwise (a topic
// deleted mid-move), before the balancer starts anything new. Never by a reader: a
// `reassign status` that cleared them while `execute` was between setting the rates
// and starting the moves let the copy run unthrottled.

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/runnel-io/runnel/internal/metadata"
)

// balancerThrottlesKey is the cluster-wide config key holding the balancer's
// throttleRecord (JSON). It starts with config.ControllerStatePrefix (a test checks).
const balancerThrottlesKey = "runnel.controller.balancer.throttles"

// The KIP-73 configs the balancer sets.
const (
	leaderThrottledRate      = "leader.replication.throttled.rate"
	followerThrottledRate    = "follower.replication.throttled.rate"
	leaderThrottledReplicas  = "leader.replication.throttled.replicas"
	followerThrottledReplica = "follower.replication.throttled.replicas"
)

// throttleRecord is what the balancer added, so that it can remove exactly that.
type throttleRecord struct {
	// Rates maps a rate config the balancer set to the value it set.
	Rates map[string]string `json:"rates,omitempty"`
	// Topics maps a topic to the items ("PARTITION:NODE") the balancer added to each
	// of its throttled replicas configs (by config name).
	Topics map[string]map[string][]string `json:"topics,omitempty"`
}

// hasBalancerThrottles reports whether the balancer's throttles are set in im.
func hasBalancerThrottles(im *metadata.Image) bool {
	_, ok := im.Configs[balancerThrottlesKey]
	return ok
}

// balancerThrottleRecords returns the config records that throttle the moves of
// started (partitions reassigning in after, the image with the moves started; before
// is the image they started from), and record what they add, on top of what the
// controller's record in before holds already (moves still in progress keep their
// throttles). A rate the controller set earlier takes the new value; one an operator
// set by hand is left as it is (it applies to these moves too).
func balancerThrottleRecords(before, after *metadata.Image, started []metadata.TopicPartition, rate int64) []metadata.Record {
	if len(started) == 0 {
		return nil
	}
	tr := throttleRecord{Rates: map[string]string{}, Topics: map[string]map[string][]string{}}
	if v, ok := before.Configs[balancerThrottlesKey]; ok {
		_ = json.Unmarshal([]byte(v), &tr) // a bad value: start afresh
		if tr.Rates == nil {
			tr.Rates = map[string]string{}
		}
		if tr.Topics == nil {
			tr.Topics = map[string]map[string][]string{}
		}
	}
	var recs []metadata.Record
	rateValue := strconv.FormatInt(rate, 10)
	for _, key := range []string{leaderThrottledRate, followerThrottledRate} {
		cur, set := before.Configs[key]
		if ours, ok := tr.Rates[key]; set && !(ok && ours == cur) {
			continue // an operator's rate: it applies, and is not the controller's to remove
		}
		tr.Rates[key] = rateValue
		if cur != rateValue {
			recs = append(recs, configRecord("", key, &rateValue))
		}
	}
	// The items per topic and side, in partition order.
	add := map[string]map[string][]string{}
	for _, tp := range started {
		old, _ := before.Partition(tp)
		p, _ := after.Partition(tp)
		side := add[tp.Topic]
		if side == nil {
			side = map[string][]string{}
			add[tp.Topic] = side
		}
		for _, r := range old.Replicas {
			side[leaderThrottledReplicas] = append(side[leaderThrottledReplicas], throttleItem(tp.Partition, r))
		}
		for _, r := range p.AddingReplicas {
			side[followerThrottledReplica] = append(side[followerThrottledReplica], throttleItem(tp.Partition, r))
		}
	}
	topics := make([]string, 0, len(add))
	for t := range add {
		topics = append(topics, t)
	}
	slices.Sort(topics)
	for _, topic := range topics {
		t := before.Topics[topic]
		for _, key := range []string{leaderThrottledReplicas, followerThrottledReplica} {
			cur := t.Configs[key]
			if strings.TrimSpace(cur) == "*" {
				continue
			}
			items := splitItems(cur)
			var added []string
			for _, it := range add[topic][key] {
				if !slices.Contains(items, it) {
					items = append(items, it)
					added = append(added, it)
				}
			}
			if len(added) == 0 {
				continue
			}
			if tr.Topics[topic] == nil {
				tr.Topics[topic] = map[string][]string{}
			}
			tr.Topics[topic][key] = append(tr.Topics[topic][key], added...)
			v := strings.Join(items, ",")
			recs = append(recs, configRecord(topic, key, &v))
		}
	}
	if len(recs) == 0 && before.Configs[balancerThrottlesKey] != "" {
		return nil // nothing new to throttle or to record
	}
	b, _ := json.Marshal(tr) // maps of strings: cannot fail
	v := string(b)
	return append(recs, configRecord("", balancerThrottlesKey, &v))
}

// clearBalancerThrottlesLocked removes what balancerThrottleRecords added (as im's
// record says) and the record. Caller holds proposeMu.
func (c *Controller) clearBalancerThrottlesLocked(ctx context.Context, im *metadata.Image) error {
	recs := clearThrottleRecords(im)
	if _, err := c.proposeLocked(ctx, recs); err != nil {
		return err
	}
	c.log.Info("balancer moves done: removed the throttles they set", "configs_changed", len(recs)-1)
	return nil
}

// clearThrottleRecords returns the records that remove the balancer's throttles from im.
func clearThrottleRecords(im *metadata.Image) []metadata.Record {
	var tr throttleRecord
	_ = json.Unmarshal([]byte(im.Configs[balancerThrottlesKey]), &tr) // a bad value: remove the key alone
	var recs []metadata.Record
	for _, key := range []string{leaderThrottledRate, followerThrottledRate} {
		if v, ok := tr.Rates[key]; ok && im.Configs[key] == v {
			recs = append(recs, configRecord("", key, nil))
		}
	}
	topics := make([]string, 0, len(tr.Topics))
	for t := range tr.Topics {
		topics = append(topics, t)
	}
	slices.Sort(topics)
	for _, topic := range topics {
		t := im.Topics[topic]
		if t == nil {
			continue // deleted since
		}
		for _, key := range []string{leaderThrottledReplicas, followerThrottledReplica} {
			cur, ok := t.Configs[key]
			if !ok || strings.TrimSpace(cur) == "*" {
				continue
			}
			items := slices.DeleteFunc(splitItems(cur), func(it string) bool { return slices.Contains(tr.Topics[topic][key], it) })
			if len(items) == len(splitItems(cur)) {
				continue
			}
			var v *string
			if len(items) > 0 {
				s := strings.Join(items, ",")
				v = &s
			}
			recs = append(recs, configRecord(topic, key, v))
		}
	}
	return append(recs, configRecord("", balancerThrottlesKey, nil))
}

// throttlesDoneRecords returns the records that remove the controller's throttles
// when after, the image with a proposal's records applied, has no reassignment in
// progress left (nil otherwise, or when there are none to remove).
func throttlesDoneRecords(after *metadata.Image) []metadata.Record {
	if !hasBalancerThrottles(after) || reassigning(after) {
		return nil
	}
	return clearThrottleRecords(after)
}

func configRecord(topic, key string, value *string) metadata.Record {
	return metadata.Record{Type: metadata.ConfigType, TopicName: topic, ConfigKey: key, ConfigValue: value}
}

func throttleItem(partition int32, node metadata.NodeID) string {
	return strconv.Itoa(int(partition)) + ":" + strconv.Itoa(int(node))
}

// splitItems splits a throttled replicas list into its trimmed, non-empty items.
func splitItems(list string) []string {
	var out []string
	for it := range strings.SplitSeq(list, ",") {
		if it = strings.TrimSpace(it); it != "" {
			out = append(out, it)
		}
	}
	return out
}
