//go:build linux

package server_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/internal/testutil"
)

// log.page.cache.tail.bytes reaches the partitions' logs: with a tail of 8 MiB, the
// durable bytes more than 8 MiB (plus the 4 MiB the log lets pile up between drops, a
// 2 MiB folio and one more MiB for the last acked request's batches) behind the end are
// out of the page cache and the last 8 MiB are in it; with -1 every byte stays
// (nothing else here needs the memory). Without the property's wiring the broker's
// logs would keep no tail at all, and the first case fails.
func TestPageCacheTailPropertyReachesTheLogs(t *testing.T) {
	const mib = 1 << 20
	const written = 24 * mib
	// overhead bounds the batch and record headers the segment file holds beyond the
	// values (48 batches of 8 records): the file is that much longer than written.
	const overhead = 64 << 10
	for _, tc := range []struct {
		tail                   string
		droppedBelow, keptFrom int64 // byte positions in the segment file
	}{
		{tail: "8388608", droppedBelow: written - 8*mib - 4*mib - 2*mib - mib, keptFrom: written - 8*mib + overhead},
		{tail: "-1", droppedBelow: 0, keptFrom: 0},
	} {
		t.Run("tail="+tc.tail, func(t *testing.T) {
			cfg := ownConfig(t, 1, "log.page.cache.tail.bytes="+tc.tail)
			testutil.SkipUnlessPageCacheDrops(t, cfg.DataDir)
			tn, _ := startOwn(t, cfg)
			topic := "page-cache-tail"
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err := adminOf(t, tn).CreateTopic(ctx, 1, 1, nil, topic)
			testutil.NoError(t, err, "create topic %s", topic)

			cl, err := kgo.NewClient(kgo.SeedBrokers(tn.addr()), kgo.DefaultProduceTopic(topic))
			testutil.NoError(t, err, "kgo.NewClient")
			defer cl.Close()
			// Random values, each its own, so that the producer's compression cannot
			// shrink a batch.
			const valueSize = 64 << 10
			var records []*kgo.Record
			for range written / valueSize {
				value := make([]byte, valueSize)
				rand.Read(value)
				records = append(records, &kgo.Record{Value: value})
			}
			// Eight records at a time, each batch acked (fsynced) before the next,
			// so that the log flushes, and drops, along the way.
			for i := 0; i < len(records); i += 8 {
				testutil.NoError(t, cl.ProduceSync(ctx, records[i:i+8]...).FirstErr(), "produce")
			}

			path := filepath.Join(cfg.DataDir, topic+"-0", fmt.Sprintf("%020d.log", 0))
			pages := testutil.Resident(t, path, written)
			page := int64(len(pages))
			var droppedKept, keptDropped int64
			var keptAt []int64 // where the pages that should have gone are, to tell a folio from a reader
			for i, in := range pages {
				pos := int64(i) * written / page
				if pos < tc.droppedBelow && in {
					droppedKept++
					if len(keptAt) < 16 {
						keptAt = append(keptAt, pos)
					}
				}
				if pos >= tc.keptFrom && !in {
					keptDropped++
				}
			}
			if droppedKept > 0 || keptDropped > 0 {
				t.Errorf("tail %s: %d pages below byte %d still cached (at bytes %v...), %d pages from byte %d dropped (of %d)",
					tc.tail, droppedKept, tc.droppedBelow, keptAt, keptDropped, tc.keptFrom, page)
			}
		})
	}
}
