package kafka

import (
	"encoding/json"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Runnel's tagged fields. Where Kafka's protocol has no request for what Runnel's
// nodes and tools need to say, they say it in a tagged field of a flexible Kafka
// request that fits, as JSON: a Kafka broker skips tags it does not know, and no
// encoder is hand-written. A tag number is unique per request or response struct,
// never one of Kafka's (they stay below 10000). Every one in use:
//
//	10001 DamagedReplicasTag       BrokerHeartbeat request: the node's damaged replicas
//	10002 ReassignmentThrottleTag  AlterPartitionReassignments request: the moves' throttle
//	10002 LinkOpTag                DescribeCluster request and response: a link operation
//	10003 ScrubRequestTag          DescribeLogDirs request: scrub now
//	10003 NodeIntegrityTag         DescribeLogDirs response: the node's integrity counts
//	10004 DamagedRangesTag         DescribeLogDirs response partition: its damaged ranges
//	10005 AcceptDamageLossTag      DeleteRecords request and response partition: accept-loss repair
//
// Tools tell a Runnel node from another Kafka by RunnelFeature (18_api_versions.go).

// SetJSONTag stores v, as JSON, as tag of tags.
func SetJSONTag(tags *kmsg.Tags, tag uint32, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("kafka: tagged field %d: %v", tag, err)) // the payloads are plain structs
	}
	tags.Set(tag, b)
}

// JSONTag decodes tag of tags into v; found is false when tags has no such tag.
func JSONTag(tags *kmsg.Tags, tag uint32, v any) (found bool, err error) {
	tags.Each(func(t uint32, b []byte) {
		if t != tag || found {
			return
		}
		found = true
		if e := json.Unmarshal(b, v); e != nil {
			err = fmt.Errorf("Runnel tagged field %d: %w: %q", tag, e, b)
		}
	})
	return found, err
}
