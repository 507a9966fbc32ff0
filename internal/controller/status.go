package controller

import "github.com/runnel-io/runnel/internal/metadata"

// Status is what the node's metrics report about the controller.
type Status struct {
	// Active: this node is the active controller (Kafka ActiveControllerCount).
	Active bool
	// RaftState is hashicorp/raft's state: Follower, Candidate, Leader or Shutdown
	// (a non-voter is a Follower).
	RaftState string
	// FencedBrokers counts registered brokers that are fenced (Kafka FencedBrokerCount).
	FencedBrokers int
	// OfflinePartitions counts partitions without a leader (Kafka OfflinePartitionsCount).
	OfflinePartitions int
}

// Status reads the latest image and Raft's state; it takes no lock.
func (c *Controller) Status() Status {
	st := Status{Active: c.IsLeader(), RaftState: "Shutdown"}
	if c.raft != nil {
		st.RaftState = c.raft.State().String()
	}
	im := c.Image()
	for _, b := range im.Brokers {
		if b.Fenced {
			st.FencedBrokers++
		}
	}
	for _, t := range im.Topics {
		for _, p := range t.Partitions {
			if p.Leader == metadata.NoLeader {
				st.OfflinePartitions++
			}
		}
	}
	return st
}
