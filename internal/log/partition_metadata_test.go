package log

import (
	"os"
	"path/filepath"
	"testing"
)

// TestTopicIDRoundTrip: a topic id is written in Kafka's partition.metadata format,
// read back (also from a file Kafka wrote), survives reopening, and an unreadable
// file reads as unknown without touching the log's data.
func TestTopicIDRoundTrip(t *testing.T) {
	env := osEnv(t)
	l := openLog(t, env, DefaultConfig())
	leo := appendRecords(t, l, 10, 5, 16)
	if _, ok := l.TopicID(); ok {
		t.Fatal("a new log has a topic id recorded")
	}
	id := [16]byte{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	if err := l.SetTopicID(id); err != nil {
		t.Fatal(err)
	}
	if got, ok := l.TopicID(); !ok || got != id {
		t.Fatalf("TopicID after SetTopicID: %v %v", got, ok)
	}
	b, err := os.ReadFile(filepath.Join(l.Dir(), "partition.metadata"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "version: 0\ntopic_id: 3q2-7wECAwQFBgcICQoLDA\n"; string(b) != want {
		t.Errorf("partition.metadata holds %q, want Kafka's format %q", b, want)
	}
	// As Kafka writes it (Uuid.toString of a random id).
	if err := os.WriteFile(filepath.Join(l.Dir(), "partition.metadata"), []byte("version: 0\ntopic_id: N9TVZzqhQOytxKpuqQ3XlA\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok := l.TopicID(); !ok {
		t.Error("a partition.metadata as Kafka writes it is not read")
	}
	for _, bad := range []string{"", "version: 1\ntopic_id: N9TVZzqhQOytxKpuqQ3XlA\n", "version: 0\ntopic_id: short\n", "garbage"} {
		if err := os.WriteFile(filepath.Join(l.Dir(), "partition.metadata"), []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if got, ok := l.TopicID(); ok {
			t.Errorf("partition.metadata %q read as topic id %v, want unknown", bad, got)
		}
	}
	if err := l.SetTopicID(id); err != nil {
		t.Fatal(err)
	}
	if got, ok := l.TopicID(); !ok || got != id {
		t.Errorf("TopicID after rewriting an unreadable file: %v %v", got, ok)
	}
	l = reopen(t, env, l, DefaultConfig())
	if got, ok := l.TopicID(); !ok || got != id {
		t.Errorf("TopicID after reopening: %v %v", got, ok)
	}
	if got := l.LogEndOffset(); got != leo {
		t.Errorf("log end %d after the topic id's writes and a reopen, want %d", got, leo)
	}
}
