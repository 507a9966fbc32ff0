package metadata

import (
	"net"
	"sort"
	"strconv"
)

// NodeID identifies a node (Kafka's broker.id / node.id).
type NodeID int32

// NoLeader is the leader of an offline partition.
const NoLeader NodeID = -1

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// Broker is a registered node.
type Broker struct {
	ID NodeID `json:"id"`
	// Host and Port are the endpoint other nodes dial (replication, the controller
	// channel, transaction markers, liveness probes): the broker's inter-broker
	// listener (inter.broker.listener.name), which every node of a cluster names alike.
	Host string `json:"host"`
	Port int32  `json:"port"`
	// Endpoints are every Kafka listener the broker registered, the inter-broker one
	// first. A client is given the endpoint of the listener it connected on (Kafka's
	// rule); empty in a registration from before listeners had names, which then has
	// Host and Port alone.
	Endpoints []Endpoint `json:"endpoints,omitempty"`
	Rack      string     `json:"rack,omitempty"`
	// Fenced brokers lead nothing and are not in any ISR.
	Fenced bool `json:"fenced"`
	// Epoch increases on every registration (a restart) so stale heartbeats are ignored.
	Epoch int64 `json:"epoch"`
	// IncarnationID identifies one run of the node's process (Kafka's incarnation id):
	// a registration with the same incarnation is a retry, another one a restart.
	IncarnationID string `json:"incarnation_id,omitempty"`
	// RegisteredOffset is the metadata offset at which this registration was applied
	// (set by Apply, never by the proposer). The broker has caught up with the metadata,
	// and may be unfenced, once it has applied this offset.
	RegisteredOffset uint64 `json:"registered_offset,omitempty"`
	// DiskFull says the broker's data directory is full (it reported so in its
	// heartbeats): it stays up, serves reads and follows, but the controller moves its
	// leaderships to replicas that can write and elects it leader only when no other
	// in-sync replica can lead. A new registration starts without it.
	DiskFull bool `json:"disk_full,omitempty"`
	// Damaged are the replicas of this broker whose logs hold a range that failed its
	// CRC (it reported them in its heartbeats, sorted by SortDamage): the controller
	// elects such a replica leader only when no other in-sync replica can lead, moves
	// the leaderships it holds to intact in-sync replicas, and keeps it out of the ISR
	// until it reports the range repaired. A new registration starts without them
	// (the registering node reports them in the heartbeat that unfences it).
	Damaged []DamagedReplica `json:"damaged,omitempty"`
	// FencedAtMs is when the controller fenced this registration (Unix milliseconds;
	// the FenceBroker record's AtMs), 0 while it is unfenced or was never unfenced.
	FencedAtMs int64 `json:"fenced_at_ms,omitempty"`
	// AwaitsShare says the broker registered for the first time under the node_add
	// balancer and the balancer has not planned its share of replicas yet. It is
	// metadata, not the active controller's memory, so that a controller that takes
	// over before the plan still gives the node its share. The controller sets it in
	// the first registration and keeps it in later ones; a BrokerShareType record
	// clears it.
	AwaitsShare bool `json:"awaits_share,omitempty"`
}

// Endpoint is one Kafka listener of a broker as registered (Kafka's BrokerEndpoint).
type Endpoint struct {
	// Name is the listener's name, upper case (PLAINTEXT, SASL_SSL, INTERNAL, ...).
	Name string `json:"name"`
	Host string `json:"host"`
	Port int32  `json:"port"`
	// SecurityProtocol is Kafka's id of the listener's protocol: 0 PLAINTEXT, 1 SSL,
	// 2 SASL_PLAINTEXT, 3 SASL_SSL.
	SecurityProtocol int16 `json:"security_protocol"`
}

// Addr is b's registered (inter-broker) Kafka address, host:port.
func (b Broker) Addr() string {
	return net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
}

// Endpoint returns b's endpoint of the listener named name. A broker registered
// without named endpoints has one, Host and Port, under every name.
func (b Broker) Endpoint(name string) (Endpoint, bool) {
	if len(b.Endpoints) == 0 {
		return Endpoint{Name: name, Host: b.Host, Port: b.Port}, true
	}
	for _, e := range b.Endpoints {
		if e.Name == name {
			return e, true
		}
	}
	return Endpoint{}, false
}

// Partition is the replication state of one partition.
type Partition struct {
	Replicas []NodeID `json:"replicas"`
	ISR      []NodeID `json:"isr"`
	Leader   NodeID   `json:"leader"`
	// LeaderEpoch increases every time the leader changes.
	LeaderEpoch int32 `json:"leader_epoch"`
	// PartitionEpoch increases on every change of this partition (leader or ISR), so
	// that stale AlterPartition requests can be rejected.
	PartitionEpoch int32 `json:"partition_epoch"`
	// AddingReplicas and RemovingReplicas describe a reassignment in progress (KIP-455):
	// Replicas is then the target assignment followed by the replicas being removed,
	// AddingReplicas are the target's replicas that were not in the original one, and
	// RemovingReplicas the original's that are not in the target. Both empty when no
	// reassignment is in progress. Invariant: AddingReplicas and RemovingReplicas are
	// disjoint subsets of Replicas.
	AddingReplicas   []NodeID `json:"adding_replicas,omitempty"`
	RemovingReplicas []NodeID `json:"removing_replicas,omitempty"`
}

// Reassigning reports whether a reassignment of the partition is in progress.
func (p Partition) Reassigning() bool {
	return len(p.AddingReplicas) > 0 || len(p.RemovingReplicas) > 0
}

// TargetReplicas is the assignment a reassignment in progress moves to (Replicas
// without RemovingReplicas), or Replicas when none is.
func (p Partition) TargetReplicas() []NodeID {
	if len(p.RemovingReplicas) == 0 {
		return p.Replicas
	}
	out := make([]NodeID, 0, len(p.Replicas))
	for _, r := range p.Replicas {
		if !Contains(p.RemovingReplicas, r) {
			out = append(out, r)
		}
	}
	return out
}

// OriginalReplicas is the assignment before the reassignment in progress (Replicas
// without AddingReplicas), or Replicas when none is.
func (p Partition) OriginalReplicas() []NodeID {
	if len(p.AddingReplicas) == 0 {
		return p.Replicas
	}
	out := make([]NodeID, 0, len(p.Replicas))
	for _, r := range p.Replicas {
		if !Contains(p.AddingReplicas, r) {
			out = append(out, r)
		}
	}
	return out
}

// Topic is a topic and its partitions, indexed by partition id.
type Topic struct {
	Name       string            `json:"name"`
	ID         [16]byte          `json:"id"`
	Partitions []Partition       `json:"partitions"`
	Configs    map[string]string `json:"configs,omitempty"`
	// Internal marks topics such as __consumer_offsets.
	Internal bool `json:"internal,omitempty"`
}

// Image is an immutable snapshot of the cluster metadata. Never modify an Image or
// anything reachable from it; Apply returns a new one that shares unchanged parts.
type Image struct {
	// Offset is the Raft index of the last record applied (0 for the empty image).
	Offset    uint64            `json:"offset"`
	ClusterID string            `json:"cluster_id"`
	Brokers   map[NodeID]Broker `json:"brokers"`
	Topics    map[string]*Topic `json:"topics"`
	Configs   map[string]string `json:"configs,omitempty"` // dynamic broker-wide defaults
	// NextProducerID is the first producer id not yet handed out in a block. It only
	// grows, so ids from different blocks never collide, across restarts and leaders.
	NextProducerID int64 `json:"next_producer_id,omitempty"`
	// ClientQuotas are the client quotas set (quotas.go); nil when none is.
	ClientQuotas *ClientQuotas `json:"client_quotas,omitempty"`
	// Scram holds the SCRAM users' credentials (scram.go); nil when there is none.
	Scram *ScramCredentials `json:"scram,omitempty"`
	// ACLs are the access control entries (acls.go); nil when there is none.
	ACLs *ACLs `json:"acls,omitempty"`
	// Links are the cluster links and their mirror topics (links.go); nil when none.
	Links *Links `json:"links,omitempty"`
}

// Empty returns the image before any record.
func Empty() *Image {
	return &Image{Brokers: map[NodeID]Broker{}, Topics: map[string]*Topic{}, Configs: map[string]string{}}
}

// Topic returns the named topic or nil.
func (im *Image) Topic(name string) *Topic { return im.Topics[name] }

// Partition returns a partition's state and whether it exists.
func (im *Image) Partition(tp TopicPartition) (Partition, bool) {
	t := im.Topics[tp.Topic]
	if t == nil || tp.Partition < 0 || int(tp.Partition) >= len(t.Partitions) {
		return Partition{}, false
	}
	return t.Partitions[tp.Partition], true
}

// TopicByID finds a topic by its id.
func (im *Image) TopicByID(id [16]byte) *Topic {
	for _, t := range im.Topics {
		if t.ID == id {
			return t
		}
	}
	return nil
}

// TopicNames returns the topic names, sorted.
func (im *Image) TopicNames() []string {
	names := make([]string, 0, len(im.Topics))
	for n := range im.Topics {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// BrokerIDs returns the registered broker ids, sorted.
func (im *Image) BrokerIDs() []NodeID {
	ids := make([]NodeID, 0, len(im.Brokers))
	for id := range im.Brokers {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// Contains reports whether id is in ids.
func Contains(ids []NodeID, id NodeID) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// LocalChanges is what one node must do after a new image: partitions it now leads,
// partitions it now follows (with their leader), and partitions it no longer hosts.
type LocalChanges struct {
	Leaders   map[TopicPartition]Partition
	Followers map[TopicPartition]Partition
	Deleted   []TopicPartition
	// TopicIDs of every partition named above, for the partition.metadata file.
	TopicIDs map[string][16]byte
	// Configs of the topics named above.
	Configs map[string]map[string]string
}

// LocalChanges computes the changes for node between prev (may be nil) and im. A
// partition appears when it is new or any of its state changed, so applying the same
// changes twice is harmless.
func (im *Image) LocalChanges(prev *Image, node NodeID) LocalChanges {
	lc := LocalChanges{
		Leaders:   map[TopicPartition]Partition{},
		Followers: map[TopicPartition]Partition{},
		TopicIDs:  map[string][16]byte{},
		Configs:   map[string]map[string]string{},
	}
	if prev == nil {
		prev = Empty()
	}
	for name, t := range im.Topics {
		pt := prev.Topics[name]
		if pt != nil && pt.ID != t.ID {
			pt = nil // deleted and re-created with the same name
		}
		for i, p := range t.Partitions {
			if !Contains(p.Replicas, node) {
				if pt != nil && i < len(pt.Partitions) && Contains(pt.Partitions[i].Replicas, node) {
					lc.Deleted = append(lc.Deleted, TopicPartition{name, int32(i)})
				}
				continue
			}
			if pt != nil && i < len(pt.Partitions) && samePartition(pt.Partitions[i], p) && sameConfigs(pt.Configs, t.Configs) {
				continue
			}
			tp := TopicPartition{name, int32(i)}
			if p.Leader == node {
				lc.Leaders[tp] = p
			} else {
				lc.Followers[tp] = p
			}
			lc.TopicIDs[name] = t.ID
			lc.Configs[name] = t.Configs
		}
	}
	for name, pt := range prev.Topics {
		t := im.Topics[name]
		if t != nil && t.ID == pt.ID {
			continue
		}
		for i, p := range pt.Partitions {
			if Contains(p.Replicas, node) {
				lc.Deleted = append(lc.Deleted, TopicPartition{name, int32(i)})
			}
		}
	}
	return lc
}

func samePartition(a, b Partition) bool {
	return a.Leader == b.Leader && a.LeaderEpoch == b.LeaderEpoch && a.PartitionEpoch == b.PartitionEpoch &&
		sameIDs(a.Replicas, b.Replicas) && sameIDs(a.ISR, b.ISR) &&
		sameIDs(a.AddingReplicas, b.AddingReplicas) && sameIDs(a.RemovingReplicas, b.RemovingReplicas)
}

func sameIDs(a, b []NodeID) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func sameConfigs(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
