package metadata

import (
	"fmt"
	"slices"
)

// DamagedReplica is a range of a partition's log that failed its CRC on one broker's
// disk (bit rot, a bad sector: not a crash's torn tail, which recovery cuts). The
// broker keeps the damaged segment in quarantine and its log end as it was; the
// replica needs repair from an intact one (or, for a partition with no intact copy,
// an operator's decision to accept the loss) before it may lead again while another
// replica is in sync.
type DamagedReplica struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// FirstOffset and LastOffset bound the offsets the damage covers, as far as the
	// broker could tell from the intact batches around it.
	FirstOffset int64 `json:"first_offset"`
	LastOffset  int64 `json:"last_offset"`
	// File is the damaged segment file (its quarantined copy is named in the broker's
	// log and in `runnel topic describe`).
	File string `json:"file,omitempty"`
}

// TopicPartition is the partition the damage is in.
func (d DamagedReplica) TopicPartition() TopicPartition {
	return TopicPartition{Topic: d.Topic, Partition: d.Partition}
}

func (d DamagedReplica) String() string {
	return fmt.Sprintf("%s-%d offsets %d-%d in %s", d.Topic, d.Partition, d.FirstOffset, d.LastOffset, d.File)
}

// Damaged reports whether broker r's replica of tp is damaged.
func (im *Image) Damaged(tp TopicPartition, r NodeID) bool {
	for _, d := range im.Brokers[r].Damaged {
		if d.Topic == tp.Topic && d.Partition == tp.Partition {
			return true
		}
	}
	return false
}

// DamageOf lists the damaged ranges of tp's replicas, by broker.
func (im *Image) DamageOf(tp TopicPartition) map[NodeID][]DamagedReplica {
	var out map[NodeID][]DamagedReplica
	for id, b := range im.Brokers {
		for _, d := range b.Damaged {
			if d.TopicPartition() == tp {
				if out == nil {
					out = map[NodeID][]DamagedReplica{}
				}
				out[id] = append(out[id], d)
			}
		}
	}
	return out
}

// SortDamage orders ds by topic, partition and first offset, the order brokers report
// and records carry them in, so that equal sets compare equal.
func SortDamage(ds []DamagedReplica) {
	slices.SortFunc(ds, func(a, b DamagedReplica) int {
		switch {
		case a.Topic != b.Topic:
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		case a.Partition != b.Partition:
			return int(a.Partition - b.Partition)
		case a.FirstOffset != b.FirstOffset:
			if a.FirstOffset < b.FirstOffset {
				return -1
			}
			return 1
		}
		return 0
	})
}
