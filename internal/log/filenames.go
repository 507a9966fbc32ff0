package log

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// FileType is the kind of a file in a partition directory. Every file name the log
// reads or writes is made by MakeFilename and recognised by ParseFilename; recovery
// scans a directory with ParseFilename and nothing else.
type FileType int

const (
	FileTypeUnknown FileType = iota
	// FileTypeSegment is a segment: <base>.log, raw v2 batches.
	FileTypeSegment
	// FileTypeOffsetIndex is <base>.index: relative offset -> position.
	FileTypeOffsetIndex
	// FileTypeTimeIndex is <base>.timeindex: timestamp -> relative offset.
	FileTypeTimeIndex
	// FileTypeProducerSnapshot is <base>.snapshot: producer state as of offset base.
	FileTypeProducerSnapshot
	// FileTypeDeleted is a segment file waiting for file.delete.delay.ms:
	// <base>.<ext>.deleted. MakeFilename returns the .log one; DeletedFilename marks any.
	FileTypeDeleted
	// FileTypeCleaned marks a segment or index written by the log cleaner and not
	// yet committed (<base>.<ext>.cleaned); recovery removes it. FileTypeSwap marks
	// one committed but not yet renamed to its final name (<base>.<ext>.swap);
	// recovery finishes the swap. MakeFilename returns the .log ones; MarkedFilename
	// marks any.
	FileTypeCleaned
	FileTypeSwap
	// FileTypeEpochCheckpoint is leader-epoch-checkpoint (no offset).
	FileTypeEpochCheckpoint
	// FileTypePartitionMetadata is partition.metadata (no offset; topic id, owned by replica).
	FileTypePartitionMetadata
	// FileTypeCleanerCheckpoint is cleaner-offset-checkpoint in a partition directory
	// (no offset): how far the log cleaner got, and when.
	FileTypeCleanerCheckpoint
	// FileTypeDamageCheckpoint is damaged-ranges-checkpoint in a partition directory
	// (no offset): the damaged ranges of the log's segments (damage.go).
	FileTypeDamageCheckpoint
	// FileTypeTemp is a file being written by vfs.WriteFileAtomic (<name>.tmp).
	// MakeFilename panics for it: vfs.WriteFileAtomic makes these names.
	FileTypeTemp
)

// Data directory level files (Kafka names).
const (
	RecoveryPointCheckpointFile  = "recovery-point-offset-checkpoint"
	LogStartOffsetCheckpointFile = "log-start-offset-checkpoint"
	ReplicationCheckpointFile    = "replication-offset-checkpoint"
	epochCheckpointName          = "leader-epoch-checkpoint"
	partitionMetadataName        = "partition.metadata"
	cleanerCheckpointName        = "cleaner-offset-checkpoint"
	damageCheckpointName         = "damaged-ranges-checkpoint"
	deleteDirSuffix              = "-delete"
)

var suffixes = map[FileType]string{
	FileTypeSegment:          ".log",
	FileTypeOffsetIndex:      ".index",
	FileTypeTimeIndex:        ".timeindex",
	FileTypeProducerSnapshot: ".snapshot",
	FileTypeDeleted:          ".deleted",
	FileTypeCleaned:          ".cleaned",
	FileTypeSwap:             ".swap",
}

func (t FileType) String() string {
	switch t {
	case FileTypeEpochCheckpoint:
		return epochCheckpointName
	case FileTypePartitionMetadata:
		return partitionMetadataName
	case FileTypeCleanerCheckpoint:
		return cleanerCheckpointName
	case FileTypeDamageCheckpoint:
		return damageCheckpointName
	case FileTypeTemp:
		return "temp"
	case FileTypeUnknown:
		return "unknown"
	}
	return strings.TrimPrefix(suffixes[t], ".")
}

// offsetPrefix pads the offset with zeros to 20 digits so that ls sorts files
// numerically (Kafka LogFileUtils.filenamePrefixFromOffset).
func offsetPrefix(off int64) string { return fmt.Sprintf("%020d", off) }

// MakeFilename returns the path in dir of the file of type t for base offset base.
// base is ignored for the types without an offset. For Deleted, Cleaned and Swap it
// names the marked segment (<base>.log.deleted).
func MakeFilename(dir string, t FileType, base int64) string {
	switch t {
	case FileTypeSegment, FileTypeOffsetIndex, FileTypeTimeIndex, FileTypeProducerSnapshot:
		return filepath.Join(dir, offsetPrefix(base)+suffixes[t])
	case FileTypeDeleted, FileTypeCleaned, FileTypeSwap:
		return filepath.Join(dir, offsetPrefix(base)+suffixes[FileTypeSegment]+suffixes[t])
	case FileTypeEpochCheckpoint:
		return filepath.Join(dir, epochCheckpointName)
	case FileTypePartitionMetadata:
		return filepath.Join(dir, partitionMetadataName)
	case FileTypeCleanerCheckpoint:
		return filepath.Join(dir, cleanerCheckpointName)
	case FileTypeDamageCheckpoint:
		return filepath.Join(dir, damageCheckpointName)
	}
	panic(fmt.Sprintf("log: MakeFilename of file type %d: temporary names belong to vfs.WriteFileAtomic", t))
}

// DeletedFilename marks any segment, index or snapshot path as waiting for deletion.
func DeletedFilename(path string) string { return path + suffixes[FileTypeDeleted] }

// MarkedFilename marks a segment or index path with marker (FileTypeDeleted,
// FileTypeCleaned or FileTypeSwap).
func MarkedFilename(path string, marker FileType) string {
	switch marker {
	case FileTypeDeleted, FileTypeCleaned, FileTypeSwap:
		return path + suffixes[marker]
	}
	panic(fmt.Sprintf("log: MarkedFilename with marker %v", marker))
}

// ParseMarkedFilename recognises a name made by MarkedFilename: the marker, and the
// type and base offset of the file it marks. ok is false for anything else.
func ParseMarkedFilename(name string) (marker, inner FileType, base int64, ok bool) {
	for _, m := range []FileType{FileTypeDeleted, FileTypeCleaned, FileTypeSwap} {
		if rest, found := strings.CutSuffix(name, suffixes[m]); found {
			inner, base, ok = parseOffsetName(rest)
			return m, inner, base, ok
		}
	}
	return FileTypeUnknown, FileTypeUnknown, 0, false
}

// ParseFilename recognises a file name (not a path) made by MakeFilename or
// DeletedFilename, or a temporary name. ok is false for anything else.
func ParseFilename(name string) (t FileType, base int64, ok bool) {
	switch {
	case name == epochCheckpointName:
		return FileTypeEpochCheckpoint, 0, true
	case name == partitionMetadataName:
		return FileTypePartitionMetadata, 0, true
	case name == cleanerCheckpointName:
		return FileTypeCleanerCheckpoint, 0, true
	case name == damageCheckpointName:
		return FileTypeDamageCheckpoint, 0, true
	case strings.HasSuffix(name, ".tmp") && len(name) > len(".tmp"):
		return FileTypeTemp, 0, true
	}
	for _, marker := range []FileType{FileTypeDeleted, FileTypeCleaned, FileTypeSwap} {
		if rest, found := strings.CutSuffix(name, suffixes[marker]); found {
			if _, base, ok := parseOffsetName(rest); ok {
				return marker, base, true
			}
			return FileTypeUnknown, 0, false
		}
	}
	return parseOffsetName(name)
}

func parseOffsetName(name string) (FileType, int64, bool) {
	prefix, ext, found := strings.Cut(name, ".")
	if !found || len(prefix) != 20 {
		return FileTypeUnknown, 0, false
	}
	base, err := strconv.ParseInt(prefix, 10, 64)
	if err != nil || base < 0 {
		return FileTypeUnknown, 0, false
	}
	for _, t := range []FileType{FileTypeSegment, FileTypeOffsetIndex, FileTypeTimeIndex, FileTypeProducerSnapshot} {
		if "."+ext == suffixes[t] {
			return t, base, true
		}
	}
	return FileTypeUnknown, 0, false
}

// PartitionDirName is the directory of a partition inside a data dir: <topic>-<partition>.
func PartitionDirName(tp TopicPartition) string {
	return tp.Topic + "-" + strconv.FormatInt(int64(tp.Partition), 10)
}

// ParsePartitionDirName recognises a directory made by PartitionDirName. Directories
// being deleted (see DeleteDirName) and anything else return ok false.
func ParsePartitionDirName(name string) (tp TopicPartition, ok bool) {
	if strings.HasSuffix(name, deleteDirSuffix) {
		return TopicPartition{}, false
	}
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return TopicPartition{}, false
	}
	p, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || p < 0 || strconv.FormatInt(p, 10) != name[i+1:] {
		return TopicPartition{}, false
	}
	return TopicPartition{Topic: name[:i], Partition: int32(p)}, true
}

// DeleteDirName is the name a partition directory is renamed to before it is removed:
// <topic>-<partition>.<id>-delete (Kafka's name). IsDeleteDirName recognises it.
func DeleteDirName(tp TopicPartition, id string) string {
	return PartitionDirName(tp) + "." + id + deleteDirSuffix
}

// IsDeleteDirName reports whether name was made by DeleteDirName.
func IsDeleteDirName(name string) bool {
	return strings.HasSuffix(name, deleteDirSuffix) && strings.Contains(name, ".")
}
