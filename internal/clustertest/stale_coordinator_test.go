package clustertest_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/clustertest"
	"github.com/runnel-io/runnel/internal/testutil"
)

// TestNoStaleOffsetsAfterPause is issue 11 part 2: a group coordinator paused
// (SIGSTOP) for longer than the session timeout loses the group to another node,
// which acknowledges a newer commit; when the old coordinator resumes, neither an
// OffsetFetch that waited in its socket during the pause nor one sent right after the
// resume, on a connection opened before the pause, may answer the older offset. The
// coordinator is an ordinary node in one case and the active controller's node in the
// other (a deposed controller must not confirm its own stale metadata).
func TestNoStaleOffsetsAfterPause(t *testing.T) {
	for _, onController := range []bool{false, true} {
		t.Run(map[bool]string{false: "coordinator", true: "coordinator-and-controller"}[onController], func(t *testing.T) {
			staleOffsetsAfterPause(t, onController)
		})
	}
}

func staleOffsetsAfterPause(t *testing.T, onController bool) {
	c := startCluster(t, 3)
	topic := topicName(t)
	createTopic(t, c, topic, 1, 3)
	// A group whose coordinator is (onController) or is not the controller's node.
	ctrl := c.WaitController(t, -1, waitTimeout)
	var group string
	var coord int32
	for i := 0; ; i++ {
		if i == 200 {
			t.Fatalf("no group among 200 whose coordinator is the controller's node: %v", onController)
		}
		group = fmt.Sprintf("stale-%s-%d", topic, i)
		if coord = findCoordinator(t, c, -1, group, -1); (coord == ctrl) == onController {
			break
		}
	}
	commit(t, c, int(coord), group, topic, 100)

	old := dialRaw(t, c.Node(int(coord)).KafkaAddr)
	if got := old.offsetFetch(t, group, topic); got.err != nil || got.offset != 100 {
		t.Fatalf("OffsetFetch from coordinator %d before the pause: %+v", coord, got)
	}
	c.Pause(int(coord))
	// SIGSTOP takes effect asynchronously; a request sent at once may still be answered
	// before the stop, rightly with 100. 200 ms on, every thread has stopped.
	time.Sleep(200 * time.Millisecond)
	duringReq := old.sendOffsetFetch(group, topic) // waits in the socket

	moved := findCoordinator(t, c, coord, group, coord)
	commit(t, c, int(moved), group, topic, 200)
	c.Resume(int(coord))
	afterReq := old.sendOffsetFetch(group, topic) // pipelined: sent before the first answer
	during := old.recvOffsetFetch(duringReq)
	after := old.recvOffsetFetch(afterReq)
	for what, f := range map[string]fetched{"sent during the pause": during, "sent right after the resume": after} {
		if f.err == nil && f.offset != 200 {
			t.Errorf("OffsetFetch %s to node %d (the coordinator before the pause) answered offset %d; node %d had acknowledged a commit of 200 before the resume",
				what, coord, f.offset, moved)
		} else {
			t.Logf("OffsetFetch %s: offset %d, error %v", what, f.offset, f.err)
		}
	}
}

// findCoordinator asks every live node but skip for the group's coordinator until one
// names a node other than not (-1: any), and returns it.
func findCoordinator(t *testing.T, c *clustertest.Cluster, skip int32, group string, not int32) int32 {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for time.Now().Before(deadline) {
		for _, id := range c.LiveIDs() {
			if id == skip {
				continue
			}
			req := kmsg.NewPtrFindCoordinatorRequest()
			req.CoordinatorKey = group
			cl, err := kgo.NewClient(kgo.SeedBrokers(c.Node(int(id)).KafkaAddr))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			resp, err := req.RequestWith(ctx, cl)
			cancel()
			cl.Close()
			if err == nil && resp.ErrorCode == 0 && resp.NodeID >= 0 && resp.NodeID != not {
				return resp.NodeID
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no coordinator other than node %d for group %s within %v", not, group, waitTimeout)
	return -1
}

// commit commits offset for partition 0 of topic in group (a group without members,
// as a client that assigns its own partitions commits) through node, retrying until it
// is acknowledged.
func commit(t *testing.T, c *clustertest.Cluster, node int, group, topic string, offset int64) {
	t.Helper()
	opts := append(testutil.KgoDebugLog(t), kgo.SeedBrokers(c.Node(node).KafkaAddr))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	deadline := time.Now().Add(waitTimeout)
	var last error
	for time.Now().Before(deadline) {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.Generation = group, -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 0, offset
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := req.RequestWith(ctx, cl)
		cancel()
		if err == nil {
			err = kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
		}
		if err == nil {
			return
		}
		last = err
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("commit of offset %d for group %s through node %d: %v", offset, group, node, last)
}

// rawConn is one Kafka connection that stays open across a pause of its node (a
// client's pooled connection), sending one request at a time.
type rawConn struct {
	nc   net.Conn
	rd   *bufio.Reader
	corr int32
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{nc: nc, rd: bufio.NewReader(nc)}
}

type fetched struct {
	offset int64
	err    error
}

// offsetFetch sends OffsetFetch v5 for partition 0 of topic and waits for the answer.
func (r *rawConn) offsetFetch(t *testing.T, group, topic string) fetched {
	return r.recvOffsetFetch(r.sendOffsetFetch(group, topic))
}

// sentRequest is a request written to a rawConn, or the error writing it.
type sentRequest struct {
	req *kmsg.OffsetFetchRequest
	err error
}

func (r *rawConn) sendOffsetFetch(group, topic string) sentRequest {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.SetVersion(5)
	req.Group = group
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{0}
	req.Topics = append(req.Topics, rt)
	r.corr++
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("stale-test")).AppendRequest(nil, req, r.corr)
	r.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, err := r.nc.Write(frame)
	return sentRequest{req: req, err: err}
}

// recvOffsetFetch reads the answer to s (answers come in request order), waiting at
// most 30 s.
func (r *rawConn) recvOffsetFetch(s sentRequest) fetched {
	if s.err != nil {
		return fetched{err: s.err}
	}
	r.nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(r.rd, size[:]); err != nil {
		return fetched{err: err}
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(r.rd, body); err != nil {
		return fetched{err: err}
	}
	resp := s.req.ResponseKind().(*kmsg.OffsetFetchResponse)
	resp.SetVersion(5)
	if err := resp.ReadFrom(body[4:]); err != nil { // after the correlation id
		return fetched{err: fmt.Errorf("decoding OffsetFetch response: %w", err)}
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return fetched{err: err}
	}
	p := resp.Topics[0].Partitions[0]
	return fetched{offset: p.Offset, err: kerr.ErrorForCode(p.ErrorCode)}
}

// TestFindCoordinatorNeverNamesAPausedNode: a client that asks for a group's
// coordinator while that coordinator is paused (SIGSTOP), before the controller has
// fenced it, must not be told the paused node: franz-go keeps sending to the
// coordinator it was told until it answers an error code (it never forgets one on a
// timeout), so it would wait for the whole pause. The node asked holds its answer
// until the group's partition has a new leader, and names that one.
func TestFindCoordinatorNeverNamesAPausedNode(t *testing.T) {
	c := startCluster(t, 3)
	ctrl := c.WaitController(t, -1, waitTimeout)
	var group string
	var coord int32
	for i := 0; ; i++ {
		if i == 200 {
			t.Fatal("no group among 200 whose coordinator is not the controller's node")
		}
		group = fmt.Sprintf("paused-coordinator-%d", i)
		if coord = findCoordinator(t, c, -1, group, -1); coord != ctrl {
			break
		}
	}
	c.Pause(int(coord))
	defer c.Resume(int(coord))
	time.Sleep(200 * time.Millisecond) // SIGSTOP has taken effect (see staleOffsetsAfterPause)
	for _, id := range c.LiveIDs() {
		if id == coord {
			continue
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.Node(int(id)).KafkaAddr))
		if err != nil {
			t.Fatal(err)
		}
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey = group
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		start := time.Now()
		resp, err := req.RequestWith(ctx, cl)
		cancel()
		cl.Close()
		switch {
		case err != nil:
			t.Errorf("FindCoordinator for group %s through node %d: %v", group, id, err)
		case resp.ErrorCode == 0 && resp.NodeID == coord:
			t.Errorf("FindCoordinator for group %s through node %d named node %d, which is paused, after %v",
				group, id, coord, time.Since(start))
		default:
			t.Logf("FindCoordinator through node %d: node %d, error code %d, after %v", id, resp.NodeID, resp.ErrorCode, time.Since(start))
		}
	}
}
