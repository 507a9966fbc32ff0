// Package cluster is the multi-node test harness: it runs N `runnel server` processes
// on loopback ports, all of them metadata voters, and injects the faults of DESIGN.md's
// failure model that a real process can suffer: SIGKILL (Kill), SIGTERM (Stop), SIGSTOP
// and SIGCONT (Pause, Resume) and a restart on the same data directory (Restart).
//
//	c := cluster.Start(t, cluster.Options{Nodes: 3, Sets: cluster.FastFailureDetection})
//	h := cluster.NewHistory()
//	load := c.StartLoad(t, h, cluster.LoadOptions{Topic: "orders", Partitions: 4})
//	leader, _ := c.WaitLeader(t, "orders", 0, time.Minute)
//	c.Kill(int(leader))
//	c.Restart(int(leader))
//	c.WaitISR(t, "orders", 0, 3, time.Minute)
//	load.Stop(time.Minute)
//	h.Check(t, c, "orders")
//
// Waits poll with a deadline and fail the test naming what never happened
// (WaitLeader, WaitISR, WaitController, WaitBrokers). Metadata is asked of each live
// node directly (MetadataFrom), so a paused or dead node never stalls a wait.
//
// History records the writes a producer had acknowledged, and Check proves them: every
// acknowledged record is at its offset, once, with its value, in the on-disk log of
// every replica in the ISR. Check reads copies of the partition directories with
// internal/log, so it sees what the node would recover after a crash, not what it
// serves.
//
// The binary is built once per test process from this checkout, unless
// $RUNNEL_CLUSTER_BIN names one. A failed test prints the tail of each node's output;
// with $RUNNEL_CLUSTER_LOGDIR set it also keeps the whole output there. Nodes are
// killed when the test ends, and also when the test binary dies or nears its -timeout.
//
// Network faults need Options.Netns: every node then runs (through `ip netns exec`,
// which execs, so signals reach the server) in a Linux network namespace of its own,
// joined to a bridge in the test's namespace. Partition(side...) and Isolate(i) add
// blackhole routes inside the namespaces, so that nodes on either side cannot reach
// each other while the test's clients still reach every node; Heal removes them. A
// node left in touch with less than a majority is "cut off": the waits and LiveIDs
// ignore it, as its view is stale. ClientOn gives a client of one side. Netns needs
// root and iproute2; Start skips the test (saying why) where namespaces cannot be made.
// A test binary killed outright leaves its namespaces and bridge behind (rnl*,
// rnlbr*); they hold no process and clash with nothing, since each cluster picks a
// free subnet, and `ip netns del` / `ip link del` remove them.
//
// Options.Virtual runs the nodes in the test process instead (server.Start, the code
// the binary runs), every listener and dial of every node on one in-memory network
// (internal/nodenet.Mem, passed as server.Options.Network). Inside testing/synctest.Test
// the whole cluster then runs on the bubble's fake clock, which jumps whenever every
// goroutine is blocked: a session timeout or replica.lag.time.max.ms passes in
// microseconds, and a failover scenario that simulates tens of seconds takes one or two
// seconds of wall time with no timing-dependent flakes:
//
//	synctest.Test(t, func(t *testing.T) {
//		c := cluster.Start(t, cluster.Options{Nodes: 3, Virtual: true, Sets: cluster.FastFailureDetection})
//		...
//		c.Isolate(2)
//		c.WaitISR(t, "orders", 0, 2, time.Minute) // 3 s of virtual time
//	})
//
// Kill crashes the node's host off the network (listeners closed, connections reset,
// as the kernel does for a killed process) and then stops the node without a
// controlled shutdown (server.Node.Abort); Restart starts it on the same data
// directory; Partition, Isolate and Heal cut links of the network; Client, ClientOn and
// the waits dial from VirtualClientHost (Cluster.Dial gives that dialer to other
// clients). Pause and Resume block every link of the node both ways without resetting
// any (nodenet.Mem.Pause): unlike SIGSTOP, the node's goroutines and timers run on and it
// can still write its disk; in-process nodes on loopback cannot be paused. AddNode and
// WaitExit need processes. Shared starts one cluster for a whole test binary (from
// TestMain), for suites that would pay a start per test. A run is not bit-for-bit
// reproducible (goroutine scheduling and Raft's random election timeouts vary), but it
// depends on no real clock. Everything a node starts must stop when it closes:
// synctest fails a test that leaves a goroutine blocked, and a goroutine waiting in
// sync.Mutex.Lock while the holder waits on a timer stops the fake clock for good (see
// internal/liveness's target.turn).
//
// Options.InProcess runs the same in-process nodes on the host's loopback instead,
// for tests whose own clients need real sockets (StartOne and the interop
// suites use it); Cluster.Server gives an in-process node's server.Node.
//
// The package is imported by tests only; it never ships in the binary.
package clustertest
