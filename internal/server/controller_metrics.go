package server

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/runnel-io/runnel/internal/controller"
)

// raftStates are the values of runnel_controller_raft_state's state label.
var raftStates = []string{"Follower", "Candidate", "Leader", "Shutdown"}

// controllerCollector exports the controller's state at scrape time (Kafka's
// ActiveControllerCount, FencedBrokerCount and OfflinePartitionsCount).
type controllerCollector struct {
	ctrl                               *controller.Controller
	active, fenced, offline, raftState *prometheus.Desc
	activeOffline                      *prometheus.Desc
}

func newControllerCollector(c *controller.Controller) *controllerCollector {
	return &controllerCollector{
		ctrl:    c,
		active:  prometheus.NewDesc("runnel_controller_active", "1 on the active controller (the metadata quorum's Raft leader), else 0.", nil, nil),
		fenced:  prometheus.NewDesc("runnel_controller_fenced_brokers", "Registered brokers that are fenced, in this node's metadata.", nil, nil),
		offline: prometheus.NewDesc("runnel_controller_offline_partitions", "Partitions without a leader, in this node's metadata.", nil, nil),
		activeOffline: prometheus.NewDesc("runnel_offline_partitions",
			"Partitions without a leader, on the active controller (0 on every other node, so that a sum over the cluster counts each once), as Kafka's OfflinePartitionsCount.", nil, nil),
		raftState: prometheus.NewDesc("runnel_controller_raft_state", "1 for this node's Raft state (a non-voter is a Follower).",
			[]string{"state"}, nil),
	}
}

func (c *controllerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.active
	ch <- c.fenced
	ch <- c.offline
	ch <- c.activeOffline
	ch <- c.raftState
}

func (c *controllerCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.ctrl.Status()
	active := 0.0
	if st.Active {
		active = 1
	}
	ch <- prometheus.MustNewConstMetric(c.active, prometheus.GaugeValue, active)
	ch <- prometheus.MustNewConstMetric(c.fenced, prometheus.GaugeValue, float64(st.FencedBrokers))
	ch <- prometheus.MustNewConstMetric(c.offline, prometheus.GaugeValue, float64(st.OfflinePartitions))
	ch <- prometheus.MustNewConstMetric(c.activeOffline, prometheus.GaugeValue, active*float64(st.OfflinePartitions))
	for _, s := range raftStates {
		v := 0.0
		if s == st.RaftState {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(c.raftState, prometheus.GaugeValue, v, s)
	}
}
