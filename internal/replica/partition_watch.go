package replica

// WatchLogEnd is Watch for a follower's fetch: its channel is also signalled when the
// log end of any of parts moves (an append), as a follower reads up to the log end.
// Consumers use Watch, which an append alone does not wake.
func WatchLogEnd(parts []*Partition) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	for _, p := range parts {
		p.waitersMu.Lock()
		p.endWaiters[ch] = struct{}{}
		p.waitersMu.Unlock()
	}
	return ch, func() {
		for _, p := range parts {
			p.waitersMu.Lock()
			delete(p.endWaiters, ch)
			p.waitersMu.Unlock()
		}
	}
}
