package share

import (
	"context"
	"fmt"
	"time"
)

// The share-group offset admin requests (DescribeShareGroupOffsets,
// AlterShareGroupOffsets, DeleteShareGroupOffsets, DeleteGroups) work on the Store
// directly, from the group's coordinator, while the group has no members. A leader
// holding an earlier state of a partition in memory does not write over them: Alter
// and DeleteOffsets start a new state epoch, which wins on replay over every write of
// the earlier one, and a leader checks the Store's state epoch before the next share
// session of the group uses its loaded state (Manager.OpenSession).

// Offsets returns the durable state of group's share partitions: the newest snapshot
// of each, deleted ones left out.
func Offsets(ctx context.Context, store Store, group string) (map[Key]Snapshot, error) {
	all, err := store.ReadGroup(ctx, group)
	if err != nil {
		return nil, fmt.Errorf("%w: reading the state of share group %s: %v", ErrStore, group, err)
	}
	for k, s := range all {
		if s.Deleted {
			delete(all, k)
		}
	}
	return all, nil
}

// AlterOffsets sets the start offset of group's share partitions to starts, with
// nothing in flight, each in a new state epoch. name names the topics in errors (nil:
// by id).
func AlterOffsets(ctx context.Context, store Store, group string, starts map[Key]int64, now time.Time, name TopicName) error {
	cur, err := store.ReadGroup(ctx, group)
	if err != nil {
		return fmt.Errorf("%w: reading the state of share group %s: %v", ErrStore, group, err)
	}
	for k, start := range starts {
		s := Snapshot{StateEpoch: cur[k].StateEpoch + 1, LeaderEpoch: -1, Start: start, WrittenMs: now.UnixMilli()}
		if err := store.Write(ctx, k, s); err != nil {
			return fmt.Errorf("%w: setting share group %s on %s to offset %d: %v", ErrStore, group, k.topicPartition(name), start, err)
		}
	}
	return nil
}

// DeleteOffsets deletes the state of keys (DeleteShareGroupOffsets): each is marked
// deleted in a new state epoch, so that its next use starts again from
// share.auto.offset.reset. name names the topics in errors (nil: by id).
func DeleteOffsets(ctx context.Context, store Store, group string, keys []Key, now time.Time, name TopicName) error {
	cur, err := store.ReadGroup(ctx, group)
	if err != nil {
		return fmt.Errorf("%w: reading the state of share group %s: %v", ErrStore, group, err)
	}
	for _, k := range keys {
		s := Snapshot{StateEpoch: cur[k].StateEpoch + 1, LeaderEpoch: -1, Deleted: true, WrittenMs: now.UnixMilli()}
		if err := store.Write(ctx, k, s); err != nil {
			return fmt.Errorf("%w: deleting the state of share group %s on %s: %v", ErrStore, group, k.topicPartition(name), err)
		}
	}
	return nil
}

// DeleteGroupState tombstones every share partition of group (DeleteGroups); it
// reports whether there was any.
func DeleteGroupState(ctx context.Context, store Store, group string) (bool, error) {
	cur, err := store.ReadGroup(ctx, group)
	if err != nil {
		return false, fmt.Errorf("%w: reading the state of share group %s: %v", ErrStore, group, err)
	}
	if len(cur) == 0 {
		return false, nil
	}
	keys := make([]Key, 0, len(cur))
	for k := range cur {
		keys = append(keys, k)
	}
	if err := store.Delete(ctx, keys); err != nil {
		return true, fmt.Errorf("%w: deleting the state of share group %s: %v", ErrStore, group, err)
	}
	return true, nil
}
