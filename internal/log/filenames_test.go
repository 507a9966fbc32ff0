package log

import (
	"path/filepath"
	"testing"
)

func TestFilenameRoundTrip(t *testing.T) {
	types := []FileType{FileTypeSegment, FileTypeOffsetIndex, FileTypeTimeIndex, FileTypeProducerSnapshot,
		FileTypeDeleted, FileTypeCleaned, FileTypeSwap, FileTypeEpochCheckpoint, FileTypePartitionMetadata,
		FileTypeCleanerCheckpoint, FileTypeDamageCheckpoint}
	for _, ft := range types {
		for _, base := range []int64{0, 1, 170410, 1<<63 - 1} {
			path := MakeFilename("/data/orders-0", ft, base)
			if filepath.Dir(path) != "/data/orders-0" {
				t.Fatalf("%v: %s not in the directory", ft, path)
			}
			gotType, gotBase, ok := ParseFilename(filepath.Base(path))
			if ft == FileTypeEpochCheckpoint || ft == FileTypePartitionMetadata || ft == FileTypeCleanerCheckpoint || ft == FileTypeDamageCheckpoint {
				base = 0
			}
			if !ok || gotType != ft || gotBase != base {
				t.Fatalf("ParseFilename(%q) = %v %d %v, want %v %d", filepath.Base(path), gotType, gotBase, ok, ft, base)
			}
		}
	}
	if got := filepath.Base(MakeFilename("d", FileTypeSegment, 170410)); got != "00000000000000170410.log" {
		t.Fatalf("segment name %q", got)
	}
}

func TestMarkedFilenameRoundTrip(t *testing.T) {
	for _, marker := range []FileType{FileTypeDeleted, FileTypeCleaned, FileTypeSwap} {
		for _, inner := range []FileType{FileTypeSegment, FileTypeOffsetIndex, FileTypeTimeIndex} {
			name := filepath.Base(MarkedFilename(MakeFilename("/d", inner, 42), marker))
			m, in, base, ok := ParseMarkedFilename(name)
			if !ok || m != marker || in != inner || base != 42 {
				t.Fatalf("ParseMarkedFilename(%q) = %v %v %d %v", name, m, in, base, ok)
			}
			if ft, b, ok := ParseFilename(name); !ok || ft != marker || b != 42 {
				t.Fatalf("ParseFilename(%q) = %v %d %v", name, ft, b, ok)
			}
		}
	}
	for _, name := range []string{"00000000000000000042.log", "x.swap", "00000000000000000042.log.swap.x"} {
		if _, _, _, ok := ParseMarkedFilename(name); ok {
			t.Fatalf("ParseMarkedFilename(%q) accepted it", name)
		}
	}
}

func TestParseFilenameRejects(t *testing.T) {
	for _, name := range []string{"", "0.log", "0000000000000000000a.log", "00000000000000000000.logx",
		"00000000000000000000", "-0000000000000000001.log", "foo.deleted", "meta.properties", "00000000000000000000.log.deleted.x"} {
		if ft, _, ok := ParseFilename(name); ok {
			t.Fatalf("ParseFilename(%q) accepted it as %v", name, ft)
		}
	}
	for name, want := range map[string]FileType{
		"00000000000000000042.index.deleted": FileTypeDeleted,
		"leader-epoch-checkpoint.tmp":        FileTypeTemp,
		"00000000000000000042.snapshot.tmp":  FileTypeTemp,
	} {
		if ft, _, ok := ParseFilename(name); !ok || ft != want {
			t.Fatalf("ParseFilename(%q) = %v %v, want %v", name, ft, ok, want)
		}
	}
}

func TestPartitionDirNames(t *testing.T) {
	for _, tp := range []TopicPartition{{Topic: "orders"}, {Topic: "a-b-c", Partition: 12}, {Topic: "__consumer_offsets", Partition: 49}, {Topic: "x.y", Partition: 3}} {
		got, ok := ParsePartitionDirName(PartitionDirName(tp))
		if !ok || got != tp {
			t.Fatalf("round trip of %v gave %v %v", tp, got, ok)
		}
		del := DeleteDirName(tp, "abc123")
		if _, ok := ParsePartitionDirName(del); ok || !IsDeleteDirName(del) {
			t.Fatalf("%q parsed as a live partition", del)
		}
	}
	for _, name := range []string{"__raft", "meta.properties", "orders-", "orders-x", "orders-01", "-1", RecoveryPointCheckpointFile} {
		if tp, ok := ParsePartitionDirName(name); ok {
			t.Fatalf("ParsePartitionDirName(%q) = %v", name, tp)
		}
	}
}
