package cli

// The metadata quorum's part of `runnel cluster decommission`: a node that is a voter
// leaves the voters before it is stopped, with a caught-up broker promoted in its
// place first when the quorum would otherwise fall below three voters (three is the
// smallest quorum that survives the loss of a voter), and the command then waits for
// the node's process to stop and unregisters it, so that one command takes a node out.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// minSafeVoters is the quorum size below which decommission replaces a voter it
// removes: with three voters the quorum survives the loss of any one.
const minSafeVoters = 3

// voterPlan is what leaving the voters takes for the node: nothing (not a voter), a
// removal, or a promotion of replacement first.
type voterPlan struct {
	voter       bool
	voters      []int32 // the voters now
	replacement int32   // -1: none needed
}

// planVoters decides how the node leaves the voters, or says why it cannot.
func (d *decommission) planVoters(ctx context.Context, v *clusterView) (voterPlan, error) {
	p := voterPlan{replacement: -1}
	st, err := describeQuorum(ctx, d.cl)
	if err != nil {
		return p, err
	}
	for _, m := range st.Voters {
		p.voters = append(p.voters, m.ID)
	}
	p.voter = slices.Contains(p.voters, d.node)
	if !p.voter || len(p.voters)-1 >= minSafeVoters {
		return p, nil
	}
	// The observer most caught up among the live brokers takes the node's place.
	best := int64(-1)
	for _, o := range st.Observers {
		if _, live := v.live[o.ID]; !live || o.ID == d.node || o.Lag < 0 {
			continue
		}
		if p.replacement < 0 || o.Lag < best {
			p.replacement, best = o.ID, o.Lag
		}
	}
	if p.replacement < 0 {
		return p, fmt.Errorf("refusing to take node %d out of the cluster: node %d is a metadata voter (voters %s), and without it the quorum would have %d, fewer than %d, while no other live node can take its place (every live node is a voter already). Start a new node with the cluster's --controllers first; decommission then promotes it in node %d's place",
			d.node, d.node, joinInt32s(p.voters), len(p.voters)-1, minSafeVoters, d.node)
	}
	return p, nil
}

// leaveVoters carries out p: the replacement joins the voters, then the node leaves.
func (d *decommission) leaveVoters(ctx context.Context, p voterPlan) error {
	if !p.voter {
		return nil
	}
	if p.replacement >= 0 {
		req := kmsg.NewPtrAddRaftVoterRequest()
		req.VoterID, req.TimeoutMillis = p.replacement, 30_000
		rctx, cancel := context.WithTimeout(ctx, 40*time.Second)
		resp, err := req.RequestWith(rctx, d.cl)
		cancel()
		if err == nil {
			err = answerErr(resp.ErrorCode, resp.ErrorMessage)
		}
		if err != nil {
			return fmt.Errorf("promote node %d to a metadata voter in node %d's place: %w", p.replacement, d.node, err)
		}
		fmt.Fprintf(d.out, "Node %d joined the metadata voters in node %d's place.\n", p.replacement, d.node)
	}
	req := kmsg.NewPtrRemoveRaftVoterRequest()
	req.VoterID = d.node
	resp, err := req.RequestWith(ctx, d.cl)
	if err == nil {
		err = answerErr(resp.ErrorCode, resp.ErrorMessage)
	}
	if err != nil {
		return fmt.Errorf("remove node %d from the metadata voters: %w", d.node, err)
	}
	st, err := describeQuorum(ctx, d.cl)
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "Node %d left the metadata voters; voters now: %s.\n", d.node, memberList(st.Voters))
	return nil
}

// awaitStopAndUnregister tells the operator to stop the node and unregisters it once
// its process is gone, showing that it still waits every minute. The controller
// refuses (INVALID_REQUEST) while the node is registered as alive: its session has to
// lapse (broker.session.timeout.ms) unless the controller sees the process is gone.
// A retriable error is asked again too, as Kafka's admin client retries one: the
// request may reach the very node being stopped, which cuts it short
// (REQUEST_TIMED_OUT) as it shuts down.
func (d *decommission) awaitStopAndUnregister(ctx context.Context) error {
	fmt.Fprintf(d.out, "Node %d serves nothing any more: stop its process now. Waiting for it to stop, then unregistering it (Ctrl-C to leave this; 'runnel cluster decommission %d' finishes later).\n",
		d.node, d.node)
	start := time.Now()
	lastNote := start
	for {
		req := kmsg.NewPtrUnregisterBrokerRequest()
		req.BrokerID = d.node
		resp, err := req.RequestWith(ctx, d.cl)
		if err == nil {
			err = answerErr(resp.ErrorCode, resp.ErrorMessage)
		}
		switch {
		case err == nil:
			fmt.Fprintf(d.out, "Unregistered node %d: it is no longer part of the cluster.\n", d.node)
			return nil
		case !errors.Is(err, kerr.InvalidRequest) && !kerr.IsRetriable(err):
			return fmt.Errorf("unregister node %d: %w", d.node, err)
		}
		if time.Since(lastNote) >= time.Minute {
			lastNote = time.Now()
			fmt.Fprintf(d.out, "Still waiting for node %d to stop (%s); the controller says: %v\n", d.node, time.Since(start).Round(time.Second), err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d.interval):
		}
	}
}

// quorumKeys are the APIs the voter steps need: DescribeQuorum, AddRaftVoter and
// RemoveRaftVoter (KIP-853). A cluster that lacks one (another Kafka implementation
// with a static quorum) gets no voter step.
var quorumKeys = []int16{55, 80, 81}

// finish takes the drained node out: out of the voters, then, once its process is
// stopped (waited for unless --no-wait), out of the cluster.
func (d *decommission) finish(ctx context.Context, v *clusterView, wait bool) error {
	quorum := true
	for _, key := range quorumKeys {
		ok, err := brokersServe(ctx, d.adm, key)
		if err != nil {
			return err
		}
		quorum = quorum && ok
	}
	if quorum {
		p, err := d.planVoters(ctx, v)
		if err != nil {
			return err
		}
		if err := d.leaveVoters(ctx, p); err != nil {
			return err
		}
	}
	_, live := v.live[d.node]
	if served, err := brokersServe(ctx, d.adm, unregisterBrokerKey); err != nil {
		return err
	} else if wait && d.waitStop && live && served {
		return d.awaitStopAndUnregister(ctx)
	}
	return d.unregister(ctx, v)
}

// checkVoters refuses, before anything moves, the drain of a live node that could not
// leave the voters at the end. A dead node is drained all the same (its partitions
// get their replication factor back) and the voter step then says why it cannot go.
func (d *decommission) checkVoters(ctx context.Context, v *clusterView) error {
	if _, live := v.live[d.node]; !live {
		return nil
	}
	for _, key := range quorumKeys {
		if ok, err := brokersServe(ctx, d.adm, key); err != nil || !ok {
			return err
		}
	}
	_, err := d.planVoters(ctx, v)
	return err
}
