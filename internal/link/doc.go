// Package link runs cluster links (issue 32, docs/cluster-links.md): offset-preserving
// mirror topics fetched from a source cluster.
//
// A link lives in the destination cluster's metadata (metadata/links.go; the
// controller owns the records, controller/links.go). On each node, Manager
// (manager.go) follows the metadata and, for every mirror partition the node leads,
// fetches from the source partition's leader: one session (a kgo client of the
// source) per link, a router goroutine that looks the source leaders up (Metadata),
// and one fetcher goroutine per source broker (fetcher.go, fetch_apply.go) sending
// plain consumer Fetches at read_uncommitted (markers and aborted data copy too),
// ListOffsets when out of range. What is fetched is appended through the follower's
// path (replica.Partition.AppendMirrored): same bytes, same offsets, this cluster's
// leader epoch stamped, so the destination's own followers, HW and ISR work unchanged.
//
// Admin (admin.go, status.go) runs the link operations the CLI sends (wire.go): those
// that change the metadata on the active controller's node, forwarded there by any
// other node; status on every node for the partitions it leads.
//
// A syncer per link (follow.go, groupsync.go) runs on every node and acts only while
// the node is the active controller: it follows the source's topics (new ones,
// partition counts, deletions, configs, ACLs) and copies consumer group offsets. A
// session's fetchers share its token bucket (throttle.go, --throttle).
//
// Invariants:
//
//   - A mirrored append names the destination leader epoch it was fetched for; the
//     partition refuses it after any role change (AppendMirrored), so nothing lands
//     after a promote (which bumps the epoch) or on a node that stopped leading.
//   - The next offset fetched is always the destination's log end: nothing is
//     copied twice and nothing is skipped (a gap is the source's own: compaction).
//   - Only the source's high watermark is read (a consumer fetch), never what the
//     source could still lose in an election.
//
// Goroutines: a session's router and fetchers run until the session's context ends
// (Manager.ApplyImage drops the session, or Close); Manager.mu is never held across
// network I/O; a session's mu guards its routing and is not held across a fetch.
package link
