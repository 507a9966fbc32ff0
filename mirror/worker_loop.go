package mirror

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/runnel-io/runnel/client"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A transaction takes at most txnMaxRecords records and txnMaxBytes bytes of fetched
// data; under load a worker commits as fast as its transactions go, so a batch grows
// with the backlog and the added latency is about one transaction.
const (
	txnMaxRecords = 20000
	txnMaxBytes   = 16 << 20
	// txnTimeout bounds one transaction, records and commit.
	txnTimeout = 30 * time.Second
)

// loop mirrors until stop closes (errStopped) or something fails (any other
// error: the caller starts again from the target's committed position).
func (w *worker) loop(ctx context.Context) error {
	ctx, cancel := w.stopContext(ctx)
	defer cancel()
	hb := time.NewTicker(w.m.cfg.Heartbeat)
	defer hb.Stop()
	last := time.Now()
	for {
		var recs []*kgo.Record
		select {
		case <-w.stop:
			return errStopped
		case id := <-w.recreated:
			if id != w.st.TopicID {
				return fmt.Errorf("source topic %s has a new topic id %s (was %s)", w.tp.Topic, id, w.st.TopicID)
			}
			continue
		case b := <-w.inbox:
			if b.gen != w.gen {
				continue // fetched before the last seek
			}
			if b.err != nil {
				return w.fetchError(b.err)
			}
			recs = b.recs
		case now := <-hb.C:
			if now.Sub(last) < w.m.cfg.Heartbeat && !w.groupsPending() {
				continue
			}
			w.maybeTrim(ctx, now)
		}
		recs, err := w.drain(recs)
		if err != nil {
			return err
		}
		if err := w.commit(ctx, recs); err != nil {
			if isFenced(err) {
				return fmt.Errorf("%w: %v", errFenced, err)
			}
			return err
		}
		last = time.Now()
	}
}

// drain adds what else is in the inbox, up to one transaction's worth.
func (w *worker) drain(recs []*kgo.Record) ([]*kgo.Record, error) {
	bytes := 0
	for _, r := range recs {
		bytes += len(r.Key) + len(r.Value)
	}
	for len(recs) < txnMaxRecords && bytes < txnMaxBytes {
		select {
		case b := <-w.inbox:
			if b.gen != w.gen {
				continue
			}
			if b.err != nil {
				return nil, w.fetchError(b.err)
			}
			for _, r := range b.recs {
				bytes += len(r.Key) + len(r.Value)
			}
			recs = append(recs, b.recs...)
		default:
			return recs, nil
		}
	}
	return recs, nil
}

// fetchError turns a fetch error into a restart; init then finds out whether the
// source lost records (an out-of-range offset, a re-created topic).
func (w *worker) fetchError(err error) error {
	if errors.Is(err, kerr.OffsetOutOfRange) {
		return fmt.Errorf("fetching %s at offset %d from the source: %w", w.tp, w.st.Next, err)
	}
	return fmt.Errorf("fetching %s from the source: %w", w.tp, err)
}

// pending is one transaction in the making.
type pending struct {
	out      []*kgo.Record // target records, in source order
	srcOffs  []int64       // out[i] came from source offset srcOffs[i]
	next     int64         // Next after this transaction
	loops    int64
	bytes    int64
	lastTime time.Time // timestamp of the last record taken
}

// prepare filters raw source records into target records: control records, records
// already mirrored (refetched) and records that have been on the target are gaps.
func (w *worker) prepare(raw []*kgo.Record) pending {
	p := pending{next: w.st.Next}
	for _, r := range raw {
		if r.Offset < p.next {
			continue
		}
		p.next = r.Offset + 1
		if r.Attrs.IsControl() {
			continue
		}
		p.lastTime = r.Timestamp
		if hasBeenOn(r, w.m.tgtID) {
			p.loops++
			continue
		}
		t := w.targetRecord(r)
		p.out = append(p.out, t)
		p.srcOffs = append(p.srcOffs, r.Offset)
		p.bytes += recordBytes(t)
	}
	return p
}

func recordBytes(r *kgo.Record) int64 {
	n := len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return int64(n)
}

// commit writes one transaction: the records, then (their target offsets known) the
// state, the map chunks they touched, trimmed chunks' tombstones and the group
// checkpoints they allow. With no records it is a heartbeat.
//
// Under ExactlyOnce, once a transaction of this owner has placed records, the next
// transaction's records are expected right after them and their commit marker, and
// commitPredicted writes the records and the state built on that expectation
// together, in one round trip instead of two; it commits only if every record
// landed where expected, and otherwise aborts and leaves it to the sequential path.
func (w *worker) commit(ctx context.Context, raw []*kgo.Record) error {
	ctx, cancel := context.WithTimeout(ctx, txnTimeout)
	defer cancel()
	p := w.prepare(raw)
	if w.canPredict(p) {
		done, err := w.commitPredicted(ctx, p)
		if done || err != nil {
			return err
		}
	}
	if err := w.beginTxn(); err != nil {
		return fmt.Errorf("begin transaction for %s on the target: %w", w.tp, err)
	}
	if err := w.produceAll(ctx, p.out); err != nil {
		return w.abort(ctx, err)
	}
	w.countDuplicates(p)
	firstTouched := w.omap.lastChunk()
	for i, t := range p.out {
		w.omap.add(p.srcOffs[i], t.Offset)
	}
	now := time.Now()
	w.advance(p, now)
	groups := w.takeGroups()
	prog, cps := w.progressRecords(firstTouched, now, groups)
	if err := w.produceAll(ctx, prog); err != nil {
		return w.abort(ctx, err)
	}
	if err := w.endTxn(ctx, kgo.TryCommit); err != nil {
		return fmt.Errorf("commit transaction for %s on the target (it may or may not have committed): %w", w.tp, err)
	}
	w.committed(p, cps, now)
	return nil
}

// noPredict turns commitPredicted off (a measurement compares with and without).
var noPredict atomic.Bool

// A missed prediction (another writer in the target partition, a marker not yet
// written) turns prediction off for this many transactions with records.
const predictPause = 1000

// canPredict reports whether p's target offsets can be predicted: ExactlyOnce (a
// state written beside its records is only ever visible with them), and the target
// offset after this owner's last records known.
func (w *worker) canPredict(p pending) bool {
	if noPredict.Load() || w.m.cfg.Delivery != ExactlyOnce || len(p.out) == 0 || w.nextTarget < 0 {
		return false
	}
	if w.predictOff > 0 {
		w.predictOff--
		return false
	}
	return true
}

// commitPredicted writes p's records and its state together, the state built on
// the records landing at w.nextTarget on. done is false, with nothing committed and
// st and the map as before, when a record landed elsewhere: the transaction is
// aborted and the caller writes p sequentially.
func (w *worker) commitPredicted(ctx context.Context, p pending) (done bool, err error) {
	saved, savedRuns, savedFirst := w.st, slices.Clone(w.omap.runs), w.omap.first
	if err := w.beginTxn(); err != nil {
		return false, fmt.Errorf("begin transaction for %s on the target: %w", w.tp, err)
	}
	pred := w.nextTarget
	firstTouched := w.omap.lastChunk()
	for i, t := range p.out {
		t.Offset = pred + int64(i)
		w.omap.add(p.srcOffs[i], t.Offset)
	}
	now := time.Now()
	w.advance(p, now)
	groups := w.takeGroups()
	prog, cps := w.progressRecords(firstTouched, now, groups)
	all := append(slices.Clip(p.out), prog...)
	if err := w.produceAll(ctx, all); err != nil {
		return false, w.abort(ctx, err)
	}
	for i, t := range p.out {
		if t.Offset == pred+int64(i) {
			continue
		}
		// Nothing of this transaction becomes visible: st and the map go back to
		// what the target holds, and the group offsets are offered again.
		if err := w.endTxn(ctx, kgo.TryAbort); err != nil {
			return false, fmt.Errorf("abort transaction for %s on the target after a missed offset prediction: %w", w.tp, err)
		}
		w.st, w.omap.runs, w.omap.first = saved, savedRuns, savedFirst
		w.returnGroups(groups)
		w.nextTarget, w.predictOff = -1, predictPause
		w.missed.Add(1)
		w.m.log.Info("target offsets not as predicted: transaction aborted and written again in two steps",
			"topic", w.tp.Topic, "partition", w.tp.Partition, "target_topic", w.tgtTopic,
			"source_offset", p.srcOffs[i], "predicted_target_offset", pred+int64(i), "target_offset", t.Offset)
		return false, nil
	}
	if err := w.endTxn(ctx, kgo.TryCommit); err != nil {
		return false, fmt.Errorf("commit transaction for %s on the target (it may or may not have committed): %w", w.tp, err)
	}
	w.committed(p, cps, now)
	w.predicted.Add(1)
	return true, nil
}

// committed records a committed transaction p: trimmed chunks are gone, the group
// checkpoints are written, and, under ExactlyOnce, the next records are expected
// after p's last one and its commit marker.
func (w *worker) committed(p pending, cps []Checkpoint, now time.Time) {
	w.trimmed = nil
	for _, c := range cps {
		w.written[c.Group] = c
		if w.m.gsync != nil {
			w.m.gsync.translated(c)
		}
	}
	w.mu.Lock()
	w.behindFrom = nextBehind(w.hw, p, w.behindFrom)
	w.mu.Unlock()
	if n := len(p.out); n > 0 {
		w.txns.Add(1)
		if w.m.cfg.Delivery == ExactlyOnce {
			w.nextTarget = p.out[n-1].Offset + 2
		}
	}
	w.publish(now)
}

// countDuplicates counts, under AtLeastOnce on this owner's first write, the target
// records between the committed TargetEnd and that write's first offset: a previous
// owner (or this one before a restart) wrote them after its last state, and they are
// copies of source records from Next on, which this owner writes again. Counting
// from where the first write landed, rather than from the end offset listed at
// start, also takes in a dead owner's last batch that the target acknowledged only
// after the list. The count is kept in st, so it is committed with the state that
// moves TargetEnd past it; a crash before that counts the same range again from the
// same committed TargetEnd, never twice.
func (w *worker) countDuplicates(p pending) {
	if w.m.cfg.Delivery != AtLeastOnce || w.dupCounted || len(p.out) == 0 {
		return
	}
	w.dupCounted = true
	if first := p.out[0].Offset; w.st.TargetEnd >= 0 && first > w.st.TargetEnd {
		w.st.MaybeDuplicated += first - w.st.TargetEnd
		w.m.log.Warn("records written after the last committed position may be duplicated",
			"topic", w.tp.Topic, "partition", w.tp.Partition, "target_topic", w.tgtTopic,
			"next_offset", w.st.Next, "target_offsets", fmt.Sprintf("%d-%d", w.st.TargetEnd, first-1), "count", first-w.st.TargetEnd)
	}
}

// advance moves st past the transaction p.
func (w *worker) advance(p pending, now time.Time) {
	w.st.Next = p.next
	if n := len(p.out); n > 0 {
		w.st.TargetEnd = p.out[n-1].Offset + 1
	}
	w.st.Records += int64(len(p.out))
	w.st.Bytes += p.bytes
	w.st.Loops += p.loops
	w.st.Chunk = w.omap.lastChunk()
	w.st.Updated = now.UnixMilli()
	w.mu.Lock()
	hw := w.hw
	behind := nextBehind(hw, p, w.behindFrom)
	w.mu.Unlock()
	w.st.SourceEnd = max(hw, p.next)
	w.st.LagRecords = max(0, hw-p.next)
	w.st.LagSeconds = lagSeconds(w.st.LagRecords, behind, now)
}

// nextBehind is the timestamp of the oldest source record not yet committed once
// transaction p commits, given the source high watermark hw: none when p reaches
// hw; else the last record p takes (the next one is no older: an upper bound).
// behindFrom itself moves only when p has committed (committed): while a commit is
// stalled, lag in seconds keeps growing from the records it holds.
func nextBehind(hw int64, p pending, cur time.Time) time.Time {
	if hw <= p.next {
		return time.Time{}
	}
	if !p.lastTime.IsZero() {
		return p.lastTime
	}
	return cur
}

func lagSeconds(lagRecords int64, behindFrom, now time.Time) float64 {
	if lagRecords <= 0 || behindFrom.IsZero() {
		return 0
	}
	return max(0, now.Sub(behindFrom).Seconds())
}

// progressRecords builds the progress records of a transaction, and the group
// checkpoints among them.
func (w *worker) progressRecords(firstTouched int, now time.Time, groups map[string]int64) ([]*kgo.Record, []Checkpoint) {
	topic := ProgressTopic(w.m.cfg.Name)
	rec := func(key string, value []byte) *kgo.Record {
		return &kgo.Record{Topic: topic, Partition: 0, Key: []byte(key), Value: value}
	}
	state, _ := json.Marshal(&w.st)
	out := []*kgo.Record{rec(stateKey(w.tp), state)}
	if len(w.omap.runs) > 0 {
		for c := max(firstTouched, w.omap.first); c <= w.omap.lastChunk(); c++ {
			out = append(out, rec(chunkKeyOf(w.tp, w.st.Gen, c), encodeRuns(nil, w.omap.chunk(c))))
		}
	}
	for _, k := range w.trimmed {
		out = append(out, rec(chunkKeyOf(w.tp, k.gen, k.n), nil))
	}
	var cps []Checkpoint
	for g, src := range groups {
		tgt, ok := w.omap.translate(src, w.st.Next, w.st.TargetEnd)
		if !ok || tgt < 0 {
			continue
		}
		if old, seen := w.written[g]; seen && old.SourceOffset == src && old.TargetOffset == tgt {
			continue
		}
		c := Checkpoint{Group: g, Topic: w.tp.Topic, Partition: w.tp.Partition, TargetTopic: w.tgtTopic,
			SourceOffset: src, TargetOffset: tgt, Updated: now.UnixMilli()}
		v, _ := json.Marshal(&c)
		out = append(out, rec(checkpointKey(g, w.tp), v))
		cps = append(cps, c)
	}
	return out, cps
}

// produceAll produces rs and waits for every acknowledgement. The producer's
// buffer bounds what is in flight: under Error a full buffer is met by waiting for
// the records already sent (a mirror never drops or fails its own records).
func (w *worker) produceAll(ctx context.Context, rs []*kgo.Record) error {
	var failed error
	var mu = make(chan struct{}, 1)
	promise := func(r *kgo.Record, err error) {
		if err != nil {
			mu <- struct{}{}
			if failed == nil {
				failed = fmt.Errorf("produce to %s/%d on the target: %w", r.Topic, r.Partition, err)
			}
			<-mu
		}
	}
	for _, r := range rs {
		err := w.prod.Produce(ctx, r, promise)
		if errors.Is(err, client.ErrBufferFull) {
			if err = w.prod.Flush(ctx); err == nil {
				err = w.prod.Produce(ctx, r, promise)
			}
		}
		if err != nil {
			return fmt.Errorf("produce to %s/%d on the target: %w", r.Topic, r.Partition, err)
		}
	}
	if err := w.prod.Flush(ctx); err != nil {
		return fmt.Errorf("flush to the target: %w", err)
	}
	mu <- struct{}{}
	defer func() { <-mu }()
	return failed
}

// abort ends a failed transaction; the worker then reloads from the target.
func (w *worker) abort(ctx context.Context, cause error) error {
	if err := w.endTxn(ctx, kgo.TryAbort); err != nil {
		return fmt.Errorf("%w (and the abort failed: %v)", cause, err)
	}
	return cause
}

// publish makes the committed state visible to the collector and status.
func (w *worker) publish(now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.live = w.st
	_ = now
}

// offerGroup gives the worker a group's committed source offset for its partition,
// to checkpoint in its next transaction.
func (w *worker) offerGroup(group string, offset int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.groupsIn == nil {
		w.groupsIn = map[string]int64{}
	}
	w.groupsIn[group] = offset
}

func (w *worker) groupsPending() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.groupsIn) > 0
}

// returnGroups offers again the group offsets of an aborted transaction, unless a
// newer offer came meanwhile.
func (w *worker) returnGroups(groups map[string]int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for g, o := range groups {
		if _, newer := w.groupsIn[g]; !newer {
			if w.groupsIn == nil {
				w.groupsIn = map[string]int64{}
			}
			w.groupsIn[g] = o
		}
	}
}

// takeGroups returns the offered group offsets that this transaction can
// translate, leaving the others (past Next) for a later one.
func (w *worker) takeGroups() map[string]int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]int64{}
	for g, o := range w.groupsIn {
		if o <= w.st.Next {
			out[g] = o
			delete(w.groupsIn, g)
		}
	}
	return out
}
