package mirror

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// PartitionState is one source partition's committed state, as its owner last wrote
// it to the progress topic (key s/TOPIC/PARTITION), in the same transaction as the
// records it counts. JSON field names are stable (runnel mirror status --json).
type PartitionState struct {
	Topic       string `json:"topic"`
	Partition   int32  `json:"partition"`
	TargetTopic string `json:"target_topic"`
	// TopicID is the source topic's id (hex) the offsets belong to.
	TopicID string `json:"topic_id"`
	// Gen counts the offset maps this partition has had: it grows when a re-created
	// source topic is mirrored anew (OnDataLossSkip), so old chunks are ignored.
	Gen int `json:"gen"`
	// Next is the next source offset to mirror: every offset below it was mirrored,
	// or is a gap (marker, aborted, compacted, loop) or was skipped as lost.
	Next int64 `json:"next_offset"`
	// TargetEnd is the target offset after the last mirrored record (-1: none yet).
	TargetEnd int64 `json:"target_end"`
	// Chunk is the index of the offset-map chunk being filled.
	Chunk int `json:"chunk"`
	// SourceEnd is the source high watermark last seen; LagRecords = SourceEnd - Next.
	SourceEnd  int64   `json:"source_end"`
	LagRecords int64   `json:"lag_records"`
	LagSeconds float64 `json:"lag_seconds"`
	// Records and Bytes count what was mirrored (keys, values, headers); Skipped the
	// source offsets given up as lost under OnDataLossSkip; Loops the records not
	// written because they had been on the target already; MaybeDuplicated the
	// records that may have been written twice under AtLeastOnce.
	Records         int64 `json:"records"`
	Bytes           int64 `json:"bytes"`
	Skipped         int64 `json:"skipped"`
	Loops           int64 `json:"loops"`
	MaybeDuplicated int64 `json:"maybe_duplicated"`
	// State is running, stopped or error; Error says why when not running.
	State string `json:"state"`
	Error string `json:"error,omitempty"`
	// Updated is when the state was committed (Unix milliseconds); Owner the process.
	Updated int64  `json:"updated_ms"`
	Owner   string `json:"owner"`
}

// Checkpoint is one group's synced offset for one partition (key g/GROUP/TOPIC/P):
// its committed source offset and the exact target offset that translates it.
type Checkpoint struct {
	Group        string `json:"group"`
	Topic        string `json:"topic"`
	Partition    int32  `json:"partition"`
	TargetTopic  string `json:"target_topic"`
	SourceOffset int64  `json:"source_offset"`
	TargetOffset int64  `json:"target_offset"`
	Updated      int64  `json:"updated_ms"`
}

// Meta says which clusters a mirror links and how it names topics (key m). A mirror
// writes it before it creates any target topic, so that a mirror in the opposite
// direction, reading it on its own source, knows which topics there are copies of
// its target's topics (ALIAS.*) and does not copy them back.
type Meta struct {
	SourceCluster string `json:"source_cluster"`
	TargetCluster string `json:"target_cluster"`
	Alias         string `json:"alias"`
	Naming        string `json:"naming"` // prefix or identity
}

// Progress is what a mirror has committed to its progress topic.
type Progress struct {
	Name       string
	Meta       *Meta // nil: none written (a mirror of an older version)
	States     map[TopicPartition]*PartitionState
	Checkpoint map[string]map[TopicPartition]Checkpoint // by group
	// chunks[tp][gen][n] is chunk n of the map of generation gen.
	chunks map[TopicPartition]map[int]map[int][]run
	// chunkKeys are the keys of every chunk read, for trimming.
	chunkKeys map[TopicPartition][]chunkKey
}

// TopicPartition names a source partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (tp TopicPartition) String() string { return fmt.Sprintf("%s/%d", tp.Topic, tp.Partition) }

type chunkKey struct{ gen, n int }

func stateKey(tp TopicPartition) string { return fmt.Sprintf("s/%s/%d", tp.Topic, tp.Partition) }
func chunkKeyOf(tp TopicPartition, gen, n int) string {
	return fmt.Sprintf("r/%s/%d/%d/%d", tp.Topic, tp.Partition, gen, n)
}
func checkpointKey(group string, tp TopicPartition) string {
	return fmt.Sprintf("g/%s/%s/%d", group, tp.Topic, tp.Partition)
}

// offsetMap rebuilds tp's current map from its chunks (generation st.Gen).
func (p *Progress) offsetMap(tp TopicPartition, st *PartitionState) *offsetMap {
	m := &offsetMap{}
	chunks := p.chunks[tp][st.Gen]
	ns := make([]int, 0, len(chunks))
	for n := range chunks {
		ns = append(ns, n)
	}
	sort.Ints(ns)
	for _, n := range ns {
		m.runs = append(m.runs, chunks[n]...)
	}
	return m
}

// Translate returns the target offset that source offset o of tp maps to: the target
// offset of the first mirrored record at or after o.
func (p *Progress) Translate(tp TopicPartition, o int64) (target int64, targetTopic string, err error) {
	st := p.States[tp]
	if st == nil {
		return 0, "", fmt.Errorf("mirror %s: %s is not mirrored (no progress on the target)", p.Name, tp)
	}
	m := p.offsetMap(tp, st)
	if len(m.runs) > 0 && o < m.runs[0].Src {
		// Before the first run still kept: either before the mirror started (it maps
		// to the first record) or trimmed with the target's retention.
		return m.runs[0].Tgt, st.TargetTopic, nil
	}
	t, ok := m.translate(o, st.Next, st.TargetEnd)
	if !ok {
		return 0, st.TargetTopic, fmt.Errorf("mirror %s: %s offset %d is not mirrored yet (next to mirror: %d)", p.Name, tp, o, st.Next)
	}
	if t < 0 {
		t = 0
	}
	return t, st.TargetTopic, nil
}

// ReadProgress reads mirror name's progress topic from the target, read_committed,
// up to its end now. A missing topic is an empty Progress.
func ReadProgress(ctx context.Context, target []string, opts []kgo.Opt, name string) (*Progress, error) {
	topic := ProgressTopic(name)
	p := &Progress{Name: name, States: map[TopicPartition]*PartitionState{},
		Checkpoint: map[string]map[TopicPartition]Checkpoint{},
		chunks:     map[TopicPartition]map[int]map[int][]run{}, chunkKeys: map[TopicPartition][]chunkKey{}}
	base := append([]kgo.Opt{kgo.SeedBrokers(target...)}, opts...)
	acl, err := kgo.NewClient(base...)
	if err != nil {
		return nil, fmt.Errorf("mirror %s: target client: %w", name, err)
	}
	defer acl.Close()
	ends, err := kadm.NewClient(acl).ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("mirror %s: end offsets of %s on the target: %w", name, topic, err)
	}
	end, ok := ends.Lookup(topic, 0)
	if !ok || errors.Is(end.Err, kerr.UnknownTopicOrPartition) {
		return p, nil
	}
	if end.Err != nil {
		return nil, fmt.Errorf("mirror %s: end offset of %s/0 on the target: %w", name, topic, end.Err)
	}
	starts, err := kadm.NewClient(acl).ListStartOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("mirror %s: start offset of %s on the target: %w", name, topic, err)
	}
	if s, _ := starts.Lookup(topic, 0); s.Offset >= end.Offset {
		return p, nil
	}
	cl, err := kgo.NewClient(append(base, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		topic: {0: kgo.NewOffset().AtStart()}}), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords())...)
	if err != nil {
		return nil, fmt.Errorf("mirror %s: target consumer: %w", name, err)
	}
	defer cl.Close()
	// Every record below end is read, control records included, so that the last
	// one seen is end-1 whether the log ends in data or in a transaction marker.
	// read_committed holds the read at the last stable offset until every
	// transaction open below end has ended (or been aborted by a fencing owner).
	for seen := int64(-1); seen < end.Offset-1; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("mirror %s: reading %s/0 on the target: at offset %d of %d: %w", name, topic, seen+1, end.Offset, err)
		}
		var ferr error
		fs.EachError(func(t string, part int32, err error) {
			ferr = fmt.Errorf("mirror %s: reading %s/%d on the target: %w", name, t, part, err)
		})
		if ferr != nil {
			return nil, ferr
		}
		fs.EachRecord(func(r *kgo.Record) {
			seen = r.Offset
			if !r.Attrs.IsControl() {
				p.apply(r)
			}
		})
	}
	return p, nil
}

// apply folds one progress record into p; the latest value of a key wins.
func (p *Progress) apply(r *kgo.Record) {
	k := string(r.Key)
	kind, rest, _ := strings.Cut(k, "/")
	switch kind {
	case "m":
		var m Meta
		if r.Value != nil && json.Unmarshal(r.Value, &m) == nil {
			p.Meta = &m
		}
	case "s":
		tp, ok := parseTP(rest)
		if !ok {
			return
		}
		if r.Value == nil {
			delete(p.States, tp)
			return
		}
		var st PartitionState
		if json.Unmarshal(r.Value, &st) == nil {
			p.States[tp] = &st
		}
	case "r":
		// TOPIC/P/GEN/N: the topic may hold '/' only if a broker allows it; Kafka's
		// names cannot, so the last three fields are split from the right.
		parts := strings.Split(rest, "/")
		if len(parts) < 4 {
			return
		}
		n, err1 := strconv.Atoi(parts[len(parts)-1])
		gen, err2 := strconv.Atoi(parts[len(parts)-2])
		tp, ok := parseTP(strings.Join(parts[:len(parts)-2], "/"))
		if err1 != nil || err2 != nil || !ok {
			return
		}
		if p.chunks[tp] == nil {
			p.chunks[tp] = map[int]map[int][]run{}
		}
		if p.chunks[tp][gen] == nil {
			p.chunks[tp][gen] = map[int][]run{}
		}
		if r.Value == nil {
			delete(p.chunks[tp][gen], n)
			return
		}
		if runs, err := decodeRuns(r.Value); err == nil {
			if _, seen := p.chunks[tp][gen][n]; !seen {
				p.chunkKeys[tp] = append(p.chunkKeys[tp], chunkKey{gen, n})
			}
			p.chunks[tp][gen][n] = runs
		}
	case "g":
		var c Checkpoint
		if r.Value != nil && json.Unmarshal(r.Value, &c) == nil {
			tp := TopicPartition{c.Topic, c.Partition}
			if p.Checkpoint[c.Group] == nil {
				p.Checkpoint[c.Group] = map[TopicPartition]Checkpoint{}
			}
			p.Checkpoint[c.Group][tp] = c
		}
	}
}

// parseTP reads TOPIC/PARTITION.
func parseTP(s string) (TopicPartition, bool) {
	i := strings.LastIndexByte(s, '/')
	if i < 0 {
		return TopicPartition{}, false
	}
	p, err := strconv.ParseInt(s[i+1:], 10, 32)
	if err != nil {
		return TopicPartition{}, false
	}
	return TopicPartition{s[:i], int32(p)}, true
}

// Age is how long ago a state was committed.
func (s *PartitionState) Age(now time.Time) time.Duration {
	return now.Sub(time.UnixMilli(s.Updated))
}
