package log

import (
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/vfs"
)

// crashPoint is the disk as a crash at one step of a cleaning pass leaves it.
type crashPoint struct {
	step  string
	group int // the swap (0, 1, ...) the step belongs to
	disk  *vfs.Mem
}

// cleanWithCrashes runs one pass over l (on env.mem), taking CrashClones at every
// step of every swap, with several seeds each.
func cleanWithCrashes(t *testing.T, env testEnv, l *Log) (PassStats, []crashPoint) {
	t.Helper()
	prepareClean(t, l)
	r := newCleanerResources(1<<20, nil, nil)
	var points []crashPoint
	group := 0
	r.hook = func(step string) {
		for seed := int64(0); seed < 3; seed++ {
			points = append(points, crashPoint{step: step, group: group, disk: env.mem.CrashClone(seed)})
		}
		if step == "published" {
			group++
		}
	}
	s, ok, err := l.clean(r, time.Now())
	if !ok || err != nil {
		t.Fatalf("clean: ok %v err %v", ok, err)
	}
	return s, points
}

// swapCommitted reports whether a crash at step leaves the new segment: from the
// rename to .swap on.
func swapCommitted(step string) bool {
	return !slices.Contains([]string{"copying", "cleaned", "state"}, step)
}

// checkRecovered opens the crashed disk and checks that the log is whole: every
// record is an original one at its offset, the latest value of every key is there,
// the log end is unchanged, and no cleaner file is left.
func checkRecovered(t *testing.T, m *model, p crashPoint, dir string, cfg Config, rp, leo int64) []decoded {
	t.Helper()
	p.disk = p.disk.CrashClone(0) // a copy: the point is checked more than once
	r := openLog(t, testEnv{fs: p.disk, mem: p.disk, dir: dir}, cfg, withRecoveryPoint(rp))
	got := readLog(t, r)
	m.check(t, got, leo, leo, false)
	checkSegments(t, r)
	if r.LogEndOffset() != leo {
		t.Fatalf("crash at %s (swap %d): log end %d, want %d", p.step, p.group, r.LogEndOffset(), leo)
	}
	names, _ := p.disk.ReadDir(dir)
	for _, name := range names {
		if marker, _, _, ok := ParseMarkedFilename(name); ok && marker != FileTypeDeleted {
			t.Fatalf("crash at %s: %s left after recovery", p.step, name)
		}
	}
	// A cleaning pass after recovery works and keeps the log whole.
	if _, _, err := r.clean(newCleanerResources(1<<20, nil, nil), time.Now()); err != nil {
		t.Fatalf("crash at %s: cleaning after recovery: %v", p.step, err)
	}
	m.check(t, readLog(t, r), leo, leo, false)
	r.Close()
	return got
}

func TestCleanerCrashAtEachSwapStepOneGroup(t *testing.T) {
	env := memEnv()
	cfg := compactConfig(DefaultConfig())
	l := openLog(t, env, cfg)
	m, rng := newModel(), rand.New(rand.NewSource(11))
	for i := 0; i < 4; i++ {
		appendUpdates(t, m, l, rng, 40, 10, 1000, 0)
		l.Roll()
	}
	leo := l.LogEndOffset()
	s, points := cleanWithCrashes(t, env, l)
	if s.Segments != 1 || len(points) == 0 {
		t.Fatalf("pass %+v with %d crash points, want one swap", s, len(points))
	}
	all := m.compactedOffsets(0, leo, false)
	cleaned := m.compactedOffsets(leo, leo, false)
	steps := map[string]bool{}
	for _, p := range points {
		steps[p.step] = true
		for _, rp := range []int64{0, leo} {
			got := checkRecovered(t, m, p, env.dir, cfg, rp, leo)
			want := all
			if swapCommitted(p.step) {
				want = cleaned
			}
			if !slices.Equal(offsetsOf(got), want) {
				t.Fatalf("crash at %s (recovery point %d):\n got %v\nwant %v", p.step, rp, offsetsOf(got), want)
			}
		}
	}
	for _, step := range []string{"copying", "cleaned", "state", "swap", "retire-0", "retire-3", "final", "published"} {
		if !steps[step] {
			t.Fatalf("no crash at step %s (steps %v)", step, steps)
		}
	}
}

func TestCleanerCrashAtEachSwapStepManyGroups(t *testing.T) {
	env := memEnv()
	cfg := compactConfig(DefaultConfig())
	cfg.SegmentBytes = 1200 // several groups
	l := openLog(t, env, cfg)
	m, rng := newModel(), rand.New(rand.NewSource(12))
	leo := appendUpdates(t, m, l, rng, 150, 25, 1000, 0)
	s, points := cleanWithCrashes(t, env, l)
	if s.Segments < 3 {
		t.Fatalf("pass %+v: want several swaps", s)
	}
	for _, p := range points {
		for _, rp := range []int64{0, leo} {
			checkRecovered(t, m, p, env.dir, cfg, rp, leo)
		}
	}
}

func TestCleanerLeftoversRemovedAtOpen(t *testing.T) {
	env := memEnv()
	cfg := compactConfig(DefaultConfig())
	l := openLog(t, env, cfg)
	m, rng := newModel(), rand.New(rand.NewSource(13))
	appendUpdates(t, m, l, rng, 30, 5, 1000, 0)
	leo := l.LogEndOffset()
	l.Close()
	for _, marker := range []FileType{FileTypeCleaned, FileTypeSwap} {
		for _, inner := range []FileType{FileTypeOffsetIndex, FileTypeTimeIndex} {
			vfs.WriteFileAtomic(env.fs, MarkedFilename(MakeFilename(env.dir, inner, 0), marker), []byte("junk"))
		}
	}
	vfs.WriteFileAtomic(env.fs, MakeFilename(env.dir, FileTypeCleaned, 0), []byte("junk"))
	r := openLog(t, env, cfg)
	if got := readLog(t, r); len(got) != int(leo) {
		t.Fatalf("%d records, want %d", len(got), leo)
	}
	names, _ := env.fs.ReadDir(env.dir)
	for _, name := range names {
		if strings.Contains(name, ".cleaned") || strings.Contains(name, ".swap") {
			t.Fatalf("%s left after Open", name)
		}
	}
}

func TestCleanerCorruptCheckpointKeepsTheLog(t *testing.T) {
	forEachLogConfig(t, func(t *testing.T, env testEnv, cfg Config) {
		cfg = compactConfig(cfg)
		l := openLog(t, env, cfg)
		m, rng := newModel(), rand.New(rand.NewSource(14))
		leo := appendUpdates(t, m, l, rng, 100, 10, 1000, 0)
		cleanNow(t, l, 1<<20, time.Now())
		want := offsetsOf(readLog(t, l))
		l.Close()
		vfs.WriteFileAtomic(env.fs, MakeFilename(env.dir, FileTypeCleanerCheckpoint, 0), []byte("0\n1\nbad\n"))
		r := openLog(t, env, cfg) // recovery point 0: every segment is scanned
		if got := offsetsOf(readLog(t, r)); !slices.Equal(got, want) || r.LogEndOffset() != leo {
			t.Fatalf("after a corrupt cleaner checkpoint: %v (log end %d), want %v (%d)", got, r.LogEndOffset(), want, leo)
		}
		if r.cleanerEnd.Load() != 0 {
			t.Fatalf("cleaner end %d, want 0 (never cleaned)", r.cleanerEnd.Load())
		}
	})
}

func TestCleanerStateRoundTrip(t *testing.T) {
	fsys := vfs.NewMem()
	fsys.MkdirAll("/d", 0o755)
	var s cleanerState
	for i := int64(1); i <= maxCleanMarks+5; i++ {
		s = s.with(i*10, 1000+i)
	}
	if len(s.marks) != maxCleanMarks || s.firstDirty() != (maxCleanMarks+5)*10 {
		t.Fatalf("marks %v", s.marks)
	}
	// Merging keeps the later time: a tombstone never expires earlier.
	if at, ok := s.firstCleanedAt(5); !ok || at < 1001 {
		t.Fatalf("first cleaned at %d %v", at, ok)
	}
	if err := writeCleanerState(fsys, "/d", s); err != nil {
		t.Fatal(err)
	}
	got, err := readCleanerState(fsys, "/d")
	if err != nil || !slices.Equal(got.marks, s.marks) {
		t.Fatalf("read %v %v, wrote %v", got.marks, err, s.marks)
	}
	cut := s.truncatedTo(105)
	if cut.firstDirty() != 105 {
		t.Fatalf("truncated state ends at %d", cut.firstDirty())
	}
	if a, _ := cut.firstCleanedAt(104); a != func() int64 { b, _ := s.firstCleanedAt(104); return b }() {
		t.Fatalf("truncation changed the time of offset 104 to %d", a)
	}
	if _, ok := cut.firstCleanedAt(105); ok {
		t.Fatal("offset 105 is past a state truncated to 105")
	}
	if s.with(50, 9999).firstDirty() != 50 {
		t.Fatal("a pass ending below the state (after truncation) must cut it")
	}
}
