package metadata

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

// RecordType tags a Record's payload.
type RecordType string

const (
	RegisterBrokerType RecordType = "register_broker"
	FenceBrokerType    RecordType = "fence_broker"
	UnfenceBrokerType  RecordType = "unfence_broker"
	// BrokerDiskType sets Broker.DiskFull of BrokerID to DiskFull.
	BrokerDiskType RecordType = "broker_disk"
	// BrokerDamageType sets Broker.Damaged of BrokerID to Damaged.
	BrokerDamageType RecordType = "broker_damage"
	// UnregisterBrokerType removes broker BrokerID for good (UnregisterBroker).
	UnregisterBrokerType RecordType = "unregister_broker"
	// BrokerShareType clears Broker.AwaitsShare of BrokerID: the balancer planned
	// the broker's share.
	BrokerShareType      RecordType = "broker_share"
	CreateTopicType      RecordType = "create_topic"
	DeleteTopicType      RecordType = "delete_topic"
	CreatePartitionsType RecordType = "create_partitions"
	ConfigType           RecordType = "config"
	PartitionChangeType  RecordType = "partition_change"
	ClusterIDType        RecordType = "cluster_id"
	// ProducerIDsType hands out the block [ProducerIDBlockStart, NextProducerID) of
	// producer ids. It applies only if ProducerIDBlockStart equals the image's
	// NextProducerID, so two proposers working from the same image cannot both get a block.
	ProducerIDsType RecordType = "producer_ids"
)

// Record is one change to the metadata. Exactly one payload field is set, matching Type.
type Record struct {
	Type           RecordType        `json:"type"`
	ClusterID      string            `json:"cluster_id,omitempty"`
	Broker         *Broker           `json:"broker,omitempty"`
	BrokerID       NodeID            `json:"broker_id,omitempty"`
	Topic          *Topic            `json:"topic,omitempty"`
	TopicName      string            `json:"topic_name,omitempty"`
	NewPartitions  []Partition       `json:"new_partitions,omitempty"`
	Partition      int32             `json:"partition,omitempty"`
	PartitionState *Partition        `json:"partition_state,omitempty"`
	ConfigKey      string            `json:"config_key,omitempty"`
	ConfigValue    *string           `json:"config_value,omitempty"` // nil deletes the key
	ConfigSet      map[string]string `json:"config_set,omitempty"`   // replaces all of a topic's configs when non-nil with ConfigKey empty
	// ProducerIDBlockStart and NextProducerID are the ProducerIDsType payload.
	ProducerIDBlockStart int64 `json:"producer_id_block_start,omitempty"`
	NextProducerID       int64 `json:"next_producer_id,omitempty"`
	// DiskFull is the BrokerDiskType payload.
	DiskFull bool `json:"disk_full,omitempty"`
	// Damaged is the BrokerDamageType payload (nil: none).
	Damaged []DamagedReplica `json:"damaged,omitempty"`
	// AtMs is when the controller proposed the record (Unix milliseconds), for
	// records whose time is shown to users (FenceBrokerType: Broker.FencedAtMs).
	AtMs int64 `json:"at_ms,omitempty"`
	// ClientQuota is the ClientQuotaType payload (quotas.go).
	ClientQuota *ClientQuotaChange `json:"client_quota,omitempty"`
	// Scram is the ScramCredentialType payload (scram.go).
	Scram *ScramChange `json:"scram,omitempty"`
	// ACL is the ACLType payload (acls.go).
	ACL *ACLChange `json:"acl,omitempty"`
	// Link and Mirror are the LinkType and MirrorTopicType payloads (links.go).
	Link   *LinkChange   `json:"link,omitempty"`
	Mirror *MirrorChange `json:"mirror,omitempty"`
}

// Encode serialises records for the Raft log.
func Encode(recs []Record) ([]byte, error) { return json.Marshal(recs) }

// Decode parses what Encode produced.
func Decode(b []byte) ([]Record, error) {
	var recs []Record
	if err := json.Unmarshal(b, &recs); err != nil {
		return nil, fmt.Errorf("decode metadata records: %w", err)
	}
	return recs, nil
}

// Apply returns the image after rec. Invalid records (a topic that does not exist, a
// partition out of range) are ignored: the controller validates before proposing, and
// the FSM must be deterministic on every node whatever the log holds.
func (im *Image) Apply(rec Record, offset uint64) *Image {
	n := *im
	n.Offset = offset
	switch rec.Type {
	case ClusterIDType:
		if n.ClusterID == "" {
			n.ClusterID = rec.ClusterID
		}
	case RegisterBrokerType, FenceBrokerType, UnfenceBrokerType, BrokerDiskType, BrokerDamageType, UnregisterBrokerType, BrokerShareType:
		n.Brokers = applyBroker(im.Brokers, rec, offset)
	case CreateTopicType:
		if rec.Topic != nil && im.Topics[rec.Topic.Name] == nil {
			n.Topics = maps.Clone(im.Topics)
			t := *rec.Topic
			n.Topics[t.Name] = &t
		}
	case DeleteTopicType:
		if im.Topics[rec.TopicName] != nil {
			n.Topics = maps.Clone(im.Topics)
			delete(n.Topics, rec.TopicName)
		}
	case CreatePartitionsType:
		if t := im.Topics[rec.TopicName]; t != nil {
			nt := *t
			nt.Partitions = append(slices.Clip(t.Partitions), rec.NewPartitions...)
			n.Topics = maps.Clone(im.Topics)
			n.Topics[t.Name] = &nt
		}
	case PartitionChangeType:
		if t := im.Topics[rec.TopicName]; t != nil && rec.PartitionState != nil &&
			rec.Partition >= 0 && int(rec.Partition) < len(t.Partitions) {
			nt := *t
			nt.Partitions = slices.Clone(t.Partitions)
			nt.Partitions[rec.Partition] = *rec.PartitionState
			n.Topics = maps.Clone(im.Topics)
			n.Topics[t.Name] = &nt
		}
	case ConfigType:
		n.applyConfig(im, rec)
	case ClientQuotaType:
		n.ClientQuotas = applyClientQuota(im.ClientQuotas, rec.ClientQuota)
	case ScramCredentialType:
		n.Scram = applyScram(im.Scram, rec.Scram)
	case ACLType:
		n.ACLs = applyACL(im.ACLs, rec.ACL)
	case LinkType, MirrorTopicType:
		n.Links = applyLinks(im.Links, rec)
	case ProducerIDsType:
		if rec.ProducerIDBlockStart == im.NextProducerID && rec.NextProducerID > im.NextProducerID {
			n.NextProducerID = rec.NextProducerID
		}
	}
	return &n
}

func applyBroker(old map[NodeID]Broker, rec Record, offset uint64) map[NodeID]Broker {
	m := maps.Clone(old)
	switch rec.Type {
	case RegisterBrokerType:
		if rec.Broker != nil {
			b := *rec.Broker
			b.RegisteredOffset = offset
			m[b.ID] = b
		}
	case FenceBrokerType, UnfenceBrokerType:
		if b, ok := m[rec.BrokerID]; ok {
			switch {
			case rec.Type == UnfenceBrokerType:
				b.FencedAtMs = 0
			case !b.Fenced:
				b.FencedAtMs = rec.AtMs
			}
			b.Fenced = rec.Type == FenceBrokerType
			m[rec.BrokerID] = b
		}
	case BrokerDiskType:
		if b, ok := m[rec.BrokerID]; ok {
			b.DiskFull = rec.DiskFull
			m[rec.BrokerID] = b
		}
	case BrokerDamageType:
		if b, ok := m[rec.BrokerID]; ok {
			b.Damaged = slices.Clone(rec.Damaged)
			m[rec.BrokerID] = b
		}
	case BrokerShareType:
		if b, ok := m[rec.BrokerID]; ok {
			b.AwaitsShare = false
			m[rec.BrokerID] = b
		}
	case UnregisterBrokerType:
		delete(m, rec.BrokerID)
	}
	return m
}

func (n *Image) applyConfig(im *Image, rec Record) {
	set := func(cfg map[string]string) map[string]string {
		c := maps.Clone(cfg)
		if c == nil {
			c = map[string]string{}
		}
		if rec.ConfigKey == "" && rec.ConfigSet != nil {
			return maps.Clone(rec.ConfigSet)
		}
		if rec.ConfigValue == nil {
			delete(c, rec.ConfigKey)
		} else {
			c[rec.ConfigKey] = *rec.ConfigValue
		}
		return c
	}
	if rec.TopicName == "" {
		n.Configs = set(im.Configs)
		return
	}
	if t := im.Topics[rec.TopicName]; t != nil {
		nt := *t
		nt.Configs = set(t.Configs)
		n.Topics = maps.Clone(im.Topics)
		n.Topics[t.Name] = &nt
	}
}
