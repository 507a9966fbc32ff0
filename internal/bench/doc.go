// Package bench is the load generator behind `runnel bench`: producers writing
// numbered records at a rate, a consumer reading them back and checking that none is
// missing, the end-to-end latency from produce to consume, the stall watch behind
// --timeout, and the produce and fetch breakdowns (the nodes' stage histograms and,
// for e2e, each record's timeline through the clients).
//
// The record header, the latency histogram and the report are package benchfmt's,
// shared with bench/natsbench so that both generators measure and report alike.
// Flags, usage errors and the topic's creation are the command's (internal/cli): a
// Config reaches this package checked, and its errors are failures of the run.
//
// Where things are:
//
//	config.go    Config, the clients of a run, the generator's GC floor
//	produce.go   Produce; the producers (records carved from slabs) and their group
//	consume.go   Consume; the consumer and where it stops; listing offsets
//	e2e.go       E2E: producers and the consumer at once
//	check.go     the delivery check: sequence bitmaps, partitions' offset spans
//	stall.go     the --timeout watch
//	progress.go  the progress line on stderr every second
//	breakdown.go the nodes' produce and fetch stages, read from their /metrics
//	timeline.go  e2e --breakdown: each record through the clients, the tail's causes
package bench
