package replica

import (
	"context"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/config"
	"github.com/runnel-io/runnel/internal/log"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/vfs"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchesTo starts a Fetcher of one partition from a fake leader that fails every
// Fetch, after o changed m's options; it yields each Fetch request as it arrives.
func fetchesTo(t *testing.T, o func(*Options)) <-chan *kmsg.FetchRequest {
	t.Helper()
	m, p := newTestPartition(t, []metadata.NodeID{1}, 1)
	o(&m.opts)
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	got := make(chan *kmsg.FetchRequest, 16)
	c.ControlKey(int16(kmsg.Fetch), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kreq.(*kmsg.FetchRequest)
		select {
		case got <- req:
		default:
		}
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		resp.ErrorCode = kerr.UnknownServerError.Code
		return resp, nil, true
	})
	f, err := newFetcher(m, 0, c.ListenAddrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.close)
	f.mu.Lock()
	f.parts[p.tp] = &fetchState{p: p, truncated: true} // skip OffsetForLeaderEpoch
	f.mu.Unlock()
	f.wake <- struct{}{}
	return got
}

func nextFetch(t *testing.T, got <-chan *kmsg.FetchRequest) (*kmsg.FetchRequest, time.Time) {
	t.Helper()
	select {
	case req := <-got:
		return req, time.Now()
	case <-time.After(10 * time.Second):
		t.Fatal("no Fetch from the follower")
		return nil, time.Time{}
	}
}

// replica.fetch.backoff.ms: after a failed fetch the follower pauses that long before
// the next one.
func TestFetchBackoff(t *testing.T) {
	const backoff = 400 * time.Millisecond
	got := fetchesTo(t, func(o *Options) { o.FetchBackoff = backoff })
	_, prev := nextFetch(t, got)
	for range 2 {
		_, at := nextFetch(t, got)
		// The gap is measured between arrivals at the leader; allow it the scheduling
		// noise of a loaded machine above, none below.
		if gap := at.Sub(prev); gap < backoff-10*time.Millisecond || gap > backoff+time.Second {
			t.Errorf("fetches %v apart after a failure, want replica.fetch.backoff.ms %v", gap, backoff)
		}
		prev = at
	}
}

// replica.fetch.min.bytes is the MinBytes of the follower's fetches.
func TestFetchMinBytes(t *testing.T) {
	got := fetchesTo(t, func(o *Options) { o.FetchMinBytes = 4096 })
	if req, _ := nextFetch(t, got); req.MinBytes != 4096 {
		t.Errorf("Fetch MinBytes = %d, want replica.fetch.min.bytes 4096", req.MinBytes)
	}
}

// Options left zero take the config table's defaults.
func TestFetchOptionDefaultsFromConfig(t *testing.T) {
	logs, err := log.NewManager(log.ManagerOptions{FS: vfs.OS(), DataDir: t.TempDir(), Defaults: log.DefaultConfig()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logs.Close() })
	m, err := NewManager(Options{Node: 1, Logs: logs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	d := config.Default()
	if want := time.Duration(d.ReplicaFetchBackoffMs) * time.Millisecond; m.opts.FetchBackoff != want {
		t.Errorf("default FetchBackoff = %v, want replica.fetch.backoff.ms %v", m.opts.FetchBackoff, want)
	}
	if m.opts.FetchMinBytes != d.ReplicaFetchMinBytes {
		t.Errorf("default FetchMinBytes = %d, want replica.fetch.min.bytes %d", m.opts.FetchMinBytes, d.ReplicaFetchMinBytes)
	}
}
