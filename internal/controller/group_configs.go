package controller

import (
	"context"
	"fmt"

	"github.com/runnel-io/runnel/internal/config"
	"github.com/runnel-io/runnel/internal/metadata"
)

// AlterGroupConfigs changes group's configs (Kafka's GROUP config resource:
// consumer.session.timeout.ms, share.*, ...; config/group.go). They are kept among the
// cluster-wide configs under config.GroupScopedKey, the way per-broker configs are,
// so they survive restarts and every node describes them. A nil value deletes the
// key; with replaceAll (legacy AlterConfigs) the non-nil entries become the group's
// whole set. The group's resulting set is checked as Kafka's GroupConfig.validate
// does (ErrInvalidConfig). The group need not exist, as in Kafka.
func (c *Controller) AlterGroupConfigs(ctx context.Context, group string, set map[string]*string, replaceAll, validateOnly bool) error {
	if group == "" {
		return fmt.Errorf("%w: the group name must not be empty", ErrInvalidRequest)
	}
	return c.withLeader(ctx, func(im *metadata.Image) error {
		current := config.GroupOwnConfigs(im.Configs, group)
		if err := config.ValidateGroupConfigs(config.MergeConfigs(current, set, replaceAll)); err != nil {
			return fmt.Errorf("%w: %v", ErrInvalidConfig, err)
		}
		scoped := make(map[string]string, len(current))
		for k, v := range current {
			scoped[config.GroupScopedKey(group, k)] = v
		}
		scopedSet := make(map[string]*string, len(set))
		for k, v := range set {
			scopedSet[config.GroupScopedKey(group, k)] = v
		}
		recs := configRecords("", scoped, scopedSet, replaceAll)
		if validateOnly || len(recs) == 0 {
			return nil
		}
		_, err := c.proposeLocked(ctx, recs)
		return err
	})
}
