package group

import "fmt"

// Group ids are exclusive across kinds: an id that is a share group's (internal/share,
// whose membership lives beside this coordinator on the same node) never becomes a
// classic or consumer group, and share groups ask Kind before taking an id.

// ErrShareGroupID: a request that would create a classic or consumer group names a
// share group (GROUP_ID_NOT_FOUND; JoinGroup answers INCONSISTENT_GROUP_PROTOCOL, as
// Kafka).
var ErrShareGroupID = fmt.Errorf("%w: the group is a share group", ErrGroupIDNotFound)

// SetShareGroups installs the share groups' membership test, consulted before a group
// is created.
func (c *Coordinator) SetShareGroups(isShare func(groupID string) bool) {
	c.isShareGroup.Store(&isShare)
}

func (c *Coordinator) checkNotShare(groupID string) error {
	if f := c.isShareGroup.Load(); f != nil && (*f)(groupID) {
		return fmt.Errorf("%w: Group %s is a share group.", ErrShareGroupID, groupID)
	}
	return nil
}

// Kind is the type (TypeClassic, TypeConsumer) of the group this node coordinates
// under groupID, "" when there is none (or this node does not coordinate it).
func (c *Coordinator) Kind(groupID string) string {
	sh, err := c.shardFor(groupID)
	if err != nil {
		return ""
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	g := sh.groups[groupID]
	if g == nil {
		return ""
	}
	if l := g.listing.Load(); l != nil && l.State != Dead.String() {
		return l.Type
	}
	return ""
}
