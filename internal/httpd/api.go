package httpd

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"
)

// The JSON API under /api/v1/ (docs/console.md). Every answer is one of the types
// below; their JSON field names are stable (snake_case) and are what programs rely
// on, so rename nothing: add fields. A value this node could not learn is null, never
// a guess or a stale number, and the answer says why in an error field beside it.

// Header opens every answer: who answered, as of when, and what the reader should
// know before trusting the numbers (this node lost touch with the controller, or is
// still starting).
type Header struct {
	// ServedBy is the id of the node that answered.
	ServedBy int32 `json:"served_by"`
	// GeneratedAt is when the answer was put together.
	GeneratedAt time.Time `json:"generated_at"`
	// MetadataOffset is the offset of the metadata image the answer reads: two nodes
	// at the same offset show the same cluster.
	MetadataOffset uint64 `json:"metadata_offset"`
	// Warnings are what makes the answer less than current, in plain words.
	Warnings []string `json:"warnings,omitempty"`
}

// Cluster is /api/v1/cluster: the overview.
type Cluster struct {
	Header
	ClusterID string `json:"cluster_id"`
	// ControllerID is the active controller as this node knows it, -1 when none is.
	ControllerID int32 `json:"controller_id"`
	// NodeReady is /readyz of the answering node.
	NodeReady       bool `json:"node_ready"`
	NodesTotal      int  `json:"nodes_total"`
	NodesDown       int  `json:"nodes_down"`
	Topics          int  `json:"topics"`
	Partitions      int  `json:"partitions"`
	UnderReplicated int  `json:"under_replicated_partitions"`
	UnderMinISR     int  `json:"under_min_isr_partitions"`
	Offline         int  `json:"offline_partitions"`
	Reassigning     int  `json:"reassigning_partitions"`
	// Mirrors counts the mirror links that write their progress to this cluster.
	Mirrors int `json:"mirrors"`
	// Problems lists the partitions that are offline, under min ISR or
	// under-replicated, worst first, at most ProblemsLimit of them.
	Problems          []PartitionProblem `json:"problems"`
	ProblemsTruncated bool               `json:"problems_truncated,omitempty"`
	// Nodes is the same list as /api/v1/nodes.
	Nodes []Node `json:"nodes"`
}

// ProblemsLimit bounds Cluster.Problems, so that the overview stays small when a
// node holding thousands of replicas is down.
const ProblemsLimit = 100

// PartitionProblem is one partition that is not fully replicated.
type PartitionProblem struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Status is PartitionStatus's value.
	Status   string  `json:"status"`
	Leader   int32   `json:"leader"`
	Replicas []int32 `json:"replicas"`
	ISR      []int32 `json:"isr"`
}

// The values of a partition's status, worst first.
const (
	// StatusOffline: no leader (every replica that may lead is down).
	StatusOffline = "offline"
	// StatusUnderMinISR: fewer in-sync replicas than min.insync.replicas, so acks=all
	// produce fails.
	StatusUnderMinISR = "under_min_isr"
	// StatusUnderReplicated: the ISR is smaller than the replica set.
	StatusUnderReplicated = "under_replicated"
	// StatusOK: every replica is in sync.
	StatusOK = "ok"
)

// Nodes is /api/v1/nodes.
type Nodes struct {
	Header
	ControllerID int32  `json:"controller_id"`
	Nodes        []Node `json:"nodes"`
}

// Node is one node of the cluster: a registered broker, or a node that holds
// replicas but is not registered (State "down", Registered false).
type Node struct {
	ID         int32  `json:"id"`
	Host       string `json:"host"`
	Port       int32  `json:"port"`
	Rack       string `json:"rack,omitempty"`
	Registered bool   `json:"registered"`
	// State is "up" (registered and unfenced) or "down" (fenced by the controller: no
	// heartbeat within broker.session.timeout.ms, stopped, or still catching up after
	// a start; or not registered at all).
	State    string `json:"state"`
	Fenced   bool   `json:"fenced"`
	DiskFull bool   `json:"disk_full,omitempty"`
	// Damaged are the node's replicas with a range that failed its CRC (bit rot), as
	// the node reports them to the controller (docs/durability.md).
	Damaged []DamagedReplica `json:"damaged,omitempty"`
	// FencedAt is when the controller fenced it, when known.
	FencedAt *time.Time `json:"fenced_at,omitempty"`
	// Controller: the active controller. Self: the node that answered.
	Controller bool `json:"controller"`
	Self       bool `json:"self"`
	// Replicas and Leaders count the partitions it holds and leads.
	Replicas int `json:"replicas"`
	Leaders  int `json:"leaders"`
}

// DamagedReplica is one damaged range of a node's replica.
type DamagedReplica struct {
	Topic       string `json:"topic"`
	Partition   int32  `json:"partition"`
	FirstOffset int64  `json:"first_offset"`
	LastOffset  int64  `json:"last_offset"`
	File        string `json:"file"`
}

// Node states.
const (
	NodeUp   = "up"
	NodeDown = "down"
)

// Topics is /api/v1/topics.
type Topics struct {
	Header
	Topics []TopicSummary `json:"topics"`
	// SizesError says why sizes or record counts are missing.
	SizesError string `json:"sizes_error,omitempty"`
}

// TopicSummary is one topic in the list.
type TopicSummary struct {
	Name              string `json:"name"`
	Internal          bool   `json:"internal"`
	PartitionCount    int    `json:"partition_count"`
	ReplicationFactor int    `json:"replication_factor"`
	UnderReplicated   int    `json:"under_replicated_partitions"`
	UnderMinISR       int    `json:"under_min_isr_partitions"`
	Offline           int    `json:"offline_partitions"`
	Reassigning       int    `json:"reassigning_partitions"`
	// In the topic list only (absent elsewhere): the topic's size (one copy: its
	// leaders' logs; and every replica's), its records (the high watermark less the
	// log start, summed over the partitions; compaction and transaction markers make
	// it an upper bound), and its rates over the node's last chart sample. null when
	// not known (a leader or node did not answer; no sample yet).
	SizeBytes        *int64   `json:"size_bytes,omitempty"`
	SizeOnDiskBytes  *int64   `json:"size_on_disk_bytes,omitempty"`
	Records          *int64   `json:"records,omitempty"`
	BytesInPerSec    *float64 `json:"bytes_in_per_sec,omitempty"`
	RecordsInPerSec  *float64 `json:"records_in_per_sec,omitempty"`
	RecordsOutPerSec *float64 `json:"records_out_per_sec,omitempty"`
	// BytesOutPerSec is what the answering node sent consumers of the topic (its
	// runnel_topic_bytes_out_total), not the cluster's: null before the node has
	// sent any.
	BytesOutPerSec *float64 `json:"bytes_out_per_sec,omitempty"`
}

// Topic is /api/v1/topics/{name}.
type Topic struct {
	Header
	TopicSummary
	// ID is the topic id as Kafka prints it (URL-safe base64, no padding), as the CLI.
	ID string `json:"id"`
	// MinISR is the topic's effective min.insync.replicas.
	MinISR int32 `json:"min_insync_replicas"`
	// Configs are the topic's own overrides (not the defaults).
	Configs    map[string]string `json:"configs"`
	Partitions []Partition       `json:"partitions"`
	// Groups are the consumer groups with committed offsets on the topic, with
	// their lag on it; GroupsError says why they are missing or incomplete.
	Groups      []TopicGroupLag `json:"groups"`
	GroupsError string          `json:"groups_error,omitempty"`
}

// Partition is one partition of a topic.
type Partition struct {
	Partition   int32   `json:"partition"`
	Leader      int32   `json:"leader"`
	LeaderEpoch int32   `json:"leader_epoch"`
	Replicas    []int32 `json:"replicas"`
	ISR         []int32 `json:"isr"`
	// Adding and Removing are a reassignment in progress (KIP-455).
	Adding   []int32 `json:"adding_replicas,omitempty"`
	Removing []int32 `json:"removing_replicas,omitempty"`
	// DownReplicas are the replicas on nodes that are down.
	DownReplicas []int32 `json:"down_replicas,omitempty"`
	Status       string  `json:"status"`
	Offsets      Offsets `json:"offsets"`
}

// Offsets of a partition, and where they come from.
type Offsets struct {
	// LogStart and HighWatermark are the leader's; LogEnd is known only on the
	// leader's own node (a follower or a client sees no further than the high
	// watermark). null: not known (see Source and Error).
	LogStart      *int64 `json:"log_start_offset"`
	HighWatermark *int64 `json:"high_watermark"`
	LogEnd        *int64 `json:"log_end_offset"`
	// Source is OffsetsLocal, OffsetsListOffsets or OffsetsUnavailable.
	Source string `json:"source"`
	Error  string `json:"error,omitempty"`
}

// Where a partition's offsets come from.
const (
	// OffsetsLocal: this node leads the partition and read its replica.
	OffsetsLocal = "local"
	// OffsetsListOffsets: asked the leader with ListOffsets through this node's
	// Kafka listener.
	OffsetsListOffsets = "list_offsets"
	// OffsetsUnavailable: the leader did not answer (Error says why).
	OffsetsUnavailable = "unavailable"
)

// TopicGroupLag is one group's lag on one topic.
type TopicGroupLag struct {
	GroupID string `json:"group_id"`
	State   string `json:"state"`
	// Lag is the sum over the topic's partitions with a committed offset; null when
	// an end offset or a commit could not be read (Error).
	Lag   *int64 `json:"lag"`
	Error string `json:"error,omitempty"`
}

// Groups is /api/v1/groups.
type Groups struct {
	Header
	Groups []GroupSummary `json:"groups"`
	// Error says why the list is missing or incomplete (a coordinator that did not
	// answer); the groups it names are still shown.
	Error string `json:"error,omitempty"`
}

// GroupSummary is one consumer group in the list.
type GroupSummary struct {
	GroupID string `json:"group_id"`
	State   string `json:"state"`
	// Protocol is the group's type, as runnel group list names it: classic, consumer
	// (KIP-848) or share (KIP-932); "" when ListGroups did not say.
	Protocol     string `json:"protocol"`
	ProtocolType string `json:"protocol_type"`
	// Assignor is a classic group's selected assignment protocol (range, ...), or a
	// share group's assignor.
	Assignor string `json:"assignor"`
	// Coordinator is the node that coordinates the group, -1 when unknown.
	Coordinator int32 `json:"coordinator"`
	MemberCount int   `json:"member_count"`
	// Lag is the group's total lag; null when it could not be computed (Error).
	Lag    *int64   `json:"lag"`
	Topics []string `json:"topics"`
	Error  string   `json:"error,omitempty"`
}

// Group is /api/v1/groups/{id}.
type Group struct {
	Header
	GroupSummary
	Members []GroupMember `json:"members"`
	// Offsets is one row per partition with a committed offset or an assignment.
	Offsets []GroupOffset `json:"offsets"`
}

// GroupMember is one member of a group.
type GroupMember struct {
	MemberID   string  `json:"member_id"`
	InstanceID *string `json:"instance_id"`
	ClientID   string  `json:"client_id"`
	ClientHost string  `json:"client_host"`
	// Assigned are the partitions assigned to it, as "topic/partition".
	Assigned []string `json:"assigned"`
}

// GroupOffset is a group's position on one partition.
type GroupOffset struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Committed is null when the group has committed nothing there yet.
	Committed *int64 `json:"committed_offset"`
	// StartOffset is a share group's share-partition start offset (every record
	// before it is acknowledged, rejected or past the delivery limit), as runnel
	// share describe shows it; its Committed is null and its Lag the records from
	// the start offset to the end not yet acknowledged. Absent for other groups.
	StartOffset *int64 `json:"start_offset,omitempty"`
	// End is the partition's high watermark; Lag is End - Committed (End - log start
	// when nothing is committed). Both null when not known (Error).
	End      *int64 `json:"end_offset"`
	Lag      *int64 `json:"lag"`
	MemberID string `json:"member_id,omitempty"`
	ClientID string `json:"client_id,omitempty"`
	Error    string `json:"error,omitempty"`
}

// Reassignments is /api/v1/reassignments.
type Reassignments struct {
	Header
	Reassignments []Reassignment `json:"reassignments"`
	// The totals over the partitions, as the CLI's last line: null when a
	// partition's progress is not known.
	BytesCopied *int64   `json:"bytes_copied"`
	BytesLeft   *int64   `json:"bytes_left"`
	Rate        *float64 `json:"rate_bytes_per_sec"`
	ETA         *float64 `json:"eta_seconds"`
	// SizesError says why the progress is missing or incomplete (a node that did
	// not answer DescribeLogDirs).
	SizesError string `json:"sizes_error,omitempty"`
}

// Reassignment is one partition being moved (KIP-455).
type Reassignment struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Leader    int32  `json:"leader"`
	// Replicas is the current set (target plus those being removed); Target the set
	// the move ends with.
	Replicas []int32 `json:"replicas"`
	Target   []int32 `json:"target_replicas"`
	Adding   []int32 `json:"adding_replicas"`
	Removing []int32 `json:"removing_replicas"`
	ISR      []int32 `json:"isr"`
	// AddingInSync are the adding replicas that have caught up (the move completes
	// when all have).
	AddingInSync []int32 `json:"adding_in_sync"`
	// BytesRemaining is what the adding replicas still have to copy, an estimate
	// known only on the leader's node; null elsewhere.
	BytesRemaining *int64 `json:"bytes_remaining"`
	// The progress as `runnel reassign status` measures it (DescribeLogDirs): the
	// leader's log size, the bytes the adding replicas hold and still lack (summed over
	// them), the rate they were copied at between two samples and the seconds left at
	// that rate. null when not known (the leader did not answer; no second sample, or
	// no progress between the two, for the rate and ETA).
	SizeBytes   *int64   `json:"size_bytes"`
	BytesCopied *int64   `json:"bytes_copied"`
	BytesLeft   *int64   `json:"bytes_left"`
	Rate        *float64 `json:"rate_bytes_per_sec"`
	ETA         *float64 `json:"eta_seconds"`
}

// Mirrors is /api/v1/mirrors: the mirror links whose target is this cluster.
type Mirrors struct {
	Header
	Mirrors []MirrorLink `json:"mirrors"`
}

// MirrorLink is one mirror, read from its progress topic on this cluster.
type MirrorLink struct {
	Name          string `json:"name"`
	ProgressTopic string `json:"progress_topic"`
	SourceCluster string `json:"source_cluster,omitempty"`
	TargetCluster string `json:"target_cluster,omitempty"`
	Alias         string `json:"alias,omitempty"`
	Naming        string `json:"naming,omitempty"`
	// LagRecords is the sum of the partitions' lag; MaxLagSeconds the largest.
	LagRecords    int64              `json:"lag_records"`
	MaxLagSeconds float64            `json:"max_lag_seconds"`
	Partitions    []MirrorPartition  `json:"partitions"`
	Groups        []MirrorCheckpoint `json:"groups"`
	// Error says why the progress could not be read; the rest is then empty.
	Error string `json:"error,omitempty"`
}

// MirrorPartition is one mirrored source partition.
type MirrorPartition struct {
	Topic       string `json:"topic"`
	Partition   int32  `json:"partition"`
	TargetTopic string `json:"target_topic"`
	// SourceEnd is the source's high watermark as the mirror last saw it; Next the
	// next source offset to copy; TargetEnd the target offset after the last copy.
	SourceEnd  int64   `json:"source_end"`
	Next       int64   `json:"next_offset"`
	TargetEnd  int64   `json:"target_end"`
	LagRecords int64   `json:"lag_records"`
	LagSeconds float64 `json:"lag_seconds"`
	Records    int64   `json:"records"`
	// State is running, stopped, error, or stale (running, but not updated for more
	// than 10 s: its process is gone, paused or cut off from this cluster).
	State   string    `json:"state"`
	Error   string    `json:"error,omitempty"`
	Updated time.Time `json:"updated"`
	Owner   string    `json:"owner"`
}

// MirrorCheckpoint is one group's last synced offset on one partition.
type MirrorCheckpoint struct {
	Group        string    `json:"group"`
	Topic        string    `json:"topic"`
	Partition    int32     `json:"partition"`
	TargetTopic  string    `json:"target_topic"`
	SourceOffset int64     `json:"source_offset"`
	TargetOffset int64     `json:"target_offset"`
	Updated      time.Time `json:"updated"`
}

// Links is /api/v1/links: this cluster's cluster links (`runnel link`,
// docs/cluster-links.md), each with its mirror partitions as their leaders report
// them, as `runnel link status --json` shows them.
type Links struct {
	Header
	Links []Link `json:"links"`
}

// Link is one cluster link: its definition from the metadata image and the status
// of its mirror partitions, asked of every broker (each answers for those it leads).
type Link struct {
	Name   string `json:"name"`
	Source string `json:"source"`
	// State is active or paused (`runnel link pause`).
	State        string `json:"state"`
	MirrorTopics int    `json:"mirror_topics"`
	// LagRecords is the sum of the partitions' lag; MaxLagSeconds the largest.
	LagRecords    int64           `json:"lag_records"`
	MaxLagSeconds float64         `json:"max_lag_seconds"`
	Partitions    []LinkPartition `json:"partitions"`
	// Error says why some or all partitions are missing (a broker that did not
	// answer the status, naming the node).
	Error string `json:"error,omitempty"`
}

// LinkPartition is one mirror partition as its leader reports it (`runnel link
// status --json`'s fields, plus the leader).
type LinkPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// State is mirroring, paused, promoting, promoted, failed or failing_back.
	State string `json:"state"`
	// End is this cluster's end of the partition; SourceEnd the source's high
	// watermark at the last fetch, -1 before the first.
	End        int64   `json:"end"`
	SourceEnd  int64   `json:"source_end"`
	LagRecords int64   `json:"lag_records"`
	LagSeconds float64 `json:"lag_seconds"`
	Error      string  `json:"error"`
	Leader     int32   `json:"leader"`
}

// APIError is the body of every error answer of /api/v1/.
type APIError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// Errors a ConsoleSource returns (wrapped) to choose the HTTP status.
var (
	// ErrNotFound: the topic or group named in the path does not exist (404).
	ErrNotFound = errors.New("not found")
	// ErrUnavailable: the node cannot answer yet, e.g. it is still starting (503).
	ErrUnavailable = errors.New("unavailable")
	// ErrForbidden: the signed-in principal lacks the ACL the answer needs (403);
	// the message names the principal, operation and resource.
	ErrForbidden = errors.New("forbidden")
)

// ConsoleSource gathers what the console shows. Implementations must not block
// beyond ctx (the console gives each request a deadline) and must report what they
// could not learn in the answers' error fields rather than fail the whole answer.
type ConsoleSource interface {
	Cluster(ctx context.Context) (*Cluster, error)
	Nodes(ctx context.Context) (*Nodes, error)
	Topics(ctx context.Context) (*Topics, error)
	Topic(ctx context.Context, name string) (*Topic, error)
	Groups(ctx context.Context) (*Groups, error)
	Group(ctx context.Context, id string) (*Group, error)
	Reassignments(ctx context.Context) (*Reassignments, error)
	Mirrors(ctx context.Context) (*Mirrors, error)
	Links(ctx context.Context) (*Links, error)
}

// statusOf maps a source's error to an HTTP status.
func statusOf(err error) int {
	switch {
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, ErrUnavailable):
		return http.StatusServiceUnavailable
	case errors.Is(err, ErrForbidden), errors.Is(err, ErrCSRF):
		return http.StatusForbidden
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout
	}
	return http.StatusInternalServerError
}

// writeJSON writes v as an indented JSON answer with status code.
func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v) // the client went away: nothing to tell it
}

// writeAPIError writes an APIError answer.
func writeAPIError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, APIError{Code: code, Message: msg})
}
