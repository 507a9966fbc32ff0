package metadata

// Cluster links (docs/cluster-links.md): a link on this (the destination) cluster fetches topics
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
	// MirrorFailingBack: a failback (link failback) made this topic, until then the
	// primary's, a mirror topic of the new primary: it is read-only and not fetched
	// while the failback sets its unmirrored tail aside (Failback); the failback's
	// cut then makes it mirroring.
	MirrorFailingBack MirrorState = "failing_back"
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
	// MirroredEnds and SourceEpochs are what the promote recorded per partition, as
	// the partition's leader reported it after its cut (-1, or a slice too short:
	// not reported yet): the end of what was mirrored (the last mirrored offset + 1,
	// where this cluster's own writes start) and the source's leader epoch of the last
	// mirrored batch below it, as the source stamped it (-1: unknown, the leader that
	// cut did not copy that batch itself). A failback on the old source finds the
	// divergence point with them (internal/link/failback_divergence.go).
	MirroredEnds []int64 `json:"mirrored_ends,omitempty"`
	SourceEpochs []int32 `json:"source_epochs,omitempty"`
	// Failback is set while and after a failback made this topic a mirror topic
	// again (state MirrorFailingBack, then mirroring); a later promote leaves it, and
	// the next failback replaces it.
	Failback *Failback `json:"failback,omitempty"`
}

// Failback is one failback of a mirror topic on the old source (internal/link's
// failback). First the topic is fenced (MirrorFailingBack, read-only, StartedAtMs and
// Quarantine fixed); then, once the tail above each partition's divergence point is
// copied into Quarantine, the cut (CutTo, CutEpochs, Quarantined) makes it mirroring.
// Invariant: the first leader of an epoch >= CutEpochs[p] whose log holds no batch of
// such an epoch cuts its log to CutTo[p] before it appends anything
// (replica/mirror.go), so the tail goes on every replica and the mirror fetches the
// new primary's records from the divergence point on.
type Failback struct {
	StartedAtMs int64 `json:"started_at_ms"`
	// Quarantine is the topic holding each partition's tail (same partition numbers).
	Quarantine string `json:"quarantine"`
	// CutTo, CutEpochs and Quarantined: per partition, the divergence point, the
	// leader epoch from which the cut holds, and how many records were set aside.
	// Nil until the cut.
	CutTo       []int64 `json:"cut_to,omitempty"`
	CutEpochs   []int32 `json:"cut_epochs,omitempty"`
	Quarantined []int64 `json:"quarantined,omitempty"`
}

// Cut reports whether the failback's cut was recorded.
func (f *Failback) Cut() bool { return f != nil && f.CutTo != nil }

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
		m.MirroredEnds, m.SourceEpochs = slices.Clone(m.MirroredEnds), slices.Clone(m.SourceEpochs)
		if m.Failback != nil {
			f := *m.Failback
			f.CutTo, f.CutEpochs, f.Quarantined = slices.Clone(f.CutTo), slices.Clone(f.CutEpochs), slices.Clone(f.Quarantined)
			m.Failback = &f
		}
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

// FailbackCut returns, for tp, a partition of a mirror topic whose failback was cut
// and that is not promoted since, the offset its log is cut to and the leader epoch
// from which the cut holds (Failback's invariant).
func (im *Image) FailbackCut(tp TopicPartition) (to int64, epoch int32, ok bool) {
	m := im.MirrorOf(tp.Topic)
	if m == nil || m.State == MirrorPromoted || !m.Failback.Cut() || tp.Partition < 0 ||
		int(tp.Partition) >= len(m.Failback.CutTo) || int(tp.Partition) >= len(m.Failback.CutEpochs) {
		return 0, 0, false
	}
	return m.Failback.CutTo[tp.Partition], m.Failback.CutEpochs[tp.Partition], true
}

// PromoteRecord returns what the promote of tp recorded (MirroredEnds,
// SourceEpochs), ok false while its leader has not reported it.
func (m *MirrorTopic) PromoteRecord(partition int32) (mirroredEnd int64, sourceEpoch int32, ok bool) {
	if m == nil || partition < 0 || int(partition) >= len(m.MirroredEnds) || m.MirroredEnds[partition] < 0 {
		return -1, -1, false
	}
	sourceEpoch = -1
	if int(partition) < len(m.SourceEpochs) {
		sourceEpoch = m.SourceEpochs[partition]
	}
	return m.MirroredEnds[partition], sourceEpoch, true
}
