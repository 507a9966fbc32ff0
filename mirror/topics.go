package mirror

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// notCopied are topic configs the target keeps its own value of: replication and
// placement are the target's business, and a source with LogAppendTime already gave
// the records their timestamps, which the target must keep (so CreateTime).
var notCopied = map[string]bool{
	"min.insync.replicas":                     true,
	"leader.replication.throttled.replicas":   true,
	"follower.replication.throttled.replicas": true,
	"message.timestamp.type":                  true,
	"confluent.placement.constraints":         true,
}

// targetTopics creates and follows the target topics: same partition count, the
// source's non-default configs (except notCopied), later increases and changes.
type targetTopics struct {
	m *Mirror

	mu    sync.Mutex       // guards ready, copyOf
	ready map[string]int32 // target topic -> partitions known to exist
	// copyOf holds the source topics decided: true for a copy of one of the target's
	// own topics (see copies), which is never mirrored back. A topic's answer never
	// changes once decided.
	copyOf map[string]bool
}

func newTargetTopics(m *Mirror) *targetTopics {
	return &targetTopics{m: m, ready: map[string]int32{}, copyOf: map[string]bool{}}
}

// writeMeta records, before any target topic is created, which clusters this mirror
// links and its naming, for the mirrors in the opposite direction (see Meta). It is
// not transactional: every process of the mirror writes the same value.
func (tt *targetTopics) writeMeta(ctx context.Context) error {
	v, _ := json.Marshal(&Meta{SourceCluster: tt.m.srcID, TargetCluster: tt.m.tgtID, Alias: tt.m.alias, Naming: tt.m.cfg.Naming.String()})
	r := &kgo.Record{Topic: ProgressTopic(tt.m.cfg.Name), Key: []byte("m"), Value: v}
	if err := tt.m.tgtCl.ProduceSync(ctx, r).FirstErr(); err != nil {
		return fmt.Errorf("mirror %s: writing its meta record to %s on the target: %w", tt.m.cfg.Name, r.Topic, err)
	}
	return nil
}

// copies reports, for each source topic in names, whether it is a copy of a target
// topic made by a prefix mirror from the target into the source (ALIAS.NAME, ALIAS
// that mirror's): mirroring it would send the target's own records back (all skipped
// as loops) and create ALIAS2.ALIAS.NAME on the target, and so on for ever.
// MirrorMaker 2 stops the same cycle by name (ReplicationPolicy.topicSource); here
// the alias is read from the reverse mirror's Meta, so no flag has to name it.
//
// The metas are read after the caller listed names, once for every undecided name:
// the reverse mirror writes its Meta before it creates any topic, so a copy that
// was listed always has its Meta read. An error leaves the undecided names undecided
// (asked again next time) and is returned.
func (tt *targetTopics) copies(ctx context.Context, names []string) (map[string]bool, error) {
	out := map[string]bool{}
	var undecided []string
	tt.mu.Lock()
	for _, n := range names {
		if c, ok := tt.copyOf[n]; ok {
			out[n] = c
		} else {
			undecided = append(undecided, n)
		}
	}
	tt.mu.Unlock()
	if len(undecided) == 0 {
		return out, nil
	}
	aliases, err := tt.reverseAliases(ctx)
	if err != nil {
		return out, fmt.Errorf("deciding whether source topics %v are copies of target topics: %w", undecided, err)
	}
	tt.mu.Lock()
	defer tt.mu.Unlock()
	for _, n := range undecided {
		c := false
		for _, a := range aliases {
			c = c || strings.HasPrefix(n, a+".")
		}
		tt.copyOf[n], out[n] = c, c
		if c {
			tt.m.log.Info("source topic not mirrored: a copy of a target topic", "topic", n, "reverse_aliases", aliases)
		}
	}
	return out, nil
}

// reverseAliases reads, on the source, every mirror progress topic's Meta and returns
// the aliases of the prefix mirrors whose source is this mirror's target.
func (tt *targetTopics) reverseAliases(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	listed, err := tt.m.srcAdm.ListTopics(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for name := range listed {
		mname, ok := strings.CutPrefix(name, "__runnel_mirror.")
		if !ok {
			continue
		}
		p, err := ReadProgress(ctx, tt.m.cfg.Source, tt.m.cfg.SourceOptions, mname)
		if err != nil {
			return nil, err
		}
		if p.Meta != nil && p.Meta.SourceCluster == tt.m.tgtID && p.Meta.Naming == Prefix.String() && p.Meta.Alias != "" {
			out = append(out, p.Meta.Alias)
		}
	}
	return out, nil
}

// ensureProgressTopic creates the progress topic: compacted, one partition.
func (tt *targetTopics) ensureProgressTopic(ctx context.Context) error {
	topic := ProgressTopic(tt.m.cfg.Name)
	compact := "compact"
	_, err := tt.m.tgtAdm.CreateTopic(ctx, 1, -1, map[string]*string{"cleanup.policy": &compact}, topic)
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("mirror %s: creating progress topic %s on the target: %w", tt.m.cfg.Name, topic, err)
	}
	return nil
}

// ensure makes sure the target topic of source topic t has at least partitions
// partitions, syncing it with the source once if not yet known.
func (tt *targetTopics) ensure(ctx context.Context, t string, partitions int32) error {
	tgt := tt.m.targetName(t)
	tt.mu.Lock()
	have := tt.ready[tgt]
	tt.mu.Unlock()
	if have >= partitions {
		return nil
	}
	return tt.sync(ctx, []string{t})
}

// loop syncs every selected source topic each TopicRefresh.
func (tt *targetTopics) loop(ctx context.Context) {
	t := time.NewTicker(tt.m.cfg.TopicRefresh)
	defer t.Stop()
	for {
		if err := tt.sync(ctx, nil); err != nil && ctx.Err() == nil {
			tt.m.log.Warn("topic sync failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sync compares the given source topics (nil: every selected one) with the target.
func (tt *targetTopics) sync(ctx context.Context, only []string) error {
	src, err := tt.m.srcAdm.ListTopics(ctx, only...)
	if err != nil {
		return fmt.Errorf("listing source topics: %w", err)
	}
	var matched []string
	for name, d := range src {
		if d.Err == nil && tt.m.topics.match(name) {
			matched = append(matched, name)
		}
	}
	// An undecided topic (an error) is not mirrored yet: creating a topic cannot be
	// undone.
	copies, cerr := tt.copies(ctx, matched)
	var names []string
	for _, name := range matched {
		if c, decided := copies[name]; decided && !c {
			names = append(names, name)
			id := src[name].ID
			tt.noteTopicID(name, hex.EncodeToString(id[:]))
		}
	}
	if cerr != nil {
		tt.m.log.Warn("topic sync", "err", cerr)
	}
	if len(names) == 0 {
		if len(only) > 0 {
			return fmt.Errorf("source topic %s is not there or not selected", only[0])
		}
		return nil
	}
	srcCfg, err := tt.m.srcAdm.DescribeTopicConfigs(ctx, names...)
	if err != nil {
		return fmt.Errorf("source topic configs: %w", err)
	}
	var tgtNames []string
	for _, n := range names {
		tgtNames = append(tgtNames, tt.m.targetName(n))
	}
	tgt, err := tt.m.tgtAdm.ListTopics(ctx, tgtNames...)
	if err != nil {
		return fmt.Errorf("listing target topics: %w", err)
	}
	var errs []error
	for _, n := range names {
		if err := tt.syncOne(ctx, src[n], tgt, srcCfg); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// noteTopicID tells the topic's workers when the source topic id changes.
func (tt *targetTopics) noteTopicID(topic, id string) {
	m := tt.m
	m.mu.Lock()
	old := m.topicIDs[topic]
	m.topicIDs[topic] = id
	var ws []*worker
	if old != "" && old != id {
		for tp, w := range m.workers {
			if tp.Topic == topic {
				ws = append(ws, w)
			}
		}
	}
	m.mu.Unlock()
	for _, w := range ws {
		select {
		case w.recreated <- id:
		default:
		}
	}
}

// copiedConfigs are the source topic's configs set on the topic (not defaults).
func copiedConfigs(rc kadm.ResourceConfig) map[string]string {
	out := map[string]string{}
	for _, c := range rc.Configs {
		if c.Source == 1 /* DYNAMIC_TOPIC_CONFIG */ && c.Value != nil && !notCopied[c.Key] {
			out[c.Key] = *c.Value
		}
	}
	return out
}

func (tt *targetTopics) syncOne(ctx context.Context, s kadm.TopicDetail, tgt kadm.TopicDetails, srcCfg kadm.ResourceConfigs) error {
	name := tt.m.targetName(s.Topic)
	want := int32(len(s.Partitions))
	var cfg map[string]string
	if rc, err := srcCfg.On(s.Topic, nil); err == nil && rc.Err == nil {
		cfg = copiedConfigs(rc)
	}
	d, exists := tgt[name]
	switch {
	case !exists || errors.Is(d.Err, kerr.UnknownTopicOrPartition):
		configs := map[string]*string{}
		for k, v := range cfg {
			configs[k] = &v
		}
		_, err := tt.m.tgtAdm.CreateTopic(ctx, want, -1, configs, name)
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("creating target topic %s (%d partitions, configs %v) for source topic %s: %w", name, want, cfg, s.Topic, err)
		}
		if err == nil {
			tt.m.log.Info("target topic created", "topic", name, "partitions", want, "configs", cfg)
		}
	case d.Err != nil:
		return fmt.Errorf("target topic %s: %w", name, d.Err)
	default:
		if have := int32(len(d.Partitions)); have < want {
			if _, err := tt.m.tgtAdm.UpdatePartitions(ctx, int(want), name); err != nil {
				return fmt.Errorf("adding partitions to target topic %s (%d to %d): %w", name, have, want, err)
			}
			tt.m.log.Info("target topic partitions added", "topic", name, "from", have, "to", want)
		}
		if err := tt.syncConfigs(ctx, name, cfg); err != nil {
			return err
		}
	}
	tt.mu.Lock()
	tt.ready[name] = want
	tt.mu.Unlock()
	return nil
}

// syncConfigs sets on the target the copied configs whose value differs.
func (tt *targetTopics) syncConfigs(ctx context.Context, name string, want map[string]string) error {
	if len(want) == 0 {
		return nil
	}
	rcs, err := tt.m.tgtAdm.DescribeTopicConfigs(ctx, name)
	if err != nil {
		return fmt.Errorf("target topic %s configs: %w", name, err)
	}
	rc, err := rcs.On(name, nil)
	if err != nil || rc.Err != nil {
		return fmt.Errorf("target topic %s configs: %v %v", name, err, rc.Err)
	}
	have := map[string]string{}
	for _, c := range rc.Configs {
		if c.Value != nil {
			have[c.Key] = *c.Value
		}
	}
	var alter []kadm.AlterConfig
	for k, v := range want {
		if have[k] != v {
			alter = append(alter, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: &v})
		}
	}
	if len(alter) == 0 {
		return nil
	}
	resp, err := tt.m.tgtAdm.AlterTopicConfigs(ctx, alter, name)
	if err == nil {
		for _, r := range resp {
			if r.Err != nil {
				err = r.Err
			}
		}
	}
	if err != nil {
		return fmt.Errorf("altering target topic %s configs %v: %w", name, alter, err)
	}
	tt.m.log.Info("target topic configs updated", "topic", name, "configs", want)
	return nil
}
