package mirror

import (
	"context"
	"encoding/hex"
	"fmt"
	"time"
)

// init makes the worker the partition's owner on the target and loads its position:
// a fresh producer, the fence (ExactlyOnce), the progress read back read_committed,
// the source checked for lost records, the target topic ensured, and a seek.
func (w *worker) init(ctx context.Context) error {
	if w.prod != nil {
		w.prod.Close()
		w.prod = nil
	}
	ctx, cancel := w.stopContext(ctx)
	defer cancel()
	if err := w.m.targets.ensure(ctx, w.tp.Topic, w.tp.Partition+1); err != nil {
		return err
	}
	var err error
	if w.prod, err = w.newProducer(); err != nil {
		return fmt.Errorf("producer for %s: %w", w.tp, err)
	}
	if w.m.cfg.Delivery == ExactlyOnce {
		if err := w.fence(ctx); err != nil {
			if isFenced(err) {
				return fmt.Errorf("%w: %v", errFenced, err)
			}
			return err
		}
	}
	p, err := ReadProgress(ctx, w.m.cfg.Target, w.m.cfg.TargetOptions, w.m.cfg.Name)
	if err != nil {
		return err
	}
	if err := w.load(ctx, p); err != nil {
		return err
	}
	if w.m.cfg.Delivery == AtLeastOnce {
		if err := w.atLeastOnceBaseline(ctx); err != nil {
			return err
		}
	}
	w.nextTarget = -1
	w.gen++
	w.m.requestSeek(w.tp, seekReq{offset: w.st.Next, gen: w.gen})
	w.publish(time.Now())
	w.m.log.Info("partition started", "topic", w.tp.Topic, "partition", w.tp.Partition,
		"target_topic", w.tgtTopic, "next_offset", w.st.Next, "target_end", w.st.TargetEnd)
	return nil
}

// stopContext is ctx, also cancelled when the worker is told to stop.
func (w *worker) stopContext(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-w.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// load sets st and omap from the progress read, checking the source for data loss.
func (w *worker) load(ctx context.Context, p *Progress) error {
	id, start, err := w.sourceTopicState(ctx)
	if err != nil {
		return err
	}
	prev := p.States[w.tp]
	if prev == nil {
		w.st = PartitionState{Topic: w.tp.Topic, Partition: w.tp.Partition, TargetTopic: w.tgtTopic,
			TopicID: id, Next: start, TargetEnd: -1}
		w.omap = &offsetMap{}
	} else {
		w.st = *prev
		w.omap = p.offsetMap(w.tp, prev)
		w.trimmed = nil
		for _, k := range p.chunkKeys[w.tp] {
			if k.gen != prev.Gen {
				w.trimmed = append(w.trimmed, k) // a former topic's map: deleted on the next commit
			}
		}
		w.omap.first = firstChunk(p, w.tp, prev.Gen)
	}
	w.st.Owner, w.st.State, w.st.Error = w.m.owner, "running", ""
	w.written = map[string]Checkpoint{}
	for g, cps := range p.Checkpoint {
		if c, ok := cps[w.tp]; ok {
			w.written[g] = c
		}
	}
	if w.st.TopicID != id {
		// The old topic is gone: its end is known only as the mirror last saw it.
		lostMsg := fmt.Sprintf("no offset of the old topic was left unmirrored (its end when last seen: %d)", w.st.SourceEnd)
		if w.st.SourceEnd > w.st.Next {
			lostMsg = fmt.Sprintf("offsets %d to %d of the old topic were not mirrored and are lost (its end when last seen: %d)",
				w.st.Next, w.st.SourceEnd-1, w.st.SourceEnd)
		}
		if err := w.lost(fmt.Sprintf("source %s: the topic was re-created (topic id %s, was %s): %s; the new topic is mirrored from its offset %d",
			w.tp, id, w.st.TopicID, lostMsg, start), max(0, w.st.SourceEnd-w.st.Next)); err != nil {
			return err
		}
		w.restartTopic(id, start)
	}
	if start > w.st.Next {
		if err := w.lost(fmt.Sprintf("source %s offsets %d to %d were deleted (log start offset %d) before they were mirrored",
			w.tp, w.st.Next, start-1, start), start-w.st.Next); err != nil {
			return err
		}
		w.st.Next = start
	}
	return nil
}

// lost handles a data loss: an error under OnDataLossStop, else counted (n offsets).
func (w *worker) lost(msg string, n int64) error {
	if w.m.cfg.OnDataLoss == OnDataLossStop {
		return fmt.Errorf("%w: %s (mirror %s; restart with --on-data-loss skip to go on)", errDataLoss, msg, w.m.cfg.Name)
	}
	w.m.log.Warn("source data loss skipped", "topic", w.tp.Topic, "partition", w.tp.Partition, "detail", msg)
	w.st.Skipped += n
	return nil
}

// restartTopic starts a new offset map for a re-created source topic.
func (w *worker) restartTopic(id string, start int64) {
	for c := w.omap.first; len(w.omap.runs) > 0 && c <= w.omap.lastChunk(); c++ {
		w.trimmed = append(w.trimmed, chunkKey{w.st.Gen, c})
	}
	w.st.Gen++
	w.st.TopicID, w.st.Next, w.st.Chunk = id, start, 0
	w.omap = &offsetMap{}
}

// firstChunk is the lowest chunk index kept for generation gen.
func firstChunk(p *Progress, tp TopicPartition, gen int) int {
	first := -1
	for n := range p.chunks[tp][gen] {
		if first < 0 || n < first {
			first = n
		}
	}
	return max(first, 0)
}

// sourceTopicState returns the source topic's id and the partition's log start.
func (w *worker) sourceTopicState(ctx context.Context) (id string, start int64, err error) {
	td, err := w.m.srcAdm.ListTopics(ctx, w.tp.Topic)
	if err != nil {
		return "", 0, fmt.Errorf("source topic %s: %w", w.tp.Topic, err)
	}
	d, ok := td[w.tp.Topic]
	if !ok || d.Err != nil {
		return "", 0, fmt.Errorf("source topic %s: %v", w.tp.Topic, d.Err)
	}
	starts, err := w.m.srcAdm.ListStartOffsets(ctx, w.tp.Topic)
	if err != nil {
		return "", 0, fmt.Errorf("source log start of %s: %w", w.tp, err)
	}
	o, ok := starts.Lookup(w.tp.Topic, w.tp.Partition)
	if !ok || o.Err != nil {
		return "", 0, fmt.Errorf("source log start of %s: %v", w.tp, o.Err)
	}
	// The source end too, so that lag is known before the first fetch.
	if ends, err := w.m.srcAdm.ListEndOffsets(ctx, w.tp.Topic); err == nil {
		if e, ok := ends.Lookup(w.tp.Topic, w.tp.Partition); ok && e.Err == nil {
			w.mu.Lock()
			w.hw = max(w.hw, e.Offset)
			w.mu.Unlock()
		}
	}
	return hex.EncodeToString(d.ID[:]), o.Offset, nil
}

// atLeastOnceBaseline prepares the count of possible duplicates under AtLeastOnce.
// Without transactions a crash between a batch's records and its state leaves
// records past the committed TargetEnd, which the next owner writes again from the
// committed Next; commit counts them on this owner's first write (see
// countDuplicates). That needs a committed TargetEnd before anything is written: a
// partition with none yet (no record mirrored) takes the target partition's end now
// as its TargetEnd, and commits it before the seek, so that a crash before the
// first state cannot leave records nobody counts.
func (w *worker) atLeastOnceBaseline(ctx context.Context) error {
	w.dupCounted = false
	if w.st.TargetEnd >= 0 {
		return nil
	}
	ends, err := w.m.tgtAdm.ListEndOffsets(ctx, w.tgtTopic)
	if err != nil {
		return fmt.Errorf("end offset of %s/%d on the target (mirroring %s): %w", w.tgtTopic, w.tp.Partition, w.tp, err)
	}
	e, ok := ends.Lookup(w.tgtTopic, w.tp.Partition)
	if !ok {
		return fmt.Errorf("end offset of %s/%d on the target (mirroring %s): not listed", w.tgtTopic, w.tp.Partition, w.tp)
	}
	if e.Err != nil {
		return fmt.Errorf("end offset of %s/%d on the target (mirroring %s): %w", w.tgtTopic, w.tp.Partition, w.tp, e.Err)
	}
	w.st.TargetEnd = e.Offset
	if err := w.commit(ctx, nil); err != nil {
		return fmt.Errorf("committing the first state of %s (target %s/%d end %d): %w", w.tp, w.tgtTopic, w.tp.Partition, e.Offset, err)
	}
	return nil
}

// maybeTrim marks, at most once a minute, the map chunks whose records the target
// has deleted, to be tombstoned in the next commit.
func (w *worker) maybeTrim(ctx context.Context, now time.Time) {
	if now.Sub(w.lastTrim) < time.Minute || len(w.omap.runs) == 0 {
		return
	}
	w.lastTrim = now
	starts, err := w.m.tgtAdm.ListStartOffsets(ctx, w.tgtTopic)
	if err != nil {
		return
	}
	o, ok := starts.Lookup(w.tgtTopic, w.tp.Partition)
	if !ok || o.Err != nil {
		return
	}
	for _, c := range w.omap.trimBelow(o.Offset) {
		w.trimmed = append(w.trimmed, chunkKey{w.st.Gen, c})
	}
}
