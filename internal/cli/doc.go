// Package cli implements Runnel's client commands: topic, produce, consume, group and
// cluster. It is a Kafka client of the cluster like any other (franz-go kgo for
// records, kadm for administration) and must not import internal/server or any other
// internal package; cmd/runnel hands the server subcommand in as an extra command:
//
//	func main() { os.Exit(cli.Main(os.Args[1:], server.NewCommand())) }
//
// Exit status (INTERFACE.md): 0 on success; 1 on a failure, reported as one line
// "runnel: ..." on stderr; 2 on bad usage (unknown command or flag, missing argument,
// malformed value), reported as one line plus a hint naming the --help to read.
// Commands write their output to the command's stdout and diagnostics to its stderr;
// MainIO takes both, and stdin, so tests run commands in-process.
//
// Where things are:
//
//	root.go           Main, MainIO, NewRoot, error → exit status, -b and client construction
//	topic.go          topic create/list/delete/alter/add-partitions
//	topic_describe.go topic describe: partitions (leader, epoch, replicas, ISR, offsets), configs
//	produce.go        produce: stdin lines → records; acks, partition, compression, headers
//	overload.go       the overload flags (--on-full, --enqueue-timeout, --rate) → client.Producer options
//	consume.go        consume: group member, or chosen partitions from an offset spec
//	format.go         the kcat-style --format compiler (allocation-free per record)
//	offsets.go        --offset and --to specs; the reset-offsets target rule
//	group.go          group list/describe/delete
//	group_reset.go    group reset-offsets: plan, and commit with --execute
//	cluster.go        cluster status
//
// Output is a human table (text/tabwriter) by default; list, describe and status
// commands take --json for scripts, with -1 for unknown offsets.
package cli
