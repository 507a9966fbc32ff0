package metadata

// Cluster links (issue 32): a link on this (the destination) cluster fetches topics
// from a source cluster and appends the source's batches unchanged at the same
// offsets into mirror topics, which are read-only until promoted. The link and each
// mirror topic's state are metadata, so that they survive any node's restart and
// follow partition leadership: the leader of a mirror partition runs its fetch from
// the source (internal/link), whichever node that is. This file only holds the state;
// the controller (internal/controller/links.go) validates and proposes the changes.

import (
	"maps"
	"slices"
)

// LinkType creates, replaces or removes a link: Record.Link.
const LinkType RecordType = "link"

// MirrorTopicType sets or removes one mirror topic's state: Record.Mirror.
const MirrorTopicType RecordType = "mirror_topic"

// Link is one cluster link, named on this cluster.
type Link struct {
	Name string `json:"name"`
	// Source is the source cluster's bootstrap, HOST:PORT[,HOST:PORT...].
	Source string `json:"source"`
	// SourceProps are the source client's properties (the CLI's --source-X, with
	// librdkafka's names: security.protocol, sasl.mechanism, ...). They are kept in
	// the metadata as given: anyone who can read the metadata log can read them.
	SourceProps map[string]string `json:"source_props,omitempty"`
	// Topics and Exclude are the filters the link was created with (whole-name
	// regular expressions; a plain name matches itself).
	Topics  []string `json:"topics,omitempty"`
	Exclude []string `json:"exclude,omitempty"`
	// ReplicationFactor of the mirror topics it creates; -1: the cluster default.
	ReplicationFactor int16 `json:"replication_factor"`
	// Groups are the consumer group filters whose committed offsets the link copies
	// (whole-name regular expressions; none: no group is synced).
	Groups []string `json:"groups,omitempty"`
	// SyncACLs and SyncConfigs keep following the source's topic ACLs and configs.
	SyncACLs    bool `json:"sync_acls,omitempty"`
	SyncConfigs bool `json:"sync_configs,omitempty"`
	// ThrottleBytes caps the link's fetching, bytes per second per destination node
	// (0: no cap).
	ThrottleBytes int64 `json:"throttle_bytes,omitempty"`
	// GroupSyncIntervalMs is how often group offsets are synced (0: the default).
	GroupSyncIntervalMs int64 `json:"group_sync_interval_ms,omitempty"`
	// Paused stops every mirror topic's fetching (the topics stay read-only).
	Paused      bool  `json:"paused,omitempty"`
	CreatedAtMs int64 `json:"created_at_ms,omitempty"`
}

// MirrorState is a mirror topic's state, by INTERFACE.md's names.
type MirrorState string

const (
	// MirrorMirroring: the leaders fetch from the source; the topic is read-only.
	MirrorMirroring MirrorState = "mirroring"
	// MirrorPaused: no fetching; the topic is read-only.
	MirrorPaused MirrorState = "paused"
	// MirrorPromoted: no fetching, the topic is writable. Each partition's leader cut
	// its log to its last stable offset before taking its first write (PromoteEpochs).
	MirrorPromoted MirrorState = "promoted"
	// MirrorFailed: fetching stopped because of Error (a source topic deleted or
	// re-created, a source that lost records the destination holds); read-only.
	MirrorFailed MirrorState = "failed"
)

// MirrorTopic is the state of one mirror topic of a link.
type MirrorTopic struct {
	// Topic is the topic's name, on both clusters.
	Topic string `json:"topic"`
	// TopicID is the destination topic's id: a topic deleted and re-created under the
	// same name is not this mirror topic any more (Image.MirrorOf checks it).
	TopicID [16]byte `json:"topic_id"`
	Link    string   `json:"link"`
	// SourceTopicID is the source topic's id when the source reported one (zero from
	// a source that has none): a source topic re-created under the same name has
	// another and stops the mirror (MirrorFailed).
	SourceTopicID [16]byte    `json:"source_topic_id"`
	State         MirrorState `json:"state"`
	// Error says why the state is MirrorFailed, naming the topic; "" otherwise.
	Error string `json:"error,omitempty"`
	// PromoteEpochs, set by the promote, are per partition the destination leader
	// epoch from which the partition is writable. Invariant: the first leader of an
	// epoch >= PromoteEpochs[p] whose log holds no batch of such an epoch truncates its
	// log to its last stable offset before it takes a write (replica/mirror.go), so no
	// half transaction of the source survives and everything at or above that offset
	// was written on this cluster.
	PromoteEpochs []int32 `json:"promote_epochs,omitempty"`
	PromotedAtMs  int64   `json:"promoted_at_ms,omitempty"`
}

// Writable reports whether producers may write to the topic.
func (m *MirrorTopic) Writable() bool { return m == nil || m.State == MirrorPromoted }

// LinkChange is the LinkType payload: Link is created or replaced, or, when Remove is
// set, the link of that name removed (its mirror topics keep their own records).
type LinkChange struct {
	Link   *Link  `json:"link,omitempty"`
	Remove string `json:"remove,omitempty"`
}

// MirrorChange is the MirrorTopicType payload: Mirror is set (created or replaced),
// or, when Remove is set, the mirror state of that topic removed (the topic becomes an
// ordinary one).
type MirrorChange struct {
	Mirror *MirrorTopic `json:"mirror,omitempty"`
	Remove string       `json:"remove,omitempty"`
}

// Links holds the links and mirror topics. Immutable like the Image.
type Links struct {
	Links   map[string]*Link        `json:"links,omitempty"`
	Mirrors map[string]*MirrorTopic `json:"mirrors,omitempty"` // by topic name
}

func applyLinks(l *Links, rec Record) *Links {
	n := &Links{}
	if l != nil {
		n.Links, n.Mirrors = maps.Clone(l.Links), maps.Clone(l.Mirrors)
	}
	if n.Links == nil {
		n.Links = map[string]*Link{}
	}
	if n.Mirrors == nil {
		n.Mirrors = map[string]*MirrorTopic{}
	}
	switch {
	case rec.Type == LinkType && rec.Link != nil && rec.Link.Link != nil:
		lk := *rec.Link.Link
		n.Links[lk.Name] = &lk
	case rec.Type == LinkType && rec.Link != nil:
		delete(n.Links, rec.Link.Remove)
	case rec.Type == MirrorTopicType && rec.Mirror != nil && rec.Mirror.Mirror != nil:
		m := *rec.Mirror.Mirror
		m.PromoteEpochs = slices.Clone(m.PromoteEpochs)
		n.Mirrors[m.Topic] = &m
	case rec.Type == MirrorTopicType && rec.Mirror != nil:
		delete(n.Mirrors, rec.Mirror.Remove)
	}
	return n
}

// Link returns the named link or nil.
func (im *Image) Link(name string) *Link {
	if im.Links == nil {
		return nil
	}
	return im.Links.Links[name]
}

// LinkNames returns the links' names, sorted.
func (im *Image) LinkNames() []string {
	if im.Links == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(im.Links.Links))
}

// MirrorOf returns the mirror state of topic, or nil when it is not a mirror topic
// (never was, was removed from its link, or the topic of that name is another one
// than the mirror's: deleted and re-created).
func (im *Image) MirrorOf(topic string) *MirrorTopic {
	if im.Links == nil {
		return nil
	}
	m := im.Links.Mirrors[topic]
	if m == nil {
		return nil
	}
	if t := im.Topics[topic]; t == nil || t.ID != m.TopicID {
		return nil
	}
	return m
}

// MirrorsOf returns link's mirror topics, sorted by name.
func (im *Image) MirrorsOf(link string) []*MirrorTopic {
	if im.Links == nil {
		return nil
	}
	var out []*MirrorTopic
	for _, name := range slices.Sorted(maps.Keys(im.Links.Mirrors)) {
		if m := im.MirrorOf(name); m != nil && m.Link == link {
			out = append(out, m)
		}
	}
	return out
}

// PromoteEpoch returns the destination leader epoch from which tp, a promoted mirror
// partition, is writable, and whether tp is one.
func (im *Image) PromoteEpoch(tp TopicPartition) (int32, bool) {
	m := im.MirrorOf(tp.Topic)
	if m == nil || m.State != MirrorPromoted || int(tp.Partition) >= len(m.PromoteEpochs) || tp.Partition < 0 {
		return 0, false
	}
	return m.PromoteEpochs[tp.Partition], true
}
