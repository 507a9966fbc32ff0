package kafka

import (
	"math/rand/v2"
	"sync"

	"github.com/runnel-io/runnel/internal/metadata"
)

// Fetch sessions (KIP-227). A full fetch with epoch 0 creates a session that remembers
// the partitions and their fetch positions; later incremental fetches name only what
// changed, and the response carries only partitions with news (records, an error, or a
// changed high watermark, last stable offset or log start offset).
//
// Session epochs: -1 = sessionless full fetch (closes the named session), 0 = full fetch
// that opens a new session, n > 0 = the next incremental fetch of an open session.

// sessionPartition is the state of one partition within a session.
type sessionPartition struct {
	tp                 metadata.TopicPartition
	topicID            [16]byte
	fetchOffset        int64
	maxBytes           int32
	currentLeaderEpoch int32
	// last is what the last response reported, to decide whether the partition has
	// news for an incremental fetch.
	last partitionOffsets
}

// partitionOffsets are the offsets a fetch response reports for a partition.
type partitionOffsets struct{ hw, lso, logStart int64 }

// noOffsets is what a session has reported for a partition before its first response.
var noOffsets = partitionOffsets{-1, -1, -1}

type fetchSession struct {
	id    int32
	epoch int32 // the epoch the next request must carry
	// mu serialises requests of one session; a client sends them one at a time.
	mu    sync.Mutex
	order []*sessionPartition
	index map[metadata.TopicPartition]*sessionPartition
}

func (fs *fetchSession) upsert(sp sessionPartition) {
	if cur := fs.index[sp.tp]; cur != nil {
		cur.fetchOffset, cur.maxBytes, cur.currentLeaderEpoch, cur.topicID = sp.fetchOffset, sp.maxBytes, sp.currentLeaderEpoch, sp.topicID
		return
	}
	n := sp
	n.last = noOffsets
	fs.order = append(fs.order, &n)
	fs.index[sp.tp] = &n
}

func (fs *fetchSession) forget(tp metadata.TopicPartition) {
	if fs.index[tp] == nil {
		return
	}
	delete(fs.index, tp)
	for i, p := range fs.order {
		if p.tp == tp {
			fs.order = append(fs.order[:i], fs.order[i+1:]...)
			break
		}
	}
}

// fetchSessions is the bounded session cache. When full, the least recently used
// session is evicted; its client gets FETCH_SESSION_ID_NOT_FOUND and starts over.
type fetchSessions struct {
	mu       sync.Mutex // guards everything below
	max      int
	sessions map[int32]*fetchSession
	lru      []int32 // oldest first
}

func newFetchSessions(max int) *fetchSessions {
	return &fetchSessions{max: max, sessions: map[int32]*fetchSession{}}
}

func (c *fetchSessions) create() *fetchSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.sessions) >= c.max && len(c.lru) > 0 {
		delete(c.sessions, c.lru[0])
		c.lru = c.lru[1:]
	}
	id := rand.Int32N(1<<31-2) + 1
	for c.sessions[id] != nil {
		id = rand.Int32N(1<<31-2) + 1
	}
	fs := &fetchSession{id: id, epoch: 1, index: map[metadata.TopicPartition]*sessionPartition{}}
	c.sessions[id] = fs
	c.lru = append(c.lru, id)
	return fs
}

func (c *fetchSessions) get(id int32) *fetchSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	fs := c.sessions[id]
	if fs != nil {
		c.touchLocked(id)
	}
	return fs
}

func (c *fetchSessions) remove(id int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.sessions, id)
	c.dropLRULocked(id)
}

func (c *fetchSessions) touchLocked(id int32) {
	c.dropLRULocked(id)
	c.lru = append(c.lru, id)
}

func (c *fetchSessions) dropLRULocked(id int32) {
	for i, x := range c.lru {
		if x == id {
			c.lru = append(c.lru[:i], c.lru[i+1:]...)
			return
		}
	}
}
