package console

// The mirror links page: a mirror's progress topic read with the public mirror
// package, as `runnel mirror status` reads it, shown as the console's types.

import (
	"context"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/internal/httpd"
	"github.com/runnel-io/runnel/mirror"
)

// mirrorStaleAfter is when a running mirror partition's state counts as stale: a
// running mirror commits its progress far more often.
const mirrorStaleAfter = 10 * time.Second

// readMirrorLink reads one mirror's progress topic and shows it as `runnel mirror
// status` does: a running state not committed for mirrorStaleAfter is stale, and
// its lag in seconds grows by the time since.
func readMirrorLink(ctx context.Context, seeds []string, opts []kgo.Opt, name string) (httpd.MirrorLink, error) {
	link := httpd.MirrorLink{Name: name, ProgressTopic: mirror.ProgressTopic(name), Partitions: []httpd.MirrorPartition{}, Groups: []httpd.MirrorCheckpoint{}}
	p, err := mirror.ReadProgress(ctx, seeds, opts, name)
	if err != nil {
		return link, err
	}
	if p.Meta != nil {
		link.SourceCluster, link.TargetCluster, link.Alias, link.Naming = p.Meta.SourceCluster, p.Meta.TargetCluster, p.Meta.Alias, p.Meta.Naming
	}
	now := time.Now()
	for _, st := range p.States {
		mp := httpd.MirrorPartition{Topic: st.Topic, Partition: st.Partition, TargetTopic: st.TargetTopic, SourceEnd: st.SourceEnd,
			Next: st.Next, TargetEnd: st.TargetEnd, LagRecords: st.LagRecords, LagSeconds: st.LagSeconds, Records: st.Records,
			State: st.State, Error: st.Error, Updated: time.UnixMilli(st.Updated), Owner: st.Owner}
		if st.State == "running" && st.Age(now) > mirrorStaleAfter {
			mp.State = "stale"
			if mp.LagRecords > 0 {
				mp.LagSeconds += st.Age(now).Seconds() // still behind, for at least this long
			}
		}
		link.LagRecords += mp.LagRecords
		link.MaxLagSeconds = max(link.MaxLagSeconds, mp.LagSeconds)
		link.Partitions = append(link.Partitions, mp)
	}
	sort.Slice(link.Partitions, func(i, j int) bool {
		a, b := link.Partitions[i], link.Partitions[j]
		return a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition
	})
	for _, cps := range p.Checkpoint {
		for _, c := range cps {
			link.Groups = append(link.Groups, httpd.MirrorCheckpoint{Group: c.Group, Topic: c.Topic, Partition: c.Partition,
				TargetTopic: c.TargetTopic, SourceOffset: c.SourceOffset, TargetOffset: c.TargetOffset, Updated: time.UnixMilli(c.Updated)})
		}
	}
	sort.Slice(link.Groups, func(i, j int) bool {
		a, b := link.Groups[i], link.Groups[j]
		return a.Group < b.Group || a.Group == b.Group && (a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition)
	})
	return link, nil
}
