package server

// Cluster links (docs/cluster-links.md): the node's link manager (the fetching of the mirror
// partitions it leads) and the link operations' Admin (internal/link).

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/runnel-io/runnel/internal/config"
	"github.com/runnel-io/runnel/internal/link"
	"github.com/runnel-io/runnel/internal/metadata"
)

// linkWiring is the node's part of the cluster links.
type linkWiring struct {
	m     *link.Manager
	admin *link.Admin
}

// newLinks builds the links' manager and Admin and registers their metrics. Call it
// once the replicas and the controlplane Admin exist, before the first image.
func (n *Node) newLinks(reg *prometheus.Registry) *linkWiring {
	node := metadata.NodeID(n.cfg.NodeID)
	m := link.NewManager(node, n.replicas, n.logger)
	a := link.NewAdmin(link.AdminConfig{
		Node: node, Controller: n.ctrl, Image: n.leadership.Image, ControllerID: n.admin.ControllerID,
		Peer: n.peerClient, ValidateTopicConfig: config.ValidateTopicConfig, Manager: m, Logger: n.logger,
	})
	m.SetReporter(a.Do)
	reg.MustRegister(link.NewCollector(m))
	return &linkWiring{m: m, admin: a}
}

// apply follows a new image, after the replicas applied it (leaderships are current).
func (w *linkWiring) apply(im *metadata.Image) {
	if w != nil {
		w.m.ApplyImage(im)
	}
}

// close stops every link fetch; before the replicas close (a fetch appends to them).
func (w *linkWiring) close() {
	if w != nil {
		w.m.Close()
	}
}
