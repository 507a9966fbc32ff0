package log

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/runnel-io/runnel/internal/vfs"
)

// partition.metadata records which topic a partition directory belongs to, by topic
// id, in Kafka's format:
//
//	version: 0
//	topic_id: <the id, URL-safe base64 without padding, as Kafka's Uuid.toString>
//
// A directory is named by topic name and partition only, so a topic deleted and
// re-created under the same name while a node was down leaves that node a directory
// whose name fits the new topic and whose records are the old one's. The replica
// layer compares the recorded id with the metadata's (internal/replica) and deletes
// the directory of an earlier incarnation. The log itself only reads and writes the
// file: it never decides on it.

// TopicID returns the topic id recorded in partition.metadata, false when none is
// (a directory written before ids were recorded) or the file is unreadable, which is
// then logged and treated as unknown: the data stays, and SetTopicID writes the file
// again.
func (l *Log) TopicID() ([16]byte, bool) {
	name := MakeFilename(l.dir, FileTypePartitionMetadata, 0)
	b, err := vfs.ReadFile(l.fs, name)
	if errors.Is(err, fs.ErrNotExist) {
		return [16]byte{}, false
	}
	var id [16]byte
	if err == nil {
		id, err = parsePartitionMetadata(b)
	}
	if err != nil {
		l.logger.Warn("unreadable partition.metadata: the topic id of this partition directory is taken as unknown",
			"dir", l.dir, "err", err)
		return [16]byte{}, false
	}
	return id, true
}

// SetTopicID records id in partition.metadata, unless it is recorded already. The
// file is written whole and renamed into place, without an fsync: one per partition
// would slow the creation of a topic with many partitions, and a file lost or torn by
// a crash reads as unknown, which the next caught-up image writes again.
func (l *Log) SetTopicID(id [16]byte) error {
	if cur, ok := l.TopicID(); ok && cur == id {
		return nil
	}
	name := MakeFilename(l.dir, FileTypePartitionMetadata, 0)
	data := fmt.Sprintf("version: 0\ntopic_id: %s\n", base64.RawURLEncoding.EncodeToString(id[:]))
	if err := writeRenamed(l.fs, name, []byte(data)); err != nil {
		return fmt.Errorf("%w: write %s: %w", ErrKafkaStorage, name, err)
	}
	return nil
}

// writeRenamed writes data to name.tmp and renames it to name (no fsync).
func writeRenamed(fsys vfs.FS, name string, data []byte) error {
	tmp := name + ".tmp"
	f, err := fsys.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return fsys.Rename(tmp, name)
}

// parsePartitionMetadata reads Kafka's partition.metadata (version 0).
func parsePartitionMetadata(b []byte) ([16]byte, error) {
	var id [16]byte
	fields := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			return id, fmt.Errorf("line %q is not key: value", line)
		}
		fields[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	if v := fields["version"]; v != "0" {
		return id, fmt.Errorf("version %q, want 0", v)
	}
	raw, err := base64.RawURLEncoding.DecodeString(fields["topic_id"])
	if err != nil || len(raw) != len(id) {
		return id, fmt.Errorf("topic_id %q is not a 16-byte id in URL-safe base64", fields["topic_id"])
	}
	copy(id[:], raw)
	return id, nil
}
