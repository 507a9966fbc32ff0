package link

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/controller"
	"github.com/runnel-io/runnel/internal/metadata"
)

// followInterval is how often the active controller's node reads a link's source
// topics (new topics, partition counts, topic ids, configs, ACLs). A variable for the
// tests (export_test.go).
var followInterval = 5 * time.Second

const (
	// defaultGroupSyncInterval is --group-sync-interval's default.
	defaultGroupSyncInterval = 5 * time.Second
	// leaderCheck is how often a syncer on a node that is not the active controller
	// looks whether it became it.
	leaderCheck = time.Second
)

// syncer follows one link's source from the active controller's node, where the
// metadata changes are proposed: matching source topics created later become mirror
// topics, partition increases follow, a source topic deleted or re-created fails its
// mirror topic, and, as the link asks, topic configs (--sync-configs), topic ACLs
// (--sync-acls) and consumer group offsets (--groups, groupsync.go) follow. Every node
// runs one per link (Manager.ApplyImage) and each acts only while its node is the
// active controller, so the work moves with the controller.
type syncer struct {
	m    *Manager
	link *metadata.Link

	include, exclude, groups []*regexp.Regexp

	cancel context.CancelFunc
	done   chan struct{}

	// warned holds the problems already logged (a topic that cannot be mirrored), so
	// that a round every few seconds does not repeat them. Owned by run.
	warned map[string]bool

	// mu guards synced.
	mu sync.Mutex
	// synced is, per group partition, the offset this node last found the
	// destination's group at, equal to the source's (clamped), and when.
	synced map[groupPartition]GroupStatus
}

type groupPartition struct {
	group string
	tp    metadata.TopicPartition
}

// newSyncer starts link's syncer. The filters were checked at create.
func newSyncer(m *Manager, link *metadata.Link) *syncer {
	s := &syncer{m: m, link: link, done: make(chan struct{}), warned: map[string]bool{}, synced: map[groupPartition]GroupStatus{}}
	s.include, _ = compileFilters("--topics", link.Topics)
	s.exclude, _ = compileFilters("--exclude", link.Exclude)
	s.groups, _ = compileFilters("--groups", link.Groups)
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	go func() {
		defer close(s.done)
		s.run(ctx)
	}()
	return s
}

func (s *syncer) close() {
	s.cancel()
	<-s.done
}

// sameSyncer reports whether a link change leaves its syncer as it is (pausing does).
func sameSyncer(a, b *metadata.Link) bool {
	x, y := *a, *b
	x.Paused, y.Paused = false, false
	return reflect.DeepEqual(x, y)
}

func (s *syncer) groupInterval() time.Duration {
	if s.link.GroupSyncIntervalMs > 0 {
		return time.Duration(s.link.GroupSyncIntervalMs) * time.Millisecond
	}
	return defaultGroupSyncInterval
}

// run is the syncer's goroutine. Its clients of the source and of this cluster live
// while the node is the active controller.
func (s *syncer) run(ctx context.Context) {
	var src, dst *kgo.Client
	defer func() {
		for _, cl := range []*kgo.Client{src, dst} {
			if cl != nil {
				cl.Close()
			}
		}
	}()
	// retrySource: when to try building the source client again after it could not
	// be built (a reference this node cannot resolve, a bad property).
	var nextFollow, nextGroups, retrySource time.Time
	for {
		wait := leaderCheck
		a := s.m.admin.Load()
		if a != nil && a.cfg.Controller.IsLeader() {
			var err error
			if src == nil && !time.Now().Before(retrySource) {
				if src, err = s.sourceClient(); err != nil {
					s.warnOnce("source", "link: cannot build the source client", "err", err)
					retrySource = time.Now().Add(followInterval)
				}
			}
			now := time.Now()
			if src != nil && !now.Before(nextFollow) {
				s.follow(ctx, a, src)
				nextFollow = time.Now().Add(followInterval)
			}
			if src != nil && len(s.groups) > 0 && !now.Before(nextGroups) {
				if dst == nil {
					dst, err = a.localClient()
				}
				if err != nil {
					s.m.logger.Warn("link: group offset sync: no client of this cluster", "link", s.link.Name, "err", err)
				} else {
					s.syncGroups(ctx, a, src, dst)
				}
				nextGroups = time.Now().Add(s.groupInterval())
			}
			switch {
			case src == nil:
				wait = min(wait, time.Until(retrySource))
			default:
				wait = min(wait, time.Until(nextFollow))
				if len(s.groups) > 0 {
					wait = min(wait, time.Until(nextGroups))
				}
			}
		} else if src != nil {
			// No longer the active controller: the next one follows the link.
			src.Close()
			src, nextFollow, nextGroups, retrySource = nil, time.Time{}, time.Time{}, time.Time{}
			if dst != nil {
				dst.Close()
				dst = nil
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(max(wait, 10*time.Millisecond)):
		}
	}
}

func (s *syncer) sourceClient() (*kgo.Client, error) {
	opts, err := sourceOptions(s.link)
	if err != nil {
		return nil, err
	}
	return kgo.NewClient(opts...)
}

// warnOnce logs msg once per key for the syncer's life.
func (s *syncer) warnOnce(key, msg string, args ...any) {
	if s.warned[key] {
		return
	}
	s.warned[key] = true
	s.m.logger.Warn(msg, append([]any{"link", s.link.Name, "source", s.link.Source}, args...)...)
}

// follow runs one round of following the source's topics.
func (s *syncer) follow(ctx context.Context, a *Admin, cl *kgo.Client) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		if ctx.Err() == nil {
			s.m.logger.Warn("link: reading the source's topics", "link", s.link.Name, "source", s.link.Source, "err", err)
		}
		return
	}
	im := a.cfg.Image()
	followed := map[string]*metadata.MirrorTopic{} // mirror topics the link still follows
	for _, mt := range im.MirrorsOf(s.link.Name) {
		if mt.State == metadata.MirrorMirroring || mt.State == metadata.MirrorPaused {
			followed[mt.Topic] = mt
		}
	}
	seen := map[string]bool{}
	var added []controller.MirrorSpec
	for _, t := range meta.Topics {
		if t.Topic == nil || kerr.ErrorForCode(t.ErrorCode) != nil {
			continue
		}
		name := *t.Topic
		seen[name] = true
		if mt := followed[name]; mt != nil {
			s.followTopic(ctx, a, im, mt, t)
			continue
		}
		if !s.matches(name, t.IsInternal) || s.hadMirror(im, name) {
			continue
		}
		if im.Topics[name] != nil {
			s.warnOnce("exists/"+name, "link: a new source topic is not mirrored: this cluster has a topic of that name", "topic", name)
			continue
		}
		added = append(added, controller.MirrorSpec{Name: name, Partitions: int32(len(t.Partitions)), SourceTopicID: t.TopicID})
	}
	s.failDeleted(ctx, a, cl, followed, seen)
	if len(added) > 0 {
		s.addTopics(ctx, a, cl, added)
	}
	var names []string
	for name := range followed {
		names = append(names, name)
	}
	slices.Sort(names)
	if s.link.SyncConfigs && len(names) > 0 {
		s.syncConfigs(ctx, a, cl, im, names)
	}
	if s.link.SyncACLs && len(names) > 0 {
		s.syncACLs(ctx, a, cl, names)
	}
}

// hadMirror reports whether the link has, or had, a mirror topic of that name: one
// promoted or failed stays as it is, and one deleted on this cluster (its mirror
// record outlives it) was deleted on purpose and is not created again.
func (s *syncer) hadMirror(im *metadata.Image, name string) bool {
	if im.Links == nil {
		return false
	}
	m := im.Links.Mirrors[name]
	return m != nil && m.Link == s.link.Name
}

// matches reports whether the link mirrors a source topic of that name.
func (s *syncer) matches(name string, internal bool) bool {
	if internal || strings.HasPrefix(name, "__") {
		return false
	}
	return (len(s.include) == 0 || matchAny(s.include, name)) && !matchAny(s.exclude, name)
}

// followTopic checks a followed mirror topic against its source topic t: a new topic
// id fails it (re-created), more partitions grow it.
func (s *syncer) followTopic(ctx context.Context, a *Admin, im *metadata.Image, mt *metadata.MirrorTopic, t kmsg.MetadataResponseTopic) {
	if mt.SourceTopicID != [16]byte{} && t.TopicID != [16]byte{} && t.TopicID != mt.SourceTopicID {
		s.failTopic(ctx, a, mt.Topic, recreatedReason(mt.Topic, s.link))
		return
	}
	dt := im.Topics[mt.Topic]
	if dt == nil || len(t.Partitions) <= len(dt.Partitions) {
		return
	}
	if err := a.cfg.Controller.GrowMirror(ctx, s.link.Name, mt.Topic, int32(len(t.Partitions))); err != nil {
		s.m.logger.Warn("link: adding the source's new partitions to a mirror topic", "link", s.link.Name, "topic", mt.Topic,
			"partitions", len(t.Partitions), "err", err)
		return
	}
	s.m.logger.Info("link: mirror topic follows the source's new partitions", "link", s.link.Name, "topic", mt.Topic,
		"from", len(dt.Partitions), "to", len(t.Partitions))
}

// failDeleted fails the followed mirror topics the source no longer lists, once an
// explicit lookup confirms the source does not know them (a listing can lag a
// creation, never a deletion the other way round, but the lookup costs little).
func (s *syncer) failDeleted(ctx context.Context, a *Admin, cl *kgo.Client, followed map[string]*metadata.MirrorTopic, seen map[string]bool) {
	req := kmsg.NewPtrMetadataRequest()
	for name := range followed {
		if !seen[name] {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(name)
			req.Topics = append(req.Topics, rt)
		}
	}
	if len(req.Topics) == 0 {
		return
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return
	}
	for _, t := range resp.Topics {
		if t.Topic != nil && errors.Is(kerr.ErrorForCode(t.ErrorCode), kerr.UnknownTopicOrPartition) {
			s.failTopic(ctx, a, *t.Topic, deletedReason(*t.Topic, s.link))
		}
	}
}

func deletedReason(topic string, l *metadata.Link) string {
	return fmt.Sprintf("source topic %q of link %s no longer exists on %s", topic, l.Name, l.Source)
}

func recreatedReason(topic string, l *metadata.Link) string {
	return fmt.Sprintf("source topic %q of link %s was deleted and re-created on %s (topic id changed): the mirror stops", topic, l.Name, l.Source)
}

func (s *syncer) failTopic(ctx context.Context, a *Admin, topic, reason string) {
	s.m.logger.Error("link: mirror topic failed", "link", s.link.Name, "topic", topic, "reason", reason)
	if err := a.cfg.Controller.FailMirror(ctx, topic, reason); err != nil {
		s.m.logger.Warn("link: recording a failed mirror topic", "link", s.link.Name, "topic", topic, "err", err)
	}
}

// addTopics creates the new source topics' mirror topics, with the source's configs.
// They are created together when they can be; when that fails, one by one, so that a
// topic that cannot be created (a bad name here, not enough brokers) does not hold
// the others back.
func (s *syncer) addTopics(ctx context.Context, a *Admin, cl *kgo.Client, specs []controller.MirrorSpec) {
	slices.SortFunc(specs, func(x, y controller.MirrorSpec) int { return strings.Compare(x.Name, y.Name) })
	if err := a.sourceConfigs(ctx, cl, specs); err != nil {
		return
	}
	if err := a.cfg.Controller.AddMirrorTopics(ctx, s.link.Name, specs); err == nil {
		for _, sp := range specs {
			s.m.logger.Info("link: new source topic mirrored", "link", s.link.Name, "topic", sp.Name, "partitions", sp.Partitions)
		}
		return
	}
	for _, sp := range specs {
		if err := a.cfg.Controller.AddMirrorTopics(ctx, s.link.Name, []controller.MirrorSpec{sp}); err != nil {
			s.warnOnce("add/"+sp.Name, "link: a new source topic cannot be mirrored", "topic", sp.Name, "err", err)
			continue
		}
		s.m.logger.Info("link: new source topic mirrored", "link", s.link.Name, "topic", sp.Name, "partitions", sp.Partitions)
	}
}

// syncConfigs makes each followed mirror topic's configs the source topic's
// (--sync-configs): a key the source sets (DYNAMIC_TOPIC_CONFIG) and this cluster
// accepts is set here to the source's value; a key set here that the source
// describes but does not set (its default applies there) is deleted here; a key the
// source does not describe at all (a Runnel-only config) and sensitive ones are left
// as they are.
func (s *syncer) syncConfigs(ctx context.Context, a *Admin, cl *kgo.Client, im *metadata.Image, names []string) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	for _, name := range names {
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, name
		req.Resources = append(req.Resources, r)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		s.warnOnce("configs", "link: the source does not describe topic configs; --sync-configs does nothing", "err", err)
		return
	}
	for _, r := range resp.Resources {
		t := im.Topics[r.ResourceName]
		if t == nil || r.ErrorCode != 0 {
			continue
		}
		set := configChanges(t.Configs, r.Configs, a.cfg.ValidateTopicConfig)
		if len(set) == 0 {
			continue
		}
		if err := a.cfg.Controller.SyncMirrorConfigs(ctx, s.link.Name, r.ResourceName, set); err != nil {
			s.m.logger.Warn("link: following the source's topic configs", "link", s.link.Name, "topic", r.ResourceName, "err", err)
			continue
		}
		keys := make([]string, 0, len(set))
		for k := range set {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		s.m.logger.Info("link: mirror topic configs follow the source", "link", s.link.Name, "topic", r.ResourceName, "keys", keys)
	}
}

// configChanges is what turns cur (a mirror topic's configs here) into the source's
// (described): see syncConfigs. A nil value deletes the key.
func configChanges(cur map[string]string, described []kmsg.DescribeConfigsResponseResourceConfig, validate func(k, v string) error) map[string]*string {
	set := map[string]*string{}
	for _, c := range described {
		if c.IsSensitive {
			continue
		}
		v, ok := cur[c.Name]
		switch {
		case c.Source == kmsg.ConfigSourceDynamicTopicConfig && c.Value != nil:
			if ok && v == *c.Value {
				continue
			}
			if validate != nil && validate(c.Name, *c.Value) != nil {
				continue // named in the log at create; not copied
			}
			set[c.Name] = c.Value
		case ok:
			set[c.Name] = nil
		}
	}
	return set
}

// syncACLs makes the LITERAL TOPIC ACLs of the followed mirror topics the source's
// (--sync-acls): one DescribeAcls on the source, then one metadata entry here.
func (s *syncer) syncACLs(ctx context.Context, a *Admin, cl *kgo.Client, names []string) {
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeLiteral
	req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	resp, err := req.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		s.warnOnce("acls", "link: cannot read the source's ACLs; --sync-acls does nothing until it can", "err", err)
		return
	}
	var want []metadata.ACL
	for _, r := range resp.Resources {
		if !slices.Contains(names, r.ResourceName) {
			continue
		}
		for _, e := range r.ACLs {
			want = append(want, metadata.ACL{ResourceType: metadata.ACLResourceTopic, ResourceName: r.ResourceName,
				PatternType: metadata.ACLPatternLiteral, Principal: e.Principal, Host: e.Host,
				Operation: metadata.ACLOperation(e.Operation), Permission: metadata.ACLPermission(e.PermissionType)})
		}
	}
	added, removed, err := a.cfg.Controller.SyncMirrorACLs(ctx, s.link.Name, names, want)
	if err != nil {
		s.m.logger.Warn("link: following the source's topic ACLs", "link", s.link.Name, "err", err)
		return
	}
	for _, acl := range added {
		s.m.logger.Info("link: ACL copied from the source", "link", s.link.Name, "acl", acl.String())
	}
	for _, acl := range removed {
		s.m.logger.Info("link: ACL removed as on the source", "link", s.link.Name, "acl", acl.String())
	}
}
