package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/runnel-io/runnel/internal/config"
	"github.com/runnel-io/runnel/internal/controlplane"
	"github.com/runnel-io/runnel/internal/kafka"
	"github.com/runnel-io/runnel/internal/metadata"
)

// startBrokerLifecycle registers this node with the active controller, starts its
// heartbeats (controlplane.Lifecycle) and returns once this node's own image shows it
// unfenced.
func (n *Node) startBrokerLifecycle(ctx context.Context) error {
	reg, err := n.registration()
	if err != nil {
		return err
	}
	l, err := controlplane.StartLifecycle(ctx, controlplane.LifecycleConfig{
		Registration: reg, Controller: n.ctrl, Admin: n.admin, Lease: n.lease,
		Interval:       time.Duration(n.cfg.BrokerHeartbeatIntervalMs) * time.Millisecond,
		SessionTimeout: time.Duration(n.cfg.BrokerSessionTimeoutMs) * time.Millisecond,
		DiskFull:       n.disk.IsFull,
		Damaged:        n.replicas.Damaged,
		Logger:         n.logger,
	})
	if err != nil {
		return err
	}
	n.lifecycle.Store(l)
	return l.AwaitUnfenced(ctx)
}

// registration describes this node: the advertised address of each Kafka listener
// (the bound port where it advertises port 0), the inter-broker one first, as the one
// other nodes dial; rack, Raft address and a new incarnation id.
func (n *Node) registration() (kafka.BrokerRegistration, error) {
	var inc [16]byte
	rand.Read(inc[:])
	reg := kafka.BrokerRegistration{
		ID: metadata.NodeID(n.cfg.NodeID), ClusterID: n.ctrl.Image().ClusterID, IncarnationID: hex.EncodeToString(inc[:]),
		Rack: n.cfg.BrokerRack, RaftAddr: n.ctrl.Addr(), UncleanShutdown: !n.logs.HadCleanShutdown(),
	}
	for i, l := range n.cfg.Listeners {
		e, err := advertisedEndpoint(l, n.kafkaAddrs[i])
		if err != nil {
			return kafka.BrokerRegistration{}, err
		}
		if l.Name == n.cfg.InterBrokerListener {
			reg.Endpoints = append([]metadata.Endpoint{e}, reg.Endpoints...)
		} else {
			reg.Endpoints = append(reg.Endpoints, e)
		}
	}
	reg.Host, reg.Port = reg.Endpoints[0].Host, reg.Endpoints[0].Port
	return reg, nil
}

// advertisedEndpoint is listener l's registered endpoint: its advertised address, with
// the port it bound (bound) where it advertises port 0.
func advertisedEndpoint(l config.Listener, bound net.Addr) (metadata.Endpoint, error) {
	host, portStr, err := net.SplitHostPort(l.Advertise)
	if err != nil {
		return metadata.Endpoint{}, fmt.Errorf("listener %s: advertised address %q: %w", l.Name, l.Advertise, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return metadata.Endpoint{}, fmt.Errorf("listener %s: advertised address %q: bad port", l.Name, l.Advertise)
	}
	if port == 0 {
		if ta, ok := bound.(*net.TCPAddr); ok {
			port = ta.Port
		}
	}
	return metadata.Endpoint{Name: l.Name, Host: host, Port: int32(port), SecurityProtocol: kafka.SecurityProtocolID(l.Protocol)}, nil
}

// nudgeHeartbeat sends the next heartbeat now, once the lifecycle runs.
func (n *Node) nudgeHeartbeat() {
	if l := n.lifecycle.Load(); l != nil {
		l.Nudge()
	}
}

// controlledShutdown tells the quorum this node is leaving and runs the controlled
// shutdown (controlplane.Lifecycle.ControlledShutdown), which closes the controller
// channel. Call it first in Close, while the node still serves Kafka requests. It
// returns nil when the node did not finish starting, and always: a node that could
// not hand its leadership over must stop anyway.
func (n *Node) controlledShutdown(ctx context.Context) error {
	if n.ctrl != nil {
		n.ctrl.Leaving()
	}
	l := n.lifecycle.Swap(nil)
	if l == nil {
		if n.admin != nil {
			n.admin.Channel().Close()
		}
		return nil
	}
	l.ControlledShutdown(ctx)
	return nil
}
