package console

// The cluster links page: the links of this cluster's metadata image, as `runnel
// link list` lists them, each with its mirror partitions' status asked of every
// broker with the link status operation, as `runnel link status` does
// (link.StatusEveryBroker: each broker answers for the mirror partitions it leads).

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/httpd"
	"github.com/runnel-io/runnel/internal/link"
	"github.com/runnel-io/runnel/internal/metadata"
)

// linkStatusFunc gathers one link's mirror partitions from every broker: the
// partitions, the brokers that did not answer ("node N: why"), and an error when
// none did (link.StatusEveryBroker's contract).
type linkStatusFunc func(ctx context.Context, name string) ([]link.PartitionStatus, []string, error)

func (s *source) Links(ctx context.Context) (*httpd.Links, error) {
	// As `runnel link status` (a link operation that changes nothing): DESCRIBE on
	// the cluster.
	v, err := s.requireOn(ctx, metadata.ACLOpDescribe, auth.Cluster)
	if err != nil {
		return nil, err
	}
	if len(v.im.LinkNames()) == 0 {
		return linksOf(ctx, v, nil), nil
	}
	cl, err := s.kafkaClient()
	if err != nil {
		return linksOf(ctx, v, func(context.Context, string) ([]link.PartitionStatus, []string, error) { return nil, nil, err }), nil
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel()
	return linksOf(ctx, v, func(ctx context.Context, name string) ([]link.PartitionStatus, []string, error) {
		return link.StatusEveryBroker(ctx, cl, name)
	}), nil
}

// linksOf is every link of v's image with its partitions from status, asked for
// all links at once.
func linksOf(ctx context.Context, v *view, status linkStatusFunc) *httpd.Links {
	names := v.im.LinkNames()
	out := &httpd.Links{Header: v.hdr, Links: make([]httpd.Link, len(names))}
	var wg sync.WaitGroup
	for i, name := range names {
		l := v.im.Link(name)
		// link.Admin's list: a link is paused or active.
		info := link.LinkInfo{Link: name, Source: l.Source, State: "active", MirrorTopics: len(v.im.MirrorsOf(name))}
		if l.Paused {
			info.State = "paused"
		}
		out.Links[i] = httpd.Link{Name: info.Link, Source: info.Source, State: info.State, MirrorTopics: info.MirrorTopics,
			Partitions: []httpd.LinkPartition{}}
		wg.Go(func() { fillLinkStatus(ctx, &out.Links[i], status) })
	}
	wg.Wait()
	return out
}

// fillLinkStatus asks status for l's partitions; what did not answer is l.Error.
func fillLinkStatus(ctx context.Context, l *httpd.Link, status linkStatusFunc) {
	ps, refused, err := status(ctx, l.Name)
	if err != nil {
		l.Error = fmt.Sprintf("cannot read the status of link %s: %v", l.Name, err)
		return
	}
	if len(refused) > 0 {
		l.Error = fmt.Sprintf("link %s: the partitions these brokers lead are missing, they did not answer the link status: %s",
			l.Name, strings.Join(refused, "; "))
	}
	slices.SortFunc(ps, func(a, b link.PartitionStatus) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	for _, p := range ps {
		l.Partitions = append(l.Partitions, httpd.LinkPartition{Topic: p.Topic, Partition: p.Partition, State: p.State, End: p.End,
			SourceEnd: p.SourceEnd, LagRecords: p.LagRecords, LagSeconds: p.LagSeconds, Error: p.Error, Leader: p.Leader})
		l.LagRecords += p.LagRecords
		l.MaxLagSeconds = max(l.MaxLagSeconds, p.LagSeconds)
	}
}
