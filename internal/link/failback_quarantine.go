package link

// The quarantine of a failback: the old primary's records above a partition's
// divergence point (its tail, never mirrored to the new primary) are copied, before
// anything is cut, into partition p of an ordinary topic of the old primary,
// <topic>.quarantine.<failback start ms> (controller.QuarantineTopic), that users
// consume like any other: same keys, values, headers and timestamps, plus the headers
// runnel.quarantine.topic, runnel.quarantine.partition and runnel.quarantine.offset
// saying where each record was. The topic keeps its records for ever
// (retention.ms=-1, retention.bytes=-1). Every data record is copied as stored
// (read_uncommitted: records of aborted or still open transactions too; markers are
// not records).
//
// Idempotence: the fenced topic is read-only, so its tail does not change between
// runs; quarantine partition p holds only what the failbacks of that start copied,
// in order, so a run that finds k records there copies the tail from its (k+1)th
// record on, and nothing is quarantined twice.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Quarantine record headers.
const (
	HeaderQuarantineTopic     = "runnel.quarantine.topic"
	HeaderQuarantinePartition = "runnel.quarantine.partition"
	HeaderQuarantineOffset    = "runnel.quarantine.offset"
)

// tailRecords counts the data records of the batches of c in [from, to): what the
// quarantine of that tail holds once copied.
func tailRecords(ctx context.Context, c *clusterPartition, from, to int64) (int64, error) {
	var n int64
	for off := from; off < to; {
		bs, _, err := c.fetch(ctx, off, 8<<20)
		if err != nil {
			return 0, err
		}
		moved := false
		for _, b := range bs {
			if b.NextOffset() <= off || b.BaseOffset() >= to {
				continue
			}
			if b.BaseOffset() < from {
				return 0, fmt.Errorf("%s-%d: a batch spans the divergence point %d (offsets %d-%d)", c.topic, c.partition, from, b.BaseOffset(), b.LastOffset())
			}
			if !b.IsControl() {
				n += int64(b.RecordCount())
			}
			off, moved = b.NextOffset(), true
		}
		if !moved {
			return 0, fmt.Errorf("%s-%d: no batch at offset %d below %d", c.topic, c.partition, off, to)
		}
	}
	return n, nil
}

// ensureQuarantine creates the quarantine topic on cl's cluster (partitions like
// the topic's, the cluster's replication factor, kept for ever); it may exist. With
// brokers down, fewer than the default replication factor, it gets one replica per
// live broker rather than stop the failback.
func ensureQuarantine(ctx context.Context, cl *kgo.Client, name string, partitions int32) error {
	adm := kadm.NewClient(cl)
	forever := "-1"
	configs := map[string]*string{"retention.ms": &forever, "retention.bytes": &forever}
	_, err := adm.CreateTopic(ctx, partitions, -1, configs, name)
	if errors.Is(err, kerr.InvalidReplicationFactor) {
		var brokers kadm.BrokerDetails
		if brokers, err = adm.ListBrokers(ctx); err == nil {
			_, err = adm.CreateTopic(ctx, partitions, int16(max(1, len(brokers))), configs, name)
		}
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("creating the quarantine topic %s: %w", name, err)
	}
	return nil
}

// quarantined returns how many records quarantine partition p holds.
func quarantined(ctx context.Context, adm *kadm.Client, name string, p int32) (int64, error) {
	var start, end int64 = -1, -1
	for deadline := time.Now().Add(10 * time.Second); ; {
		s, err1 := adm.ListStartOffsets(ctx, name)
		e, err2 := adm.ListEndOffsets(ctx, name)
		if err := errors.Join(err1, err2); err == nil {
			if o, ok := s.Lookup(name, p); ok && o.Err == nil {
				start = o.Offset
			}
			if o, ok := e.Lookup(name, p); ok && o.Err == nil {
				end = o.Offset
			}
			if start >= 0 && end >= 0 {
				return end - start, nil
			}
		} else if time.Now().After(deadline) {
			return 0, fmt.Errorf("offsets of the quarantine %s-%d: %w", name, p, err)
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("offsets of the quarantine %s-%d: not available", name, p)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// copyTail copies the tail of topic-partition [from, to) on cl's cluster, n data
// records, into quarantine partition p, skipping the first skip (copied by an earlier
// run). It returns once every record is acknowledged by all in-sync replicas.
func copyTail(ctx context.Context, cl *kgo.Client, topic string, p int32, from, to int64, n, skip int64, quarantine string) error {
	if skip >= n {
		return nil
	}
	opts := append(cl.Opts(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().At(from)}}),
		kgo.FetchIsolationLevel(kgo.ReadUncommitted()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic(quarantine))
	qc, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer qc.Close()
	var seen int64
	var produceErr error
	for seen < n {
		fs := qc.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("reading the tail of %s-%d: %d of %d records: %w", topic, p, seen, n, err)
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			return fmt.Errorf("reading the tail of %s-%d: %w", topic, p, ferr)
		}
		var batch []*kgo.Record
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < from || r.Offset >= to || seen >= n {
				return
			}
			seen++
			if seen <= skip {
				return
			}
			hs := append(append([]kgo.RecordHeader(nil), r.Headers...),
				kgo.RecordHeader{Key: HeaderQuarantineTopic, Value: []byte(topic)},
				kgo.RecordHeader{Key: HeaderQuarantinePartition, Value: []byte(strconv.Itoa(int(p)))},
				kgo.RecordHeader{Key: HeaderQuarantineOffset, Value: []byte(strconv.FormatInt(r.Offset, 10))})
			batch = append(batch, &kgo.Record{Topic: quarantine, Partition: p, Key: r.Key, Value: r.Value, Headers: hs, Timestamp: r.Timestamp})
		})
		if len(batch) > 0 {
			if err := qc.ProduceSync(ctx, batch...).FirstErr(); err != nil {
				produceErr = err
				break
			}
		}
	}
	if produceErr != nil {
		return fmt.Errorf("writing the tail of %s-%d to the quarantine %s: %w", topic, p, quarantine, produceErr)
	}
	return nil
}
