package log

import (
	"hash/maphash"
)

// offsetMapSlotSize is the memory of one slot: a 128-bit key hash and an offset, as
// in Kafka's SkimpyOffsetMap (MD5 + offset).
const offsetMapSlotSize = 24

// offsetMapLoadFactor is log.cleaner.io.buffer.load.factor: the share of the slots
// that may be used before the map counts as full.
const offsetMapLoadFactor = 0.9

// offsetMap maps the hash of a record key to the largest offset seen for that key
// (Kafka SkimpyOffsetMap): open addressing with linear probing over slots whose
// number never exceeds the memory budget, so building it never allocates more than
// log.cleaner.dedupe.buffer.size / log.cleaner.threads. Two keys whose 128-bit
// hashes collide share a slot; the seeds are random per map, so no key can be crafted
// to collide on purpose. Not safe for concurrent use: one cleaner goroutine owns it.
type offsetMap struct {
	seeds [2]maphash.Seed // immutable
	// maxSlots is the slot budget; maxEntries = maxSlots * load factor.
	maxSlots, maxEntries int // immutable

	// slots grow by doubling up to maxSlots, so a small log does not pay for the
	// whole budget. Invariant: count <= maxEntries and count < len(slots) when
	// len(slots) > 0. A slot with h == [0, 0] is empty.
	slots []mapSlot
	count int
	// latest is the largest offset put since reset; -1 when none.
	latest int64
}

type mapSlot struct {
	h   [2]uint64
	off int64
}

// newOffsetMap returns a map using at most memory bytes of slots (at least 16 slots).
func newOffsetMap(memory int64) *offsetMap {
	slots := int(max(memory/offsetMapSlotSize, 16))
	return &offsetMap{
		seeds:      [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()},
		maxSlots:   slots,
		maxEntries: max(int(float64(slots)*offsetMapLoadFactor), 1),
		latest:     -1,
	}
}

// reset empties the map, keeping its slots.
func (m *offsetMap) reset() {
	clear(m.slots)
	m.count = 0
	m.latest = -1
}

// fits reports whether n more keys can be put without passing the budget.
func (m *offsetMap) fits(n int) bool { return m.count+n <= m.maxEntries }

// utilization is the share of the budget in use.
func (m *offsetMap) utilization() float64 { return float64(m.count) / float64(m.maxEntries) }

func (m *offsetMap) hash(key []byte) [2]uint64 {
	h := [2]uint64{maphash.Bytes(m.seeds[0], key), maphash.Bytes(m.seeds[1], key)}
	h[0] |= 1 // never the empty marker
	return h
}

// put records offset for key. Callers put offsets in increasing order and check fits
// first; a put past the budget panics.
func (m *offsetMap) put(key []byte, offset int64) {
	h := m.hash(key)
	if m.count+1 > int(float64(len(m.slots))*offsetMapLoadFactor) {
		m.grow()
	}
	i := m.find(h)
	if m.slots[i].h != h {
		if m.count >= m.maxEntries {
			panic("log: offsetMap.put past its budget")
		}
		m.slots[i].h = h
		m.count++
	}
	m.slots[i].off = offset
	m.latest = max(m.latest, offset)
}

// get returns the offset recorded for key.
func (m *offsetMap) get(key []byte) (int64, bool) {
	if m.count == 0 {
		return 0, false
	}
	h := m.hash(key)
	i := m.find(h)
	if m.slots[i].h != h {
		return 0, false
	}
	return m.slots[i].off, true
}

// find returns the slot holding h, or the empty slot where it would go.
func (m *offsetMap) find(h [2]uint64) int {
	n := uint64(len(m.slots))
	for i := h[0] % n; ; i = (i + 1) % n {
		if s := &m.slots[i]; s.h == h || s.h == [2]uint64{} {
			return int(i)
		}
	}
}

// grow doubles the slots (up to maxSlots) and rehashes.
func (m *offsetMap) grow() {
	n := min(max(2*len(m.slots), 1024), m.maxSlots)
	if n == len(m.slots) {
		return
	}
	old := m.slots
	m.slots = make([]mapSlot, n)
	for _, s := range old {
		if s.h != [2]uint64{} {
			m.slots[m.find(s.h)] = s
		}
	}
}
