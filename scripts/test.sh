#!/usr/bin/env bash
# Runs Runnel's test suite on a fresh machine: installs what the tests need (kcat,
# kafka-python and confluent-kafka from Debian's packages, KafkaJS from npm, the Go
# modules), then vet and every package's tests (the interop tests start real nodes on
# loopback and drive them with franz-go, sarama, kafka-go, kcat, kafka-python,
# confluent-kafka and KafkaJS; internal/clustertest runs multi-node fault scenarios with
# real processes). Extra arguments go to `go test`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
# The binaries the tests build (the cluster harness, the interop tests) are static, as
# the shipped one (scripts/build.sh).
export CGO_ENABLED=0
# Everything the tests drive is installed now: a test that finds a tool missing fails
# instead of skipping (testutil.Missing).
export RUNNEL_TEST_REQUIRE_ALL=1
# The invariants tag turns on the self-checks of internal/invariants (the high
# watermark's rules, for one): free in a production build, loud in the tests.
go vet -tags invariants ./...
# -p 1: one package's tests at a time. The multi-node fault tests hold clients to
# failover bounds of a few seconds (TestDefaultClientFailover: 3 s for a default
# franz-go producer); with several test binaries competing for this machine's two
# cores they measure the machine, not the failover. About 9 minutes in all.
go test -tags invariants -count=1 -p 1 -timeout 20m "$@" ./...
