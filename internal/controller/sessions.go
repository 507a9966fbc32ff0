package controller

import (
	"time"

	"github.com/runnel-io/runnel/internal/metadata"
)

// brokerSession is the active controller's view of one broker's heartbeats (Kafka's
// BrokerHeartbeatManager state). It lives only in the leader's memory: a new leader
// starts with none and grants every broker a full session timeout from the moment it
// became leader (the grace period), because it cannot know when they last heartbeated.
type brokerSession struct {
	// epoch is the registration epoch the session belongs to.
	epoch int64
	// lastContact is the time of the last valid heartbeat (or registration, or the
	// start of the grace period).
	lastContact time.Time
	// caughtUpAt is when a heartbeat last reported every record this controller had
	// (or the start of the grace period): a broker stays "caught up" in the answers,
	// and so keeps its lease, for half a session timeout after it, so that a record
	// committed just before a heartbeat, or a new controller's first records, do not
	// take the lease of a broker that is a moment behind.
	caughtUpAt time.Time
	// shuttingDown is set by a heartbeat with WantShutdown: the broker may no longer
	// lead or join an ISR.
	shuttingDown bool
}

// sessions are the broker sessions of one leadership term. The Controller replaces
// them whenever it becomes fresh in a new term; all access is under proposeMu.
type sessions struct {
	// term is the Raft term these sessions were built in.
	term uint64
	// since is when this node became leader in term: the start of every broker's grace.
	since time.Time
	m     map[metadata.NodeID]*brokerSession
	// deafLogged: the controller's deafness in this term (see deaf) was logged. A lone
	// voter stays deaf and checks again every tick; one warning per term is enough.
	deafLogged bool
}

func newSessions(term uint64, now time.Time) *sessions {
	return &sessions{term: term, since: now, m: map[metadata.NodeID]*brokerSession{}}
}

// get returns id's session, creating one that started at the grace period.
func (s *sessions) get(id metadata.NodeID, epoch int64) *brokerSession {
	bs := s.m[id]
	if bs == nil || bs.epoch != epoch {
		bs = &brokerSession{epoch: epoch, lastContact: s.since, caughtUpAt: s.since}
		s.m[id] = bs
	}
	return bs
}

// register starts a fresh session for a new registration.
func (s *sessions) register(id metadata.NodeID, epoch int64, now time.Time) {
	s.m[id] = &brokerSession{epoch: epoch, lastContact: now}
}

// shuttingDown reports whether id is in controlled shutdown.
func (s *sessions) shuttingDown(id metadata.NodeID) bool {
	bs := s.m[id]
	return bs != nil && bs.shuttingDown
}

// expiredBrokers returns, in id order, the unfenced brokers of im whose session has
// had no contact for longer than timeout at now. Brokers without a session get one
// that started at s.since. Pure apart from creating those sessions.
func expiredBrokers(im *metadata.Image, s *sessions, now time.Time, timeout time.Duration) []metadata.NodeID {
	var out []metadata.NodeID
	for _, id := range im.BrokerIDs() {
		b := im.Brokers[id]
		if b.Fenced {
			continue
		}
		if now.Sub(s.get(id, b.Epoch).lastContact) > timeout {
			out = append(out, id)
		}
	}
	return out
}

// deaf reports whether this controller, node self, hears no broker at all: self is a
// registered, unfenced broker (a combined node, whose own broker heartbeats to it and
// cannot be dead while it runs) and no unfenced broker, self included, has had
// contact for more than half of timeout at now. Then the fault is the controller's
// own (its Kafka listener closed or stalled while Raft still runs), and fencing the
// brokers as their sessions expire would fence every one of them and leave every
// partition it touched offline, with an ISR of one broker that is still alive. Pure
// apart from creating sessions, as expiredBrokers.
func deaf(im *metadata.Image, s *sessions, now time.Time, timeout time.Duration, self metadata.NodeID) bool {
	if b, ok := im.Brokers[self]; !ok || b.Fenced {
		return false
	}
	for _, id := range im.BrokerIDs() {
		b := im.Brokers[id]
		if b.Fenced {
			continue
		}
		if now.Sub(s.get(id, b.Epoch).lastContact) <= timeout/2 {
			return false
		}
	}
	return true
}
