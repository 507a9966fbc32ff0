#!/usr/bin/env bash
# Runs Runnel's test suite on a fresh machine: installs what the tests need (kcat,
# kafka-python and confluent-kafka from Debian's packages, KafkaJS from npm, the Go
# modules), then vet and every package's tests (the interop tests start real nodes on
# loopback and drive them with franz-go, sarama, kafka-go, kcat, kafka-python,
# confluent-kafka and KafkaJS; internal/cluster runs multi-node fault scenarios with
# real processes). Extra arguments go to `go test`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
# The binaries the tests build (the cluster harness, the interop tests) are static, as
# the shipped one (scripts/build.sh).
export CGO_ENABLED=0
go vet ./...
go test -count=1 -timeout 20m "$@" ./...
