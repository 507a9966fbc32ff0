package link

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/controller"
	"github.com/runnel-io/runnel/internal/kafka"
	"github.com/runnel-io/runnel/internal/metadata"
)

// AdminConfig wires an Admin to its node.
type AdminConfig struct {
	Node       metadata.NodeID
	Controller *controller.Controller
	// Image is the node's applied image (the one produce refusals read).
	Image func() *metadata.Image
	// ControllerID is the active controller's node id, -1 when unknown.
	ControllerID func() metadata.NodeID
	// Peer builds the options of a client of another node (inter-broker security).
	Peer kafka.PeerClient
	// ValidateTopicConfig checks one topic config; the source's configs that fail it
	// are not copied (and named in the log).
	ValidateTopicConfig func(k, v string) error
	Manager             *Manager
	Logger              *slog.Logger
}

// Admin runs the link operations (kafka.LinkAdmin). Those that change the metadata
// run on the active controller's node: it reads the source (topics, partition counts,
// configs) there and proposes through controller.Controller; any other node forwards
// the request there. Status is answered for the mirror partitions this node leads.
type Admin struct{ cfg AdminConfig }

// NewAdmin returns the node's link Admin, and hands it to cfg.Manager (whose
// syncers read the source and propose through it).
func NewAdmin(cfg AdminConfig) *Admin {
	a := &Admin{cfg: cfg}
	if cfg.Manager != nil {
		cfg.Manager.admin.Store(a)
	}
	return a
}

var _ kafka.LinkAdmin = (*Admin)(nil)

// LinkOp implements kafka.LinkAdmin.
func (a *Admin) LinkOp(ctx context.Context, payload []byte) []byte {
	req, err := DecodeRequest(payload)
	if err != nil {
		return Encode(Response{Error: fmt.Sprintf("bad link operation: %v", err), ErrorCode: kerr.InvalidRequest.Code, Node: int32(a.cfg.Node)})
	}
	resp := a.Do(ctx, req)
	resp.Node = int32(a.cfg.Node)
	return Encode(resp)
}

// Do runs one operation.
func (a *Admin) Do(ctx context.Context, req Request) Response {
	switch req.Op {
	case OpList:
		return a.list()
	case OpStatus:
		return a.status(req)
	case OpFailback, OpSwitchover:
		return a.failbackOp(ctx, req)
	case OpCreate, OpPause, OpResume, OpPromote, OpDelete, OpFail:
	default:
		return errorResponse(fmt.Errorf("%w: unknown link operation %q", kerr.InvalidRequest, req.Op))
	}
	if !a.cfg.Controller.IsLeader() {
		if req.Forwarded {
			return errorResponse(fmt.Errorf("%w: node %d is not the active controller", kerr.NotController, a.cfg.Node))
		}
		return a.forward(ctx, req)
	}
	var resp Response
	var err error
	switch req.Op {
	case OpCreate:
		resp.Topics, err = a.create(ctx, req)
	case OpPause, OpResume:
		if err = a.cfg.Controller.SetLinkPaused(ctx, req.Link, req.Topics, req.Op == OpPause); err == nil {
			// A pause answered is a pause in force: no node copies anything after it.
			err = a.settle(ctx, fmt.Sprintf("link %s: %s", req.Link, req.Op))
		}
	case OpPromote:
		resp.Topics, err = a.cfg.Controller.PromoteMirrors(ctx, req.Link, req.Topics)
	case OpDelete:
		if err = a.cfg.Controller.DeleteLink(ctx, req.Link, req.Promote); err == nil {
			// As a pause: once the delete is answered, no node copies anything more.
			err = a.settle(ctx, fmt.Sprintf("link %s: %s", req.Link, req.Op))
		}
	case OpFail:
		if len(req.Topics) == 1 {
			err = a.cfg.Controller.FailMirror(ctx, req.Topics[0], req.Reason)
		}
	}
	if err != nil {
		return errorResponse(err)
	}
	return resp
}

func errorResponse(err error) Response {
	code := kerr.UnknownServerError.Code
	var ke *kerr.Error
	switch {
	case errors.As(err, &ke):
		code = ke.Code
	case errors.Is(err, controller.ErrInvalidRequest), errors.Is(err, controller.ErrInvalidTopic),
		errors.Is(err, controller.ErrTopicExists), errors.Is(err, controller.ErrInvalidConfig),
		errors.Is(err, controller.ErrInvalidReplicationFactor):
		code = kerr.InvalidRequest.Code
	case errors.Is(err, controller.ErrNotController):
		code = kerr.NotController.Code
	case errors.Is(err, controller.ErrTimeout):
		code = kerr.RequestTimedOut.Code
	}
	msg := err.Error()
	if ke != nil {
		// The code travels on its own: the message keeps what this operation says, not
		// kerr's generic description of the code ("INVALID_REQUEST: This most likely
		// occurs because of a request being malformed by the client library...").
		msg = strings.TrimPrefix(msg, ke.Error()+": ")
	}
	return Response{Error: msg, ErrorCode: code}
}

// forward sends req to the active controller's node and returns its answer,
// retrying while the controller is unknown or moves, until ctx ends.
func (a *Admin) forward(ctx context.Context, req Request) Response {
	req.Forwarded = true
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		resp, err := a.forwardOnce(ctx, req)
		if err == nil && resp.ErrorCode != kerr.NotController.Code {
			return resp
		}
		if err == nil {
			err = errors.New(resp.Error)
		}
		select {
		case <-ctx.Done():
			return errorResponse(fmt.Errorf("%w: forwarding link %s to the active controller: %w", kerr.NotController, req.Op, err))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (a *Admin) forwardOnce(ctx context.Context, req Request) (Response, error) {
	id := a.cfg.ControllerID()
	if id < 0 || id == a.cfg.Node {
		return Response{}, fmt.Errorf("no active controller known")
	}
	cl, err := a.peerClient(id)
	if err != nil {
		return Response{}, err
	}
	defer cl.Close()
	return Send(ctx, cl.Broker(int(id)), req)
}

// peerClient returns a client of this cluster bootstrapped from node id, with the
// inter-broker security.
func (a *Admin) peerClient(id metadata.NodeID) (*kgo.Client, error) {
	b, ok := a.cfg.Image().Brokers[id]
	if !ok {
		return nil, fmt.Errorf("node %d is not a registered broker", id)
	}
	var opts []kgo.Opt
	if a.cfg.Peer != nil {
		opts = a.cfg.Peer(5 * time.Second)
	}
	opts = append(opts, kgo.SeedBrokers(net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))),
		kgo.ClientID(fmt.Sprintf("runnel-node-%d", a.cfg.Node)))
	return kgo.NewClient(opts...)
}

// localClient returns a client of this cluster through this node (group offset sync
// commits through it to the groups' coordinators, wherever they are).
func (a *Admin) localClient() (*kgo.Client, error) { return a.peerClient(a.cfg.Node) }

// Requester sends one request (a *kgo.Client or a *kgo.Broker).
type Requester interface {
	Request(ctx context.Context, r kmsg.Request) (kmsg.Response, error)
}

// Send runs req on the broker or client r and returns its answer: the transport the
// CLI and forwarding nodes share.
func Send(ctx context.Context, r Requester, req Request) (Response, error) {
	kreq := kmsg.NewPtrDescribeClusterRequest()
	kreq.UnknownTags.Set(OpTag, Encode(req))
	kresp, err := r.Request(ctx, kreq)
	if err != nil {
		return Response{}, err
	}
	dc := kresp.(*kmsg.DescribeClusterResponse)
	var payload []byte
	dc.UnknownTags.Each(func(tag uint32, b []byte) {
		if tag == OpTag {
			payload = b
		}
	})
	if payload == nil {
		return Response{}, errors.New("the cluster did not answer the link operation: it has no cluster links (not Runnel, or an older version)")
	}
	return DecodeResponse(payload)
}

// create reads the source's topics that match the filters and creates the link with
// them as mirror topics (the source's partition counts and non-default configs).
func (a *Admin) create(ctx context.Context, req Request) ([]string, error) {
	if req.Link == "" || req.Source == "" {
		return nil, fmt.Errorf("%w: a link needs a name and a source", kerr.InvalidRequest)
	}
	link := metadata.Link{Name: req.Link, Source: req.Source, SourceProps: req.SourceProps,
		Topics: req.Topics, Exclude: req.Exclude, ReplicationFactor: req.ReplicationFactor,
		Groups: req.Groups, SyncACLs: req.SyncACLs, SyncConfigs: req.SyncConfigs,
		ThrottleBytes: req.ThrottleBytes, GroupSyncIntervalMs: req.GroupSyncIntervalMs}
	if link.ReplicationFactor == 0 {
		link.ReplicationFactor = -1
	}
	if link.ThrottleBytes < 0 || link.GroupSyncIntervalMs < 0 {
		return nil, fmt.Errorf("%w: link %s: --throttle and --group-sync-interval cannot be negative", kerr.InvalidRequest, req.Link)
	}
	include, err := compileFilters("--topics", req.Topics)
	if err != nil {
		return nil, err
	}
	exclude, err := compileFilters("--exclude", req.Exclude)
	if err != nil {
		return nil, err
	}
	if _, err := compileFilters("--groups", req.Groups); err != nil {
		return nil, err
	}
	opts, err := sourceOptions(&link)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", kerr.InvalidRequest, err)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	specs, err := a.sourceTopics(ctx, cl, include, exclude)
	if err != nil {
		return nil, fmt.Errorf("link %s: reading the source %s: %w", req.Link, req.Source, err)
	}
	if err := a.cfg.Controller.CreateLink(ctx, link, specs); err != nil {
		return nil, err
	}
	// Answer once every live node serves the link, so that a status right after the
	// create finds it wherever it is asked (the link exists whatever this wait says).
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := a.cfg.Controller.WaitBrokersApplied(wctx, a.cfg.Controller.Image().Offset); err != nil {
		a.cfg.Logger.Warn("link: created, not yet applied on every node", "link", req.Link, "err", err)
	}
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Name
	}
	return names, nil
}

// settleTimeout bounds settle's wait, within a default client's request timeout
// (kgo's 10 s overhead on a request without a timeout of its own).
const settleTimeout = 8 * time.Second

// settle waits until every live, unfenced node applied the metadata this node's
// controller holds now (they report it in their heartbeats, after their link manager
// applied it), so that the change is in force everywhere once the operation answers.
// A timeout answers REQUEST_TIMED_OUT naming the change (what) and the nodes behind:
// the change is committed and will be applied there, but not yet. A controller that lost
// its role meanwhile no longer hears the heartbeats; the change is committed, so that
// is no error.
func (a *Admin) settle(ctx context.Context, what string) error {
	wctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	err := a.cfg.Controller.WaitBrokersApplied(wctx, a.cfg.Controller.Image().Offset)
	switch {
	case err == nil, errors.Is(err, controller.ErrNotController), errors.Is(err, controller.ErrClosed):
		return nil
	}
	return fmt.Errorf("%s is committed but not yet applied on every node: %w", what, err)
}

// compileFilters anchors each expression to whole names (a plain name matches
// itself), as runnel mirror's filters.
func compileFilters(flag string, exprs []string) ([]*regexp.Regexp, error) {
	var out []*regexp.Regexp
	for _, e := range exprs {
		re, err := regexp.Compile("^(?:" + e + ")$")
		if err != nil {
			return nil, fmt.Errorf("%w: %s %q: %v", kerr.InvalidRequest, flag, e, err)
		}
		out = append(out, re)
	}
	return out, nil
}

func matchAny(res []*regexp.Regexp, name string) bool {
	return slices.ContainsFunc(res, func(re *regexp.Regexp) bool { return re.MatchString(name) })
}

// sourceTopics lists the source topics to mirror with their partition counts, ids
// and non-default (DYNAMIC_TOPIC_CONFIG) configs.
func (a *Admin) sourceTopics(ctx context.Context, cl *kgo.Client, include, exclude []*regexp.Regexp) ([]controller.MirrorSpec, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	var specs []controller.MirrorSpec
	for _, t := range meta.Topics {
		if t.Topic == nil || t.IsInternal || strings.HasPrefix(*t.Topic, "__") {
			continue
		}
		name := *t.Topic
		if (len(include) > 0 && !matchAny(include, name)) || matchAny(exclude, name) {
			continue
		}
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			return nil, fmt.Errorf("topic %q: %w", name, err)
		}
		specs = append(specs, controller.MirrorSpec{Name: name, Partitions: int32(len(t.Partitions)), SourceTopicID: t.TopicID})
	}
	slices.SortFunc(specs, func(x, y controller.MirrorSpec) int { return strings.Compare(x.Name, y.Name) })
	if len(specs) == 0 {
		return nil, nil
	}
	return specs, a.sourceConfigs(ctx, cl, specs)
}

// sourceConfigs fills each spec's configs with the source topic's own settings.
// A source that cannot describe configs (some do not) leaves them empty.
func (a *Admin) sourceConfigs(ctx context.Context, cl *kgo.Client, specs []controller.MirrorSpec) error {
	req := kmsg.NewPtrDescribeConfigsRequest()
	for _, s := range specs {
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, s.Name
		req.Resources = append(req.Resources, r)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		a.cfg.Logger.Warn("link: the source does not describe topic configs; mirror topics get the destination's defaults", "err", err)
		return nil
	}
	byName := map[string]int{}
	for i, s := range specs {
		byName[s.Name] = i
	}
	for _, r := range resp.Resources {
		i, ok := byName[r.ResourceName]
		if !ok || r.ErrorCode != 0 {
			continue
		}
		for _, c := range r.Configs {
			if c.Source != kmsg.ConfigSourceDynamicTopicConfig || c.Value == nil {
				continue
			}
			if v := a.cfg.ValidateTopicConfig; v != nil {
				if err := v(c.Name, *c.Value); err != nil {
					a.cfg.Logger.Warn("link: source topic config not copied", "topic", r.ResourceName, "config", c.Name, "err", err)
					continue
				}
			}
			if specs[i].Configs == nil {
				specs[i].Configs = map[string]string{}
			}
			specs[i].Configs[c.Name] = *c.Value
		}
	}
	return nil
}
