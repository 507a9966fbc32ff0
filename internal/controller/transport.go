package controller

import (
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/runnel-io/runnel/internal/liveness"
)

// patientTransport is the Raft transport with one change: an AppendEntries that
// carries the log (not a heartbeat) to a peer whose address refuses connections waits
// for the peer to accept them again, instead of failing at once.
//
// Why: hashicorp/raft backs a failing follower off before every retry, doubling from
// 10 ms up to 10.24 s, one doubling per failed attempt, and a dead peer fails each
// attempt at once (the kernel refuses the connection). A voter killed for 15 s or more
// was therefore sent nothing for up to 10 s after its restart, and is not ready
// (caught up with the metadata log) until then. Waiting here turns the whole outage
// into one attempt: the first entries go out within refusedRetry of the restart.
//
// Heartbeats are never held: their failures are how the active controller learns at
// once that a node's process is gone (watchFailedHeartbeats fences it), and they run
// on their own goroutine per peer, so holding them would delay only that. A peer that
// does not refuse but times out (paused, cut off) fails as before. The wait ends when
// this node stops leading, its term moves on (the request is stale), the peer's
// address in the Raft configuration is no longer target (a voter that came back on a
// new address, UpdateRaftVoter: Raft's replication picks the new address up only
// once this attempt returns) or the controller closes (Raft's Shutdown waits for its
// replication goroutines).
//
// It also keeps a node whose metadata disk is full out of the quorum (raftstore.go).
type patientTransport struct {
	*raft.NetworkTransport
	c *Controller

	consumerOnce sync.Once
	consumer     chan raft.RPC // Consumer's filtered requests
}

// refusedRetry is how often a held AppendEntries tries a refusing peer again.
const refusedRetry = 50 * time.Millisecond

func (p *patientTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	for {
		err := p.NetworkTransport.AppendEntries(id, target, args, resp)
		if err == nil || isHeartbeat(args) || !liveness.Refused(err) {
			return err
		}
		select {
		case <-p.c.done:
			return err
		case <-time.After(refusedRetry):
		}
		if !p.stillLeading(args.Term) || !p.stillAt(id, target) {
			return err
		}
	}
}

// stillLeading reports whether this node's Raft is the leader in term.
func (p *patientTransport) stillLeading(term uint64) bool {
	select {
	case <-p.c.raftSet:
	default:
		return false
	}
	return p.c.raft.State() == raft.Leader && p.c.raft.CurrentTerm() == term
}

// stillAt reports whether server id is at target in the newest Raft configuration
// (committed or not: Raft replicates to the newest one). GetConfiguration reads it
// without a round through Raft's main loop.
func (p *patientTransport) stillAt(id raft.ServerID, target raft.ServerAddress) bool {
	f := p.c.raft.GetConfiguration()
	if f.Error() != nil {
		return false
	}
	for _, s := range f.Configuration().Servers {
		if s.ID == id {
			return s.Address == target
		}
	}
	return false
}

// isHeartbeat reports whether args is one of Raft's heartbeats, by the rule of
// hashicorp/raft's NetworkTransport (a term and a leader, nothing else).
func isHeartbeat(args *raft.AppendEntriesRequest) bool {
	return args.Term != 0 && args.PrevLogEntry == 0 && args.PrevLogTerm == 0 &&
		len(args.Entries) == 0 && args.LeaderCommitIndex == 0
}
