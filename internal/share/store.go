package share

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// StateTopic is the internal topic holding share-partition state (Kafka's name; the
// records are Runnel's own, see doc.go).
const StateTopic = "__share_group_state"

// StoreClientID is the client id of the KgoStore's client: the one client the brokers
// let append to StateTopic.
const StoreClientID = "runnel-share-state"

// Key names one share partition: a group's view of one topic partition.
type Key struct {
	Group     string
	TopicID   [16]byte
	Partition int32
}

// TopicName names a topic by its id, for errors; "" when the id is not known.
type TopicName func(id [16]byte) string

// topicPartition is k's topic partition as errors name it: name's topic name when it
// knows the id, else the topic id in Kafka's form (base64 URL, no padding).
func (k Key) topicPartition(name TopicName) string {
	if name != nil {
		if n := name(k.TopicID); n != "" {
			return fmt.Sprintf("%s-%d", n, k.Partition)
		}
	}
	return fmt.Sprintf("topic id %s partition %d", base64.RawURLEncoding.EncodeToString(k.TopicID[:]), k.Partition)
}

// Snapshot is the durable state of one share partition (Kafka's ShareSnapshotValue,
// in Runnel's encoding). Later snapshots replace earlier ones: the one with the
// highest (StateEpoch, LeaderEpoch, Seq) wins on replay, whatever order they reached
// the log in.
type Snapshot struct {
	// StateEpoch is the state's generation (Kafka's state epoch): an admin request
	// (AlterShareGroupOffsets, DeleteShareGroupOffsets) starts a new one, so that no
	// write of a leader still holding the earlier state can win over it on replay.
	StateEpoch int32 `json:"state_epoch,omitempty"`
	// Deleted marks a state deleted by DeleteShareGroupOffsets: the share partition
	// starts again from share.auto.offset.reset, in this StateEpoch.
	Deleted bool `json:"deleted,omitempty"`
	// LeaderEpoch is the data partition's leader epoch of the leader that wrote it.
	LeaderEpoch int32 `json:"leader_epoch"`
	// Seq counts the snapshots of one share partition; it continues across leaders.
	Seq     int64        `json:"seq"`
	Start   int64        `json:"start"`
	Batches []StateBatch `json:"batches,omitempty"`
	// WrittenMs is when it was written (Unix ms), for describe.
	WrittenMs int64 `json:"written_ms"`
}

func (s Snapshot) newer(than Snapshot) bool {
	if s.StateEpoch != than.StateEpoch {
		return s.StateEpoch > than.StateEpoch
	}
	return s.LeaderEpoch > than.LeaderEpoch || s.LeaderEpoch == than.LeaderEpoch && s.Seq > than.Seq
}

// Store keeps snapshots durably. Write returns once the snapshot is replicated
// (acks=-1); Read returns the newest snapshot of key; ReadGroup every live one of a
// group; Delete tombstones keys.
type Store interface {
	Write(ctx context.Context, k Key, s Snapshot) error
	Read(ctx context.Context, k Key) (Snapshot, bool, error)
	ReadGroup(ctx context.Context, group string) (map[Key]Snapshot, error)
	Delete(ctx context.Context, keys []Key) error
}

// encodeKey is a record key: version 0, the group (length-prefixed), topic id and
// partition.
func encodeKey(k Key) []byte {
	b := make([]byte, 0, 2+2+len(k.Group)+16+4)
	b = binary.BigEndian.AppendUint16(b, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(len(k.Group)))
	b = append(b, k.Group...)
	b = append(b, k.TopicID[:]...)
	return binary.BigEndian.AppendUint32(b, uint32(k.Partition))
}

func decodeKey(b []byte) (Key, error) {
	if len(b) < 4 || binary.BigEndian.Uint16(b) != 0 {
		return Key{}, fmt.Errorf("share state key: unknown version or too short (%d bytes)", len(b))
	}
	n := int(binary.BigEndian.Uint16(b[2:]))
	if len(b) != 4+n+16+4 {
		return Key{}, fmt.Errorf("share state key: %d bytes, want %d", len(b), 4+n+16+4)
	}
	var k Key
	k.Group = string(b[4 : 4+n])
	copy(k.TopicID[:], b[4+n:])
	k.Partition = int32(binary.BigEndian.Uint32(b[4+n+16:]))
	return k, nil
}

// StatePartition maps a group to its partition of StateTopic (n partitions): every
// share partition of a group lives in one, so a group's offsets are read from one
// partition, whose leader is the group's share coordinator (FindCoordinator key type 2).
func StatePartition(group string, n int32) int32 {
	h := fnv.New32a()
	h.Write([]byte(group))
	return int32(h.Sum32() % uint32(n))
}

// KgoStore is a Store over StateTopic through a Kafka client of the cluster (the
// node's inter-broker identity): records go to whichever node leads the group's
// partition, acks=-1, and the topic is compacted, so it is replicated and survives
// any node like the coordinators' topics.
type KgoStore struct {
	// Opts are the client options (seeds, dialer, SASL) every client starts from.
	Opts func() []kgo.Opt
	// Ensure creates StateTopic when missing and returns its partition count.
	Ensure func(ctx context.Context) (int32, error)

	mu       sync.Mutex
	producer *kgo.Client
	parts    int32
}

func (s *KgoStore) client(ctx context.Context) (*kgo.Client, int32, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.producer != nil {
		return s.producer, s.parts, nil
	}
	n, err := s.Ensure(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("creating %s: %w", StateTopic, err)
	}
	cl, err := kgo.NewClient(append(s.Opts(), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0), kgo.AllowAutoTopicCreation())...)
	if err != nil {
		return nil, 0, err
	}
	s.producer, s.parts = cl, n
	return cl, n, nil
}

// Close closes the producer.
func (s *KgoStore) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.producer != nil {
		s.producer.Close()
		s.producer = nil
	}
}

func (s *KgoStore) Write(ctx context.Context, k Key, snap Snapshot) error {
	cl, n, err := s.client(ctx)
	if err != nil {
		return err
	}
	v, err := json.Marshal(snap)
	if err != nil {
		return err
	}
	rec := &kgo.Record{Topic: StateTopic, Partition: StatePartition(k.Group, n), Key: encodeKey(k), Value: v}
	if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
		return fmt.Errorf("writing share state of group %s, %s to %s-%d: %w", k.Group, k.topicPartition(nil), StateTopic, rec.Partition, err)
	}
	return nil
}

func (s *KgoStore) Delete(ctx context.Context, keys []Key) error {
	cl, n, err := s.client(ctx)
	if err != nil {
		return err
	}
	var recs []*kgo.Record
	for _, k := range keys {
		recs = append(recs, &kgo.Record{Topic: StateTopic, Partition: StatePartition(k.Group, n), Key: encodeKey(k)})
	}
	return cl.ProduceSync(ctx, recs...).FirstErr()
}

func (s *KgoStore) Read(ctx context.Context, k Key) (Snapshot, bool, error) {
	all, err := s.readPartition(ctx, k.Group, func(got Key) bool { return got == k })
	snap, ok := all[k]
	return snap, ok, err
}

func (s *KgoStore) ReadGroup(ctx context.Context, group string) (map[Key]Snapshot, error) {
	return s.readPartition(ctx, group, func(got Key) bool { return got.Group == group })
}

// barrierKey is the key of the barrier records readPartition appends; decodeKey
// refuses it (not version 0), so replays skip it, and its null value lets compaction
// drop it.
var barrierKey = []byte{0xff, 0xff, 'b', 'a', 'r', 'r', 'i', 'e', 'r'}

// readPartition replays group's partition of StateTopic up to a barrier record it
// appends first (acks=-1), keeping the newest snapshot of each key want accepts (a
// tombstone removes it). Reading to the high watermark instead would miss snapshots
// already acknowledged to their writers when the partition's leader has just changed:
// a new leader's high watermark can lag what its predecessor had committed, until its
// followers fetch again. Every record acknowledged before the barrier lies below it,
// and the barrier's own acknowledgement means the high watermark has passed it.
func (s *KgoStore) readPartition(ctx context.Context, group string, want func(Key) bool) (map[Key]Snapshot, error) {
	producer, n, err := s.client(ctx)
	if err != nil {
		return nil, err
	}
	p := StatePartition(group, n)
	barrier := &kgo.Record{Topic: StateTopic, Partition: p, Key: barrierKey}
	if err := producer.ProduceSync(ctx, barrier).FirstErr(); err != nil {
		return nil, fmt.Errorf("appending a read barrier to %s-%d: %w", StateTopic, p, err)
	}
	cl, err := kgo.NewClient(append(s.Opts(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		StateTopic: {p: kgo.NewOffset().AtStart()},
	}), kgo.FetchMaxWait(100*time.Millisecond),
		// No fetch session: closing one sends a last fetch, which can wait on a
		// leader that just died while the caller (a ShareFetch) holds its
		// partition's lock.
		kgo.DisableFetchSessions())...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	starts, err := kadm.NewClient(cl).ListStartOffsets(ctx, StateTopic)
	if err != nil {
		return nil, fmt.Errorf("reading the start of %s-%d: %w", StateTopic, p, err)
	}
	end := barrier.Offset + 1
	out := map[Key]Snapshot{}
	next := int64(0)
	if st, ok := starts.Lookup(StateTopic, p); ok && st.Err == nil {
		next = st.Offset
	}
	for next < end {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("reading %s-%d at offset %d of %d: %w", StateTopic, p, next, end, err)
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			return nil, fmt.Errorf("reading %s-%d at offset %d: %w", StateTopic, p, next, ferr)
		}
		fs.EachRecord(func(r *kgo.Record) {
			next = r.Offset + 1
			k, err := decodeKey(r.Key)
			if err != nil || !want(k) {
				return
			}
			if r.Value == nil {
				delete(out, k)
				return
			}
			var snap Snapshot
			if json.Unmarshal(r.Value, &snap) != nil {
				return
			}
			if old, ok := out[k]; !ok || snap.newer(old) {
				out[k] = snap
			}
		})
	}
	return out, nil
}

// MemStore is an in-memory Store, for tests.
type MemStore struct {
	mu    sync.Mutex
	snaps map[Key]Snapshot
	// Fail, when set, fails every write.
	Fail error
}

func NewMemStore() *MemStore { return &MemStore{snaps: map[Key]Snapshot{}} }

func (m *MemStore) Write(_ context.Context, k Key, s Snapshot) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.Fail != nil {
		return m.Fail
	}
	if old, ok := m.snaps[k]; !ok || s.newer(old) {
		m.snaps[k] = s
	}
	return nil
}

func (m *MemStore) Read(_ context.Context, k Key) (Snapshot, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.snaps[k]
	return s, ok, nil
}

func (m *MemStore) ReadGroup(_ context.Context, group string) (map[Key]Snapshot, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[Key]Snapshot{}
	for k, s := range m.snaps {
		if k.Group == group {
			out[k] = s
		}
	}
	return out, nil
}

func (m *MemStore) Delete(_ context.Context, keys []Key) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range keys {
		delete(m.snaps, k)
	}
	return nil
}

var errNoStore = errors.New("share state store not configured")
