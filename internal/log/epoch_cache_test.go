package log

import (
	"testing"

	"github.com/runnel-io/runnel/internal/log/logtest"
	"github.com/runnel-io/runnel/internal/vfs"
)

func TestEpochCacheEndOffsetFor(t *testing.T) {
	c := newLeaderEpochCache("/d")
	if e, o := c.endOffsetFor(3, 100); e != UndefinedEpoch || o != UndefinedEpochOffset {
		t.Fatalf("empty cache: %d %d", e, o)
	}
	c.assign(2, 10)
	c.assign(2, 15) // same epoch: no-op
	c.assign(4, 20)
	c.assign(7, 50)
	cases := []struct {
		epoch     int32
		wantEpoch int32
		wantEnd   int64
	}{
		{1, 1, 10}, // below the earliest: its start
		{2, 2, 20},
		{3, 2, 20}, // not in the log: the largest epoch below and the next start
		{4, 4, 50},
		{6, 4, 50},
		{7, 7, 99}, // latest: the log end
		{8, UndefinedEpoch, UndefinedEpochOffset},
		{UndefinedEpoch, UndefinedEpoch, UndefinedEpochOffset},
	}
	for _, tc := range cases {
		if e, o := c.endOffsetFor(tc.epoch, 99); e != tc.wantEpoch || o != tc.wantEnd {
			t.Fatalf("endOffsetFor(%d) = %d %d, want %d %d", tc.epoch, e, o, tc.wantEpoch, tc.wantEnd)
		}
	}
}

func TestEpochCacheTruncation(t *testing.T) {
	c := newLeaderEpochCache("/d")
	for _, e := range []EpochEntry{{1, 0}, {2, 10}, {3, 20}} {
		c.assign(e.Epoch, e.StartOffset)
	}
	c.truncateFromEnd(20)
	if l, _ := c.latest(); l != (EpochEntry{2, 10}) || len(c.entries) != 2 {
		t.Fatalf("after truncateFromEnd: %v", c.entries)
	}
	c.truncateFromStart(15)
	if len(c.entries) != 1 || c.entries[0] != (EpochEntry{2, 15}) {
		t.Fatalf("after truncateFromStart: %v", c.entries)
	}
	// A smaller epoch at a larger offset replaces the entries it contradicts (Kafka).
	c.assign(5, 30)
	c.assign(4, 40)
	if len(c.entries) != 2 || c.entries[1] != (EpochEntry{4, 40}) {
		t.Fatalf("after non-monotonic assign: %v", c.entries)
	}
}

func TestEpochCheckpointFile(t *testing.T) {
	fs := vfs.NewMem()
	fs.MkdirAll("/d", 0o755)
	c := newLeaderEpochCache("/d")
	c.assign(0, 0)
	c.assign(3, 120)
	if err := vfs.WriteFileAtomic(fs, c.path, c.encode()); err != nil {
		t.Fatal(err)
	}
	data, _ := vfs.ReadFile(fs, "/d/leader-epoch-checkpoint")
	if string(data) != "0\n2\n0 0\n3 120\n" {
		t.Fatalf("checkpoint text %q", data)
	}
	c2 := newLeaderEpochCache("/d")
	if err := c2.load(fs); err != nil || len(c2.entries) != 2 || c2.entries[1] != (EpochEntry{3, 120}) {
		t.Fatalf("load: %v %v", err, c2.entries)
	}
	for _, bad := range []string{"1\n0\n", "0\n2\n0 0\n", "0\n1\nx 1\n", "0\n1\n1 2 3\n"} {
		vfs.WriteFileAtomic(fs, c.path, []byte(bad))
		if err := c2.load(fs); err == nil {
			t.Fatalf("loaded malformed checkpoint %q", bad)
		}
	}
}

func TestLogEpochCacheSurvivesReopenAndTruncate(t *testing.T) {
	forEachLogConfig(t, func(t *testing.T, env testEnv, cfg Config) {
		l := openLog(t, env, cfg)
		for e := int32(1); e <= 4; e++ {
			for i := 0; i < 5; i++ {
				if _, err := l.AppendAsLeader(logtest.Batch(3, 20), e); err != nil {
					t.Fatal(err)
				}
			}
		}
		if e, end := l.EndOffsetForEpoch(2); e != 2 || end != 30 {
			t.Fatalf("EndOffsetForEpoch(2) = %d %d", e, end)
		}
		l = reopen(t, env, l, cfg)
		if got := l.EpochEntries(); len(got) != 4 || got[3] != (EpochEntry{4, 45}) {
			t.Fatalf("epochs after reopen %v", got)
		}
		if err := l.Truncate(40); err != nil {
			t.Fatal(err)
		}
		if e, end := l.EndOffsetForEpoch(3); e != 3 || end != 39 {
			t.Fatalf("after truncate to 40 (batch 39-41 dropped), EndOffsetForEpoch(3) = %d %d", e, end)
		}
		if e, end := l.EndOffsetForEpoch(4); e != UndefinedEpoch || end != UndefinedEpochOffset {
			t.Fatalf("truncated epoch 4 still answers %d %d", e, end)
		}
		l = reopen(t, env, l, cfg)
		if got := l.EpochEntries(); len(got) != 3 || l.LogEndOffset() != 39 {
			t.Fatalf("after truncate and reopen: epochs %v leo %d", got, l.LogEndOffset())
		}
	})
}
