// Package balance plans where partition replicas and preferred leaders should live so
// that they are spread evenly over a set of nodes, moving as little as possible. It is
// pure: no I/O, no goroutines, no clock; the same Request always gives the same Plan.
// `runnel reassign plan`, `runnel cluster decommission` and the controller's node_add
// balancer use it.
//
// # What a plan guarantees
//
// Let T be the target nodes (Request.Nodes minus Request.Drain), R the number of
// replicas and P the number of partitions of the topics the request includes. Then in
// Plan.Assignment:
//
//   - every partition keeps its replication factor, its replicas are distinct and on
//     nodes of T (a replica on a drained node or a node outside Nodes moves);
//   - every node of T holds ⌊R/|T|⌋ or ⌈R/|T|⌉ replicas (within one of an even share);
//   - every node of T is the preferred leader (first replica) of ⌊P/|T|⌋ or ⌈P/|T|⌉
//     partitions, whenever the replica sets allow it (they do unless replication
//     factors are mixed in unusual ways; Plan.LeadersBalanced says whether they did);
//   - with racks (every node of T has one), each partition's replicas spread over
//     racks as Kafka's rack-aware placement does: no rack holds more than
//     ⌈RF/racks⌉ replicas of a partition. With racks of equal size this always
//     holds (property-tested from random starts); with racks of very different
//     sizes the count balance above may not allow it, and the repairs (single moves
//     and swaps that lower the excess, a local search) stop where none helps;
//     Plan.RackViolations counts what remains.
//
// # Moving as little as possible
//
// A move is a replica the new assignment places on a node that did not hold it (the
// data to copy); Plan.Moves counts them. Reordering replicas (a new preferred leader)
// copies nothing and is counted apart, in Plan.LeaderChanges.
//
// Each node n of T gets a target t(n) ∈ {⌊R/|T|⌋, ⌈R/|T|⌉}, the larger going to the
// nodes that hold the most replicas now; nodes outside T get 0. The excess
// E = Σ max(0, held(n) − t(n)) is a lower bound on the moves of any balanced plan, and
// with those targets it is the least such bound. The planner reaches it exactly except
// for two causes, each counted:
//
//   - Plan.Chains: a replica that must leave a drained (or unlisted) node, of a
//     partition that already has a replica on every node below its target. It goes to
//     a node at its target, which then passes one replica of another partition on:
//     two moves where the excess counts one. No plan can do it in one.
//   - Plan.RackRepairs: moves made only to spread a partition over more racks (one
//     move, or a swap of two between two partitions so the counts stay balanced).
//     Rack spread comes before moving less, as fault tolerance is worth a copy.
//
// So Moves = Excess + Chains + RackRepairs, and without drained nodes and racks,
// Moves = Excess, the minimum. The property tests check these equalities.
//
// The proof that a one-step move always exists while a node is over its target (no
// drain, no racks): a node x over its target holds t(x)+1 ≥ ⌊R/|T|⌋+1 replicas and a
// node d under its target at most ⌈R/|T|⌉−1 ≤ ⌊R/|T|⌋, so x is a replica of more
// partitions than d, and one of them has no replica on d: x's replica there moves to
// d.
//
// Preferred leaders move the same way along chains of partitions (x leads p where y
// is a replica, y leads q where d is one, ...): a shortest chain by breadth-first
// search, so a partition's preferred leader changes only if its old one left or the
// balance needs it.
//
// Which partition a move takes, when several could, is chosen for rack spread first,
// then for each topic's spread over the nodes (a topic's replicas leave the node
// holding most of them for the node holding fewest), then to keep preferred leaders
// where they are, then by topic and partition order, so plans are deterministic.
package balance
