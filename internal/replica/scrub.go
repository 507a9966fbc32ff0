package replica

import (
	"context"
	"slices"

	"github.com/runnel-io/runnel/internal/log"
)

// Scrub runs one scrub pass now (log.Manager.Scrub: every CRC and index entry of the
// inactive segments), unpaced, over this node's logs of the given topics (every log
// when topics is empty): `runnel cluster scrub`. Damage it finds is recorded in the
// logs, so that the next heartbeat reports it and the repair of repair.go follows.
func (m *Manager) Scrub(ctx context.Context, topics []string) (log.ScrubResult, error) {
	var keep func(log.TopicPartition) bool
	if len(topics) > 0 {
		keep = func(tp log.TopicPartition) bool { return slices.Contains(topics, tp.Topic) }
	}
	return m.opts.Logs.Scrub(ctx, keep, nil)
}

// IntegrityStats returns the damage found and repaired in this node's logs since it
// started (log.Manager.IntegrityStats).
func (m *Manager) IntegrityStats() log.IntegrityStats { return m.opts.Logs.IntegrityStats() }
