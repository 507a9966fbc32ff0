#!/usr/bin/env bash
# Runs Runnel's test suite: vet, then every package's tests (the interop tests start
# real nodes on loopback and drive them with franz-go, sarama, kafka-go, kcat and
# KafkaJS; internal/cluster runs multi-node fault scenarios with real processes).
set -euo pipefail
cd "$(dirname "$0")/.."
go vet ./...
go test -count=1 -timeout 20m "$@" ./...
