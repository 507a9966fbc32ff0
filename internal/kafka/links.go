package kafka

// Cluster links (docs/cluster-links.md): the protocol side. Two hooks:
//
//   - The link commands travel in DescribeCluster (60_describe_cluster.go) with the
//     Runnel tagged field LinkOpTag: the request's tag holds the operation as JSON
//     (internal/link/wire.go), the response's tag the answer. A DescribeCluster without
//     the tag is answered as ever. A link operation that changes the metadata needs
//     ALTER on the cluster, list and status DESCRIBE; a denied one answers
//     CLUSTER_AUTHORIZATION_FAILED in the response's ErrorCode. Why DescribeCluster
//     and not a new API key: kmsg encodes only Kafka's keys, and this one is flexible
//     in every version, may go to any broker, and changes nothing on a Kafka broker,
//     which skips the tag (the CLI then says the cluster has no links).
//   - A produce to a mirror topic that is not promoted is refused with INVALID_REQUEST
//     (mirrorDenial), the code INTERFACE.md fixes: it is not retriable, so a default
//     producer fails at once with the message, which names the link and says to
//     promote first, instead of retrying until its delivery timeout; a topic
//     authorization failure would send the user hunting for a missing ACL. (Confluent
//     documents only that a produce to a mirror topic fails, not its code.) The
//     client's admin changes of a mirror topic's data are refused the same way:
//     CreatePartitions, topic AlterConfigs and IncrementalAlterConfigs
//     (mirrorConfigDenial) and DeleteRecords (not its accept-loss repair). The link's
//     own partition and config following goes through the controller
//     (controller.GrowMirror, SyncMirrorConfigs), not these handlers; DeleteTopics
//     stays allowed.

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/metadata"
)

// LinkOpTag is DescribeCluster's tagged field carrying a link operation (request)
// and its answer (response), both JSON. internal/link names it link.OpTag.
const LinkOpTag = 10_002

// LinkAdmin runs link operations (internal/link.Admin): payload is the request's
// tag, the result the response's. The handler decodes only the op field, to
// authorize it.
type LinkAdmin interface {
	LinkOp(ctx context.Context, payload []byte) []byte
}

// linkAdmins holds each Server's LinkAdmin. A map beside the Server rather than a
// field of it, so that the links stay out of server.go's struct (a file other work
// changes often); written once at start-up by SetLinkAdmin.
var linkAdmins sync.Map // *Server -> LinkAdmin

// SetLinkAdmin installs the link operations; without it a link operation answers
// UNSUPPORTED_VERSION in the tag. Call it before Serve.
func (s *Server) SetLinkAdmin(a LinkAdmin) { linkAdmins.Store(s, a) }

// linkOp answers a DescribeCluster that carries LinkOpTag; ok is false when it does
// not (the handler then describes the cluster).
func (s *Server) linkOp(ctx context.Context, r *request, req *kmsg.DescribeClusterRequest) (resp *kmsg.DescribeClusterResponse, ok bool) {
	var payload []byte
	req.UnknownTags.Each(func(tag uint32, b []byte) {
		if tag == LinkOpTag {
			payload, ok = b, true
		}
	})
	if !ok {
		return nil, false
	}
	resp = req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.ClusterID = s.leadership.Image().ClusterID
	resp.ControllerID = int32(s.admin.ControllerID())
	resp.EndpointType = 1
	answer := func(code int16, msg string) {
		resp.ErrorCode, resp.ErrorMessage = code, &msg
		b, _ := json.Marshal(map[string]any{"error": msg, "error_code": code})
		resp.UnknownTags.Set(LinkOpTag, b)
	}
	var op struct {
		Op string `json:"op"`
	}
	if err := json.Unmarshal(payload, &op); err != nil {
		answer(kerr.InvalidRequest.Code, fmt.Sprintf("link operation (DescribeCluster tag %d): %v", LinkOpTag, err))
		return resp, true
	}
	want := metadata.ACLOpAlter
	if op.Op == "list" || op.Op == "status" {
		want = metadata.ACLOpDescribe
	}
	if err := s.authorize(r, want, auth.Cluster); err != nil {
		answer(kerr.ClusterAuthorizationFailed.Code, err.Error())
		return resp, true
	}
	a, _ := linkAdmins.Load(s)
	if a == nil {
		answer(kerr.UnsupportedVersion.Code, "this node does not serve cluster links")
		return resp, true
	}
	resp.UnknownTags.Set(LinkOpTag, a.(LinkAdmin).LinkOp(ctx, payload))
	return resp, true
}

// mirrorDenial refuses a produce, CreatePartitions or DeleteRecords of topic while
// it is a mirror topic that is not promoted (nil otherwise).
func (s *Server) mirrorDenial(topic string) error {
	im := s.leadership.Image()
	if im == nil {
		return nil
	}
	m := im.MirrorOf(topic)
	if m.Writable() {
		return nil
	}
	return fmt.Errorf("%w: topic %s is a mirror topic of link %s; promote it first (runnel link promote %s --topic %s)",
		kerr.InvalidRequest, topic, m.Link, m.Link, topic)
}

// mirrorConfigDenial refuses a client's change of topic's configs (set; replaceAll for
// AlterConfigs) while it is a mirror topic that is not promoted: its configs are the
// source's (copied at creation, followed with --sync-configs). An incremental change
// of only the replication throttle lists is let through: they throttle this cluster's
// own replica moves (runnel reassign execute --throttle sets and clears them) and are
// never the source's.
func (s *Server) mirrorConfigDenial(topic string, set map[string]*string, replaceAll bool) error {
	if !replaceAll && len(set) > 0 {
		local := true
		for k := range set {
			local = local && (k == "leader.replication.throttled.replicas" || k == "follower.replication.throttled.replicas")
		}
		if local {
			return nil
		}
	}
	return s.mirrorDenial(topic)
}
