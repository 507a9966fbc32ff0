package log

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/runnel-io/runnel/internal/vfs"
)

// Kafka's checkpoint text format (CheckpointFile), used for the leader epoch
// checkpoint and the data-dir offset checkpoints:
//
//	0                  version
//	2                  number of entries
//	orders 0 170410    one entry per line, fields separated by one space
//	orders 1 9921
const checkpointVersion = 0

// errBadCheckpoint marks a checkpoint file that does not parse. It is ErrCorruption.
var errBadCheckpoint = fmt.Errorf("%w: malformed checkpoint file", ErrCorruption)

func encodeCheckpoint(lines []string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d\n%d\n", checkpointVersion, len(lines))
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// readCheckpoint returns the entries of a checkpoint file split into fields, each
// entry having exactly nfields fields. A missing file is no entries and no error.
func readCheckpoint(fsys vfs.FS, path string, nfields int) ([][]string, error) {
	data, err := vfs.ReadFile(fsys, path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) < 2 || lines[0] != strconv.Itoa(checkpointVersion) {
		return nil, fmt.Errorf("%w %s: bad version line", errBadCheckpoint, path)
	}
	n, err := strconv.Atoi(lines[1])
	if err != nil || n < 0 || n != len(lines)-2 || (n == 0 && len(lines) != 2) {
		return nil, fmt.Errorf("%w %s: count line %q does not match %d entries", errBadCheckpoint, path, lines[1], len(lines)-2)
	}
	out := make([][]string, 0, n)
	for _, l := range lines[2:] {
		f := strings.Split(l, " ")
		if len(f) != nfields {
			return nil, fmt.Errorf("%w %s: line %q", errBadCheckpoint, path, l)
		}
		out = append(out, f)
	}
	return out, nil
}

// WriteOffsetCheckpoint atomically writes a "topic partition offset" checkpoint
// (recovery-point-offset-checkpoint, log-start-offset-checkpoint,
// replication-offset-checkpoint), sorted by topic and partition.
func WriteOffsetCheckpoint(fsys vfs.FS, path string, offsets map[TopicPartition]int64) error {
	tps := make([]TopicPartition, 0, len(offsets))
	for tp := range offsets {
		tps = append(tps, tp)
	}
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
	lines := make([]string, len(tps))
	for i, tp := range tps {
		lines[i] = fmt.Sprintf("%s %d %d", tp.Topic, tp.Partition, offsets[tp])
	}
	return vfs.WriteFileAtomic(fsys, path, encodeCheckpoint(lines))
}

// ReadOffsetCheckpoint reads a file written by WriteOffsetCheckpoint. A missing file
// is an empty map; a malformed one is ErrCorruption.
func ReadOffsetCheckpoint(fsys vfs.FS, path string) (map[TopicPartition]int64, error) {
	entries, err := readCheckpoint(fsys, path, 3)
	if err != nil {
		return nil, err
	}
	out := make(map[TopicPartition]int64, len(entries))
	for _, e := range entries {
		p, err1 := strconv.ParseInt(e[1], 10, 32)
		off, err2 := strconv.ParseInt(e[2], 10, 64)
		if err1 != nil || err2 != nil || e[0] == "" {
			return nil, fmt.Errorf("%w %s: entry %q", errBadCheckpoint, path, strings.Join(e, " "))
		}
		out[TopicPartition{Topic: e[0], Partition: int32(p)}] = off
	}
	return out, nil
}
