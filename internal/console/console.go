// Package console is the node's web console (docs/console.md): the data of its pages
// and their JSON twins under /api/v1/ (source.go, shown by internal/httpd's pages),
// the sign-in check and ACL decision (auth.go), the record browser and write actions
// (records.go, actions.go, pages.go), the charts (charts.go), sizes and reassignment
// progress (sizes.go), the node, ACL, user and quota pages (admin.go,
// pages_admin.go), the mirror links (mirrors.go, with the public mirror package) and
// the cluster links (links.go, with internal/link's status of every broker).
// It reads the node through Node, which
// internal/server implements; everything else it asks over the Kafka protocol, through
// the node's own listener, like any client.
package console

import (
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/httpd"
	"github.com/runnel-io/runnel/internal/metadata"
)

// Node is what the console reads of the node it runs in. The HTTP listener starts
// before the node's other parts exist: every method but ID must be safe to call then,
// and Image answers nil until Serving.
type Node interface {
	// ID is the node's node.id.
	ID() int32
	// Serving reports whether the node's parts exist (its metadata, replicas,
	// listeners): before, the console answers that the node is starting.
	Serving() bool
	// Image is the node's current metadata image, nil before the first.
	Image() *metadata.Image
	// ControllerID is the active controller as the node knows it, -1 when none is.
	ControllerID() int32
	// ReadyErr is /readyz's answer: nil when the node serves its partitions.
	ReadyErr() error
	// Ready reports whether the node serves Kafka clients now (its listener open).
	Ready() bool
	// LeaseValid reports whether the node holds a current lease from the controller.
	LeaseValid() bool
	// MinISR is topic t's effective min.insync.replicas in im.
	MinISR(im *metadata.Image, t *metadata.Topic) int32
	// LeaderOffsets are tp's offsets when this node leads it and holds its lease.
	LeaderOffsets(tp metadata.TopicPartition) (LocalOffsets, bool)
	// ReassignmentBytesRemaining is what a reassignment of tp led here has left to copy.
	ReassignmentBytesRemaining(tp metadata.TopicPartition) (int64, bool)
	// KafkaClient is where and how a client reaches the node's own inter-broker
	// listener, as another node does (its TLS and SASL login, dialled on the node's
	// network), with requests bounded by timeout; an error while the listener is not
	// open (starting or stopping).
	KafkaClient(timeout time.Duration) (seed string, opts []kgo.Opt, err error)
	// TopicBytesOut is the record bytes this node has sent consumers, by topic, since
	// it started (runnel_topic_bytes_out_total); nil while it does not serve clients.
	TopicBytesOut() map[string]float64
}

// LocalOffsets are a partition's offsets on its leader.
type LocalOffsets struct {
	LogStart, HighWatermark, LogEnd int64
}

// Options configure New.
type Options struct {
	Node   Node
	Logger *slog.Logger
	// Login: the console requires a sign-in (a Kafka listener requires SASL); set it
	// with the httpd.Login NewLogin returns.
	Login bool
	// Authorizer decides what a signed-in user may do; nil with ACLs off
	// (authorizer.class.name unset).
	Authorizer *auth.Authorizer
}

// Console is the console's handler for "/" on the node's HTTP listener (behind
// httpd's sign-in when Options.Login), with the charts' sampler running until Close.
type Console struct {
	*handler
	stop     chan struct{}
	stopOnce sync.Once
}

// New returns the console and starts its charts' sampler (charts.go).
func New(o Options) *Console {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	src := &source{n: o.Node, acl: authz{authz: o.Authorizer, login: o.Login}, logger: o.Logger, charts: newChartStore()}
	h := &handler{src: src, mux: http.NewServeMux()}
	h.routes()
	h.pages = httpd.NewConsole(httpd.ConsoleOptions{Source: src, Logger: o.Logger, Endpoints: h.patterns})
	c := &Console{handler: h, stop: make(chan struct{})}
	go src.runCharts(c.stop)
	return c
}

// Close stops the charts' sampler; the handler still answers (its charts no longer
// grow).
func (c *Console) Close() { c.stopOnce.Do(func() { close(c.stop) }) }
