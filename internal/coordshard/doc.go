// Package coordshard is the shard lifecycle shared by the group and transaction
// coordinators. Each coordinator keeps one shard per partition of its internal topic
// (__consumer_offsets, __transaction_state) that this node leads: a shard is loaded
// when this node becomes the partition's leader, unloaded (its context cancelled) when
// it stops, and every shard is unloaded when the coordinator closes. Set holds those
// shards and tracks every goroutine of the coordinator (loads, group owners, appends,
// retries), so that Close returns only once they have all exited (hashicorp/raft's
// goFunc).
//
// What a shard holds, how it is replayed and when it counts as loaded stay with each
// coordinator; Set only knows that a shard has a context ended by its unload.
package coordshard
