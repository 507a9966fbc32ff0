package mirror

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
func (w *worker) commit(ctx context.Context, raw []*kgo.Record) error {
	ctx, cancel := context.WithTimeout(ctx, txnTimeout)
	defer cancel()
	p := w.prepare(raw)
	if err := w.beginTxn(); err != nil {
		return fmt.Errorf("begin transaction for %s on the target: %w", w.tp, err)
	}
	if err := w.produceAll(ctx, p.out); err != nil {
		return w.abort(ctx, err)
	}
	firstTouched := w.omap.lastChunk()
	for i, t := range p.out {
		w.omap.add(p.srcOffs[i], t.Offset)
	}
	now := time.Now()
	w.advance(p, now)
	prog, cps := w.progressRecords(firstTouched, now)
	if err := w.produceAll(ctx, prog); err != nil {
		return w.abort(ctx, err)
	}
	if err := w.endTxn(ctx, kgo.TryCommit); err != nil {
		return fmt.Errorf("commit transaction for %s on the target (it may or may not have committed): %w", w.tp, err)
	}
	w.trimmed = nil
	for _, c := range cps {
		w.written[c.Group] = c
		if w.m.gsync != nil {
			w.m.gsync.translated(c)
		}
	}
	w.publish(now)
	return nil
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
	if hw <= p.next {
		w.behindFrom = time.Time{}
	} else if !p.lastTime.IsZero() {
		// The next record is no older than the last one taken: an upper bound.
		w.behindFrom = p.lastTime
	}
	w.st.SourceEnd = max(hw, p.next)
	w.st.LagRecords = max(0, hw-p.next)
	w.st.LagSeconds = lagSeconds(w.st.LagRecords, w.behindFrom, now)
	w.mu.Unlock()
}

func lagSeconds(lagRecords int64, behindFrom, now time.Time) float64 {
	if lagRecords <= 0 || behindFrom.IsZero() {
		return 0
	}
	return max(0, now.Sub(behindFrom).Seconds())
}

// progressRecords builds the progress records of a transaction, and the group
// checkpoints among them.
func (w *worker) progressRecords(firstTouched int, now time.Time) ([]*kgo.Record, []Checkpoint) {
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
	for g, src := range w.takeGroups() {
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
