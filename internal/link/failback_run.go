package link

// The failback and switchover orchestration, run by the client that holds both
// clusters (runnel link failback / switchover). See failback.go for the brokers'
// phases and docs/cluster-links.md "Failback and switchover".

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/metadata"
)

// FailbackConfig is one failback: on Old, the old primary (the cluster that was the
// link's source and is to follow), the topics of link Link promoted on New, the new
// primary, become mirror topics of a link of the same name on Old, pointing at New.
type FailbackConfig struct {
	Link   string
	Topics []string // or All
	All    bool
	Old    *kgo.Client
	New    *kgo.Client
	// OldBootstrap is Old's bootstrap, named in errors.
	OldBootstrap string
	// NewBootstrap and NewProps are how Old's link reaches New (its source).
	NewBootstrap string
	NewProps     map[string]string
	// Timeout bounds the waits: the promote's record on New, the fenced topics
	// settling on Old, the mirror starting after the cut.
	Timeout time.Duration
}

// RunFailback runs the failback of cfg and returns, per partition, where the old
// primary's log was cut (TruncatedTo) and what was set aside (QuarantinedRecords,
// Quarantine: "" when nothing). Run again after any failure, it resumes where the
// last run stopped; once cut, it answers what the cut recorded.
func RunFailback(ctx context.Context, cfg FailbackConfig) ([]PartitionStatus, error) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	info, err := promoteInfo(ctx, cfg)
	if err != nil {
		return nil, err
	}
	fence := Request{Op: OpFailback, Link: cfg.Link, Source: cfg.NewBootstrap, SourceProps: cfg.NewProps,
		Failback: &FailbackArgs{Phase: PhaseFence}}
	for _, t := range info {
		fence.Failback.Topics = append(fence.Failback.Topics, FailbackTopic{Topic: t.Topic, TopicID: t.TopicID})
	}
	fenced, err := sendFailback(ctx, cfg.Old, fence)
	if err != nil {
		return nil, fmt.Errorf("fencing the topics on the old primary %s: %w", cfg.OldBootstrap, err)
	}
	var out []PartitionStatus
	cut := Request{Op: OpFailback, Link: cfg.Link, Failback: &FailbackArgs{Phase: PhaseCut}}
	for _, ft := range fenced.Topics {
		if ft.State != string(metadata.MirrorFailingBack) { // cut by an earlier run: report what it recorded
			out = append(out, cutRows(ft)...)
			continue
		}
		i := slices.IndexFunc(info, func(t FailbackTopic) bool { return t.Topic == ft.Topic })
		if i < 0 {
			return nil, fmt.Errorf("topic %q: the old primary fenced a topic the new primary did not name", ft.Topic)
		}
		ct, err := setAside(ctx, cfg, info[i], ft)
		if err != nil {
			return nil, err
		}
		cut.Failback.Topics = append(cut.Failback.Topics, ct)
	}
	if len(cut.Failback.Topics) > 0 {
		done, err := sendFailback(ctx, cfg.Old, cut)
		if err != nil {
			return nil, fmt.Errorf("cutting the topics on the old primary %s (the tails are in quarantine; run the failback again): %w", cfg.OldBootstrap, err)
		}
		for _, ft := range done.Topics {
			out = append(out, cutRows(ft)...)
		}
	}
	if err := awaitMirroring(ctx, cfg, out); err != nil {
		return out, err
	}
	return out, nil
}

// promoteInfo asks the new primary for its promoted topics and their records,
// waiting (up to cfg.Timeout) for the leaders to report them after a fresh promote.
func promoteInfo(ctx context.Context, cfg FailbackConfig) ([]FailbackTopic, error) {
	req := Request{Op: OpFailback, Link: cfg.Link, Topics: cfg.Topics, All: cfg.All, Failback: &FailbackArgs{Phase: PhaseInfo}}
	deadline := time.Now().Add(cfg.Timeout)
	for {
		resp, err := sendFailback(ctx, cfg.New, req)
		if err != nil {
			return nil, fmt.Errorf("the new primary %s: %w", cfg.NewBootstrap, err)
		}
		if len(resp.Topics) == 0 {
			return nil, fmt.Errorf("link %s has no promoted mirror topic on the new primary: promote there first", cfg.Link)
		}
		missing := ""
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if p.MirroredEnd < 0 && missing == "" {
					missing = fmt.Sprintf("%s-%d", t.Topic, p.Partition)
				}
			}
		}
		if missing == "" {
			return resp.Topics, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the new primary has not recorded the promote of %s yet (its leader reports it once it took the promote): retry", missing)
		}
		if err := sleepCtx(ctx, 200*time.Millisecond); err != nil {
			return nil, err
		}
	}
}

// setAside computes each partition's divergence point on the fenced topic and copies
// the tail above it into the quarantine; it returns the cut to record.
func setAside(ctx context.Context, cfg FailbackConfig, info, fenced FailbackTopic) (FailbackTopic, error) {
	topic := info.Topic
	oldAdm, newAdm := kadm.NewClient(cfg.Old), kadm.NewClient(cfg.New)
	ends, err := settledEnds(ctx, oldAdm, topic, cfg.Timeout)
	if err != nil {
		return FailbackTopic{}, err
	}
	if open, err := openTransaction(ctx, oldAdm, topic, ends); err != nil {
		return FailbackTopic{}, err
	} else if open != "" {
		return FailbackTopic{}, fmt.Errorf("%s on the old primary: its producer must commit or abort it (or let transaction.timeout.ms abort it) before the cut, "+
			"or its marker would land in the mirror; the topic stays fenced (read-only): run the failback again then", open)
	}
	oldStarts, err := oldAdm.ListStartOffsets(ctx, topic)
	if err != nil {
		return FailbackTopic{}, fmt.Errorf("log starts of %s on the old primary: %w", topic, err)
	}
	newStarts, err := newAdm.ListStartOffsets(ctx, topic)
	if err != nil {
		return FailbackTopic{}, fmt.Errorf("log starts of %s on the new primary: %w", topic, err)
	}
	if len(ends) != len(info.Partitions) {
		return FailbackTopic{}, fmt.Errorf("topic %q has %d partitions on the old primary, %d on the new one", topic, len(ends), len(info.Partitions))
	}
	if err := awaitReplicated(ctx, newAdm, info, cfg.Timeout); err != nil {
		return FailbackTopic{}, err
	}
	ct := FailbackTopic{Topic: topic}
	created := false
	for _, ip := range info.Partitions {
		p := ip.Partition
		oc, err := lookupPartition(ctx, cfg.Old, topic, p)
		if err != nil {
			return FailbackTopic{}, fmt.Errorf("the old primary %s: %w", cfg.OldBootstrap, err)
		}
		nc, err := lookupPartition(ctx, cfg.New, topic, p)
		if err != nil {
			return FailbackTopic{}, fmt.Errorf("the new primary %s: %w", cfg.NewBootstrap, err)
		}
		epochEnd := int64(-1)
		if ip.SourceEpoch >= 0 {
			if epochEnd, err = oc.epochEnd(ctx, ip.SourceEpoch); err != nil {
				return FailbackTopic{}, err
			}
		}
		oldStart := offsetOf(oldStarts, topic, p)
		d, err := divergence(ctx, oc, nc, ip.MirroredEnd, epochEnd, ends[p], max(oldStart, offsetOf(newStarts, topic, p)))
		if err != nil {
			return FailbackTopic{}, fmt.Errorf("divergence point of %s-%d: %w", topic, p, err)
		}
		// The tail is what the old primary holds at or above d.
		from := max(d, oldStart)
		n, err := tailRecords(ctx, oc, from, ends[p])
		if err != nil {
			return FailbackTopic{}, fmt.Errorf("the tail of %s-%d above %d: %w", topic, p, d, err)
		}
		if n > 0 {
			if !created {
				if err := ensureQuarantine(ctx, cfg.Old, fenced.Quarantine, int32(len(info.Partitions))); err != nil {
					return FailbackTopic{}, err
				}
				created = true
			}
			have, err := quarantined(ctx, oldAdm, fenced.Quarantine, p)
			if err != nil {
				return FailbackTopic{}, err
			}
			if err := copyTail(ctx, cfg.Old, topic, p, from, ends[p], n, have, fenced.Quarantine); err != nil {
				return FailbackTopic{}, err
			}
			if have, err = quarantined(ctx, oldAdm, fenced.Quarantine, p); err != nil {
				return FailbackTopic{}, err
			} else if have != n {
				return FailbackTopic{}, fmt.Errorf("quarantine %s-%d holds %d records, the tail of %s-%d above %d has %d: nothing was cut",
					fenced.Quarantine, p, have, topic, p, d, n)
			}
		}
		ct.Partitions = append(ct.Partitions, FailbackPartition{Partition: p, CutTo: d, Quarantined: n, PromoteEpoch: -1, MirroredEnd: -1, SourceEpoch: -1})
	}
	return ct, nil
}

// settledEnds returns the high watermarks of topic's partitions once they stopped
// moving: the fence made the topic read-only, and what was appended before it
// reaches the followers.
func settledEnds(ctx context.Context, adm *kadm.Client, topic string, timeout time.Duration) (map[int32]int64, error) {
	var last map[int32]int64
	stable := 0
	deadline := time.Now().Add(timeout)
	for {
		prev := last
		e, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			return nil, fmt.Errorf("ends of %s on the old primary: %w", topic, err)
		}
		cur := map[int32]int64{}
		var perr error
		e.Each(func(o kadm.ListedOffset) {
			if o.Topic == topic {
				cur[o.Partition] = o.Offset
				if o.Err != nil && perr == nil {
					perr = fmt.Errorf("%s-%d: %w", topic, o.Partition, o.Err)
				}
			}
		})
		switch {
		case perr != nil:
			stable = 0
		case last != nil && fmt.Sprint(cur) == fmt.Sprint(last):
			stable++
		default:
			stable = 0
		}
		if stable >= 2 {
			return cur, nil
		}
		if time.Now().After(deadline) {
			if perr != nil {
				return nil, fmt.Errorf("the ends of %s on the old primary did not settle within %v: %w", topic, timeout, perr)
			}
			return nil, fmt.Errorf("the ends of %s on the old primary did not settle within %v: the last two readings were %v and %v", topic, timeout, prev, cur)
		}
		last = cur
		if err := sleepCtx(ctx, 200*time.Millisecond); err != nil {
			return nil, err
		}
	}
}

// awaitReplicated waits until the new primary's high watermark of each partition of
// info is at its recorded mirrored end: the batches compared below it must be
// readable there (a promote's cut can leave the high watermark below it for a moment).
func awaitReplicated(ctx context.Context, adm *kadm.Client, info FailbackTopic, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		ends, err := adm.ListEndOffsets(ctx, info.Topic)
		short := ""
		if err != nil {
			short = err.Error()
		} else {
			for _, p := range info.Partitions {
				o, ok := ends.Lookup(info.Topic, p.Partition)
				switch {
				case !ok:
					short = fmt.Sprintf("%s-%d: not in the ListOffsets answer", info.Topic, p.Partition)
				case o.Err != nil:
					short = fmt.Sprintf("%s-%d: %v", info.Topic, p.Partition, o.Err)
				case o.Offset < p.MirroredEnd:
					short = fmt.Sprintf("%s-%d: high watermark %d, mirrored end %d", info.Topic, p.Partition, o.Offset, p.MirroredEnd)
				}
				if short != "" {
					break
				}
			}
		}
		if short == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the new primary's high watermark did not reach the promote's record within %v: %s", timeout, short)
		}
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
}

// openTransaction names the first partition of topic whose last stable offset is
// below its end in ends (a transaction still open there), "" when none is.
func openTransaction(ctx context.Context, adm *kadm.Client, topic string, ends map[int32]int64) (string, error) {
	lsos, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		return "", fmt.Errorf("last stable offsets of %s: %w", topic, err)
	}
	open := ""
	lsos.Each(func(o kadm.ListedOffset) {
		if e, ok := ends[o.Partition]; ok && o.Topic == topic && o.Err == nil && o.Offset < e && open == "" {
			open = fmt.Sprintf("a transaction is open on %s-%d (last stable offset %d, end %d)", topic, o.Partition, o.Offset, e)
		}
	})
	return open, nil
}

func offsetOf(l kadm.ListedOffsets, topic string, p int32) int64 {
	if o, ok := l.Lookup(topic, p); ok && o.Err == nil {
		return o.Offset
	}
	return 0
}

// cutRows are a cut topic's partitions as failback prints them.
func cutRows(ft FailbackTopic) []PartitionStatus {
	var out []PartitionStatus
	for _, p := range ft.Partitions {
		q := ""
		if p.Quarantined > 0 {
			q = ft.Quarantine
		}
		out = append(out, PartitionStatus{Topic: ft.Topic, Partition: p.Partition, State: ft.State, SourceEnd: -1, End: -1,
			WritableFrom: -1, TruncatedTo: p.CutTo, QuarantinedRecords: p.Quarantined, Quarantine: q})
	}
	return out
}

// awaitMirroring waits until every failed-back partition's leader on the old primary
// took the cut (its log end is at the cut or past it, mirroring) and fills the rows'
// state and end.
func awaitMirroring(ctx context.Context, cfg FailbackConfig, rows []PartitionStatus) error {
	deadline := time.Now().Add(cfg.Timeout)
	for {
		ps, refused, err := StatusEveryBroker(ctx, cfg.Old, cfg.Link)
		if err != nil {
			return fmt.Errorf("link status on the old primary %s: %w", cfg.OldBootstrap, err)
		}
		waiting := "" // the first partition not mirroring yet, and why
		for i := range rows {
			j := slices.IndexFunc(ps, func(s PartitionStatus) bool { return s.Topic == rows[i].Topic && s.Partition == rows[i].Partition })
			if j < 0 {
				if waiting == "" {
					waiting = fmt.Sprintf("%s-%d: no broker reports it", rows[i].Topic, rows[i].Partition)
				}
				continue
			}
			rows[i].State, rows[i].End, rows[i].SourceEnd, rows[i].Leader = ps[j].State, ps[j].End, ps[j].SourceEnd, ps[j].Leader
			if st := metadata.MirrorState(ps[j].State); st == metadata.MirrorFailingBack || ps[j].End < rows[i].TruncatedTo ||
				ps[j].SourceEnd < 0 && st == metadata.MirrorMirroring {
				if waiting == "" {
					waiting = fmt.Sprintf("%s-%d on leader %d: state %s, end %d, cut to %d, source end %d, error %q",
						rows[i].Topic, rows[i].Partition, ps[j].Leader, ps[j].State, ps[j].End, rows[i].TruncatedTo, ps[j].SourceEnd, ps[j].Error)
				}
			}
		}
		if waiting == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the failed-back partitions did not start mirroring on the old primary %s within %v (see runnel link status %s): %s%s",
				cfg.OldBootstrap, cfg.Timeout, cfg.Link, waiting, refusedNote(refused))
		}
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
}

// StatusEveryBroker runs `link status` on every broker of cl's cluster and merges
// their partitions (each broker answers for those it leads). A broker that does not
// answer is left out (a node down leads nothing the metadata would not have moved)
// and named in refused ("node N: why"), for the caller's errors; it fails only when
// no broker answers.
func StatusEveryBroker(ctx context.Context, cl *kgo.Client, link string) (ps []PartitionStatus, refused []string, err error) {
	req := Request{Op: OpStatus, Link: link}
	meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		return nil, nil, err
	}
	var firstErr error
	answered := false
	for _, b := range meta.Brokers {
		resp, err := sendChecked(ctx, cl.Broker(int(b.NodeID)), req)
		if err != nil {
			refused = append(refused, fmt.Sprintf("node %d: %v", b.NodeID, err))
			if firstErr == nil {
				firstErr = fmt.Errorf("node %d: %w", b.NodeID, err)
			}
			continue
		}
		answered = true
		ps = append(ps, resp.Partitions...)
	}
	if !answered {
		if firstErr == nil {
			firstErr = errors.New("the metadata lists no broker")
		}
		return nil, refused, firstErr
	}
	return ps, refused, nil
}

// refusedNote is StatusEveryBroker's refused brokers as the end of an error.
func refusedNote(refused []string) string {
	if len(refused) == 0 {
		return ""
	}
	return fmt.Sprintf(" (link status unanswered by %s)", strings.Join(refused, "; "))
}

func sendChecked(ctx context.Context, r Requester, req Request) (Response, error) {
	resp, err := Send(ctx, r, req)
	if err != nil {
		return resp, err
	}
	if resp.Error != "" {
		return resp, errors.New(resp.Error)
	}
	return resp, nil
}

func sendFailback(ctx context.Context, r Requester, req Request) (*FailbackArgs, error) {
	resp, err := sendChecked(ctx, r, req)
	if err != nil {
		return nil, err
	}
	if resp.Failback == nil {
		return nil, fmt.Errorf("the cluster answered link failback without its result (an older version?)")
	}
	return resp.Failback, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// SwitchoverConfig is a planned move of link Link's topics (Topics, or All) from its
// source (Source, a client of it) to Dest, the cluster the link lives on, with the
// producers paused by the operator.
type SwitchoverConfig struct {
	Link   string
	Topics []string
	All    bool
	Dest   *kgo.Client
	Source *kgo.Client
	// SourceBootstrap is Source's bootstrap (the link's source), named in errors.
	SourceBootstrap string
	// DestBootstrap and DestProps are how the source's new link reaches Dest.
	DestBootstrap string
	DestProps     map[string]string
	// Timeout bounds each wait: lag 0, the promote, the failback's.
	Timeout time.Duration
}

// SwitchoverResult is what a switchover did.
type SwitchoverResult struct {
	// Ends are the source's ends the destination caught up with before the promote.
	Ends map[string]map[int32]int64
	// Promoted: per partition of the destination, where its writes start.
	Promoted []PartitionStatus
	// FailedBack: per partition of the source, the failback's cut and quarantine.
	FailedBack []PartitionStatus
}

// RunSwitchover resumes the link if paused, waits until the destination holds every
// record of the source and no transaction is open there (lag 0, twice in a row: the
// producers are paused), promotes the topics on the
// destination, and fails the source back to follow it. Nothing the source held is
// lost: it is all on the destination below the promote's cut, and a record the cut
// removed (a transaction the source left open) is in the source's quarantine.
func RunSwitchover(ctx context.Context, cfg SwitchoverConfig) (SwitchoverResult, error) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = time.Minute
	}
	var res SwitchoverResult
	// The reverse step runs a link on the source: check it can before anything
	// changes (an Apache Kafka source cannot; promote instead).
	if _, err := sendChecked(ctx, cfg.Source, Request{Op: OpList}); err != nil {
		return res, fmt.Errorf("the source %s cannot follow this cluster (switchover needs a Runnel source; use runnel link promote): %w", cfg.SourceBootstrap, err)
	}
	ps, _, err := StatusEveryBroker(ctx, cfg.Dest, cfg.Link)
	if err != nil {
		return res, err
	}
	topics := cfg.Topics
	if cfg.All {
		for _, p := range ps {
			if p.State != string(metadata.MirrorPromoted) && !slices.Contains(topics, p.Topic) {
				topics = append(topics, p.Topic)
			}
		}
	}
	if len(topics) == 0 {
		return res, fmt.Errorf("link %s has no mirror topic to switch over", cfg.Link)
	}
	slices.Sort(topics)
	// A paused link would never catch up: the move resumes it (the whole link with
	// All, else the topics).
	resume := Request{Op: OpResume, Link: cfg.Link, Topics: cfg.Topics}
	if _, err := sendChecked(ctx, cfg.Dest, resume); err != nil {
		return res, fmt.Errorf("resuming the link before the switchover: %w", err)
	}
	if res.Ends, err = awaitNoLag(ctx, cfg, topics); err != nil {
		return res, err
	}
	if _, err := sendChecked(ctx, cfg.Dest, Request{Op: OpPromote, Link: cfg.Link, Topics: topics}); err != nil {
		return res, fmt.Errorf("promoting on the destination: %w", err)
	}
	deadline := time.Now().Add(cfg.Timeout)
	for {
		ps, refused, err := StatusEveryBroker(ctx, cfg.Dest, cfg.Link)
		if err != nil {
			return res, err
		}
		res.Promoted = slices.DeleteFunc(ps, func(p PartitionStatus) bool { return !slices.Contains(topics, p.Topic) })
		i := slices.IndexFunc(res.Promoted, func(p PartitionStatus) bool { return p.State != string(metadata.MirrorPromoted) })
		if i < 0 {
			break
		}
		if time.Now().After(deadline) {
			p := res.Promoted[i]
			return res, fmt.Errorf("the destination did not take the promote within %v: %s-%d on leader %d is %s, error %q%s",
				cfg.Timeout, p.Topic, p.Partition, p.Leader, p.State, p.Error, refusedNote(refused))
		}
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			return res, err
		}
	}
	for i := range res.Promoted {
		res.Promoted[i].TruncatedTo = res.Promoted[i].WritableFrom
	}
	res.FailedBack, err = RunFailback(ctx, FailbackConfig{Link: cfg.Link, Topics: topics, Old: cfg.Source, New: cfg.Dest,
		OldBootstrap: cfg.SourceBootstrap, NewBootstrap: cfg.DestBootstrap, NewProps: cfg.DestProps, Timeout: cfg.Timeout})
	return res, err
}

// awaitNoLag waits until the destination's end of every partition of topics is the
// source's, in two readings in a row (the producers are paused), and returns them.
func awaitNoLag(ctx context.Context, cfg SwitchoverConfig, topics []string) (map[string]map[int32]int64, error) {
	sadm, dadm := kadm.NewClient(cfg.Source), kadm.NewClient(cfg.Dest)
	deadline := time.Now().Add(cfg.Timeout)
	var last string
	for {
		se, err1 := sadm.ListEndOffsets(ctx, topics...)
		de, err2 := dadm.ListEndOffsets(ctx, topics...)
		behind := ""
		ends := map[string]map[int32]int64{}
		if err := errors.Join(err1, err2); err != nil {
			behind = err.Error()
		} else {
			se.Each(func(o kadm.ListedOffset) {
				if ends[o.Topic] == nil {
					ends[o.Topic] = map[int32]int64{}
				}
				ends[o.Topic][o.Partition] = o.Offset
				d, ok := de.Lookup(o.Topic, o.Partition)
				switch {
				case o.Err != nil:
					behind = fmt.Sprintf("%s-%d on the source: %v", o.Topic, o.Partition, o.Err)
				case !ok:
					behind = fmt.Sprintf("%s-%d: not in the destination's ListOffsets answer", o.Topic, o.Partition)
				case d.Err != nil:
					behind = fmt.Sprintf("%s-%d on the destination: %v", o.Topic, o.Partition, d.Err)
				case d.Offset != o.Offset:
					behind = fmt.Sprintf("%s-%d: destination end %d, source end %d", o.Topic, o.Partition, d.Offset, o.Offset)
				}
			})
			// A transaction open on the source would be cut by the promote (and set
			// aside by the failback): wait for its producer to end it.
			for _, t := range topics {
				if behind != "" {
					break
				}
				open, err := openTransaction(ctx, sadm, t, ends[t])
				switch {
				case err != nil:
					behind = err.Error()
				case open != "":
					behind = open + " on the source"
				}
			}
		}
		if behind == "" {
			if cur := fmt.Sprint(ends); cur == last {
				return ends, nil
			} else {
				last = cur
			}
		} else {
			last = ""
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the destination did not catch up with the source %s within %v (are the producers paused?): %s", cfg.SourceBootstrap, cfg.Timeout, behind)
		}
		if err := sleepCtx(ctx, 200*time.Millisecond); err != nil {
			return nil, err
		}
	}
}
