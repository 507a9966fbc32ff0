// Package cli implements Runnel's client commands: topic, produce, consume, group and
// cluster. It is a Kafka client of the cluster like any other (franz-go kgo for records,
// kadm for administration) and must not import internal/server or any other internal
// package; the server subcommand is handed in by cmd/runnel.
//
// Exit status (INTERFACE.md): 0 on success; 1 on a failure, reported as one line
// "runnel: ..." on stderr; 2 on bad usage (unknown command or flag, missing argument,
// malformed value), reported as one line plus a hint naming the --help to read.
//
// Every command writes its normal output to the command's stdout and diagnostics to its
// stderr, both injectable through MainIO so tests can run commands in-process.
package cli
