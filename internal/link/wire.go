package link

// The link commands' transport. `runnel link` speaks only Kafka: it sends a
// DescribeCluster request (key 60, flexible from v0) carrying a Runnel tagged field,
// OpTag, whose payload is a Request as JSON; the answer is the DescribeCluster
// response carrying the same tag, a Response as JSON. Why DescribeCluster: every
// Kafka client may send it to any broker, it changes nothing on a cluster that does
// not know the tag (a Kafka broker skips unknown tags and answers a plain
// description, which the CLI reports as "this cluster has no cluster links"), and
// Runnel serves it on every node, so no new API key (which kmsg could not encode)
// is needed. A tag this high is never one of Kafka's. Operations that change the
// metadata run on the active controller's node: another node forwards the same
// request there (Forwarded set, so it is never forwarded twice). Status is answered
// by each node for the mirror partitions it leads; the CLI asks every broker.

import (
	"encoding/json"

	"github.com/runnel-io/runnel/internal/kafka"
)

// OpTag is the DescribeCluster tagged field carrying a link operation and its answer
// (kafka.LinkOpTag: one number, kept in internal/kafka's list of Runnel tags).
const OpTag = kafka.LinkOpTag

// Operations.
const (
	OpCreate  = "create"
	OpList    = "list"
	OpStatus  = "status"
	OpPause   = "pause"
	OpResume  = "resume"
	OpPromote = "promote"
	OpDelete  = "delete"
	// OpFail is sent by a partition leader: the source topic of Topics[0] was
	// deleted or re-created (Reason); the mirror topic stops in state failed.
	OpFail = "fail"
	// OpFailback runs on the old source after a promote elsewhere (failback.go);
	// OpSwitchover is the planned move (failback.go).
	OpFailback   = "failback"
	OpSwitchover = "switchover"
)

// Mutates reports whether op changes the metadata (needs ALTER on the cluster and
// runs on the active controller).
func Mutates(op string) bool { return op != OpList && op != OpStatus }

// Request is one link operation.
type Request struct {
	Op   string `json:"op"`
	Link string `json:"link,omitempty"`
	// Source, SourceProps, Topics, Exclude, ReplicationFactor: create.
	Source            string            `json:"source,omitempty"`
	SourceProps       map[string]string `json:"source_props,omitempty"`
	Topics            []string          `json:"topics,omitempty"`
	Exclude           []string          `json:"exclude,omitempty"`
	ReplicationFactor int16             `json:"replication_factor,omitempty"`
	// Groups, SyncACLs, SyncConfigs, ThrottleBytes, GroupSyncIntervalMs: create
	// (INTERFACE.md's --groups, --sync-acls, --sync-configs, --throttle,
	// --group-sync-interval).
	Groups              []string `json:"groups,omitempty"`
	SyncACLs            bool     `json:"sync_acls,omitempty"`
	SyncConfigs         bool     `json:"sync_configs,omitempty"`
	ThrottleBytes       int64    `json:"throttle_bytes,omitempty"`
	GroupSyncIntervalMs int64    `json:"group_sync_interval_ms,omitempty"`
	// All: promote/failback every mirror topic of the link.
	All bool `json:"all,omitempty"`
	// Promote: delete --promote.
	Promote bool `json:"promote,omitempty"`
	// Reason: fail.
	Reason string `json:"reason,omitempty"`
	// Forwarded: sent by a node to the active controller's node.
	Forwarded bool `json:"forwarded,omitempty"`
	// Failback: the failback phases (failback.go).
	Failback *FailbackArgs `json:"failback,omitempty"`
}

// Response is an operation's answer. Error is "" on success; ErrorCode is the Kafka
// error code that goes with it (INVALID_REQUEST for a bad request, NOT_CONTROLLER,
// ...).
type Response struct {
	Error      string            `json:"error,omitempty"`
	ErrorCode  int16             `json:"error_code,omitempty"`
	Links      []LinkInfo        `json:"links,omitempty"`
	Topics     []string          `json:"topics,omitempty"`
	Partitions []PartitionStatus `json:"partitions,omitempty"`
	// Groups: status, the consumer group offsets this node synced.
	Groups []GroupStatus `json:"groups,omitempty"`
	// Node answered (status: the partitions it leads).
	Node int32 `json:"node"`
	// Failback: the failback phases' answers (failback.go).
	Failback *FailbackArgs `json:"failback,omitempty"`
}

// LinkInfo is one line of `link list`.
type LinkInfo struct {
	Link         string `json:"link"`
	Source       string `json:"source"`
	State        string `json:"state"` // active, paused
	MirrorTopics int    `json:"mirror_topics"`
}

// PartitionStatus is one mirror partition as its leader sees it (INTERFACE.md's
// `link status --json` fields, plus writable_from once promoted).
type PartitionStatus struct {
	Topic        string  `json:"topic"`
	Partition    int32   `json:"partition"`
	SourceEnd    int64   `json:"source_end"`
	End          int64   `json:"end"`
	LagRecords   int64   `json:"lag_records"`
	LagSeconds   float64 `json:"lag_seconds"`
	State        string  `json:"state"`
	Error        string  `json:"error"`
	Leader       int32   `json:"leader"`
	WritableFrom int64   `json:"writable_from"`
	// TruncatedTo, QuarantinedRecords, Quarantine: promote and failback answers
	// (INTERFACE.md: quarantine is the topic or path holding what was set aside, ""
	// when nothing was).
	TruncatedTo        int64  `json:"truncated_to"`
	QuarantinedRecords int64  `json:"quarantined_records"`
	Quarantine         string `json:"quarantine"`
}

// GroupStatus is one consumer group offset a link synced (`link status --json`'s
// groups).
type GroupStatus struct {
	Group      string `json:"group"`
	Topic      string `json:"topic"`
	Partition  int32  `json:"partition"`
	Offset     int64  `json:"offset"`
	SyncedAtMs int64  `json:"synced_at_ms"`
}

// Encode and Decode are the tag's payloads.
func Encode(v any) []byte {
	b, _ := json.Marshal(v) // plain structs: cannot fail
	return b
}

func DecodeRequest(b []byte) (Request, error) {
	var r Request
	err := json.Unmarshal(b, &r)
	return r, err
}

func DecodeResponse(b []byte) (Response, error) {
	var r Response
	err := json.Unmarshal(b, &r)
	return r, err
}
