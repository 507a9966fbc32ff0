package share

import (
	"errors"
	"sort"
)

// Share session errors (Kafka's INVALID_SHARE_SESSION_EPOCH, SHARE_SESSION_NOT_FOUND).
var (
	ErrInvalidSessionEpoch = errors.New("invalid share session epoch")
	ErrSessionNotFound     = errors.New("share session not found")
)

// SessionKey names a member's share session on this node.
type SessionKey struct{ Group, Member string }

// PartitionID is a topic partition by topic id.
type PartitionID struct {
	TopicID   [16]byte
	Partition int32
}

// Session is one member's share session with this node (KIP-932, as fetch sessions):
// the partitions it fetches and the epoch its next request must carry.
type Session struct {
	next  int32 // the epoch the next request must carry; 1 after the opening request
	parts map[PartitionID]struct{}
}

// Partitions returns the session's partitions, sorted.
func (s *Session) Partitions() []PartitionID {
	out := make([]PartitionID, 0, len(s.parts))
	for p := range s.parts {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].TopicID != out[j].TopicID {
			return string(out[i].TopicID[:]) < string(out[j].TopicID[:])
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

// OpenSession starts (or restarts) k's session with parts (a request of epoch 0).
func (m *Manager) OpenSession(k SessionKey, parts []PartitionID) *Session {
	s := &Session{next: 1, parts: map[PartitionID]struct{}{}}
	for _, p := range parts {
		s.parts[p] = struct{}{}
	}
	m.mu.Lock()
	m.sessions[k] = s
	loaded := m.loadedLocked(k.Group, parts)
	m.mu.Unlock()
	// A member (re)joining may follow an admin request that changed the group's state
	// in the Store while the group was empty: check before using the loaded state.
	for _, sp := range loaded {
		sp.verify.Store(true)
	}
	return s
}

// loadedLocked returns group's loaded share partitions among parts. m.mu must be held.
func (m *Manager) loadedLocked(group string, parts []PartitionID) []*sharePartition {
	var loaded []*sharePartition
	for _, p := range parts {
		if sp := m.parts[Key{Group: group, TopicID: p.TopicID, Partition: p.Partition}]; sp != nil {
			loaded = append(loaded, sp)
		}
	}
	return loaded
}

// UpdateSession checks a request's epoch against k's session, adds and removes
// partitions, and moves the session to its next epoch.
func (m *Manager) UpdateSession(k SessionKey, epoch int32, add, forget []PartitionID) (*Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sessions[k]
	if s == nil {
		return nil, ErrSessionNotFound
	}
	if epoch != s.next {
		return nil, ErrInvalidSessionEpoch
	}
	for _, p := range add {
		if _, ok := s.parts[p]; !ok {
			// New to the session: checked as at an opening (OpenSession).
			for _, sp := range m.loadedLocked(k.Group, []PartitionID{p}) {
				sp.verify.Store(true)
			}
		}
		s.parts[p] = struct{}{}
	}
	for _, p := range forget {
		delete(s.parts, p)
	}
	s.next++
	if s.next < 1 {
		s.next = 1 // Kafka wraps to 1
	}
	return s, nil
}

// CloseSession ends k's session (epoch -1); false when there was none.
func (m *Manager) CloseSession(k SessionKey) (*Session, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sessions[k]
	delete(m.sessions, k)
	return s, s != nil
}
