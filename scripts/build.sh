#!/usr/bin/env bash
# Builds the runnel binary: one static executable (CGO_ENABLED=0: Go's own DNS
# resolver and user lookup, no libc), so that it runs on any Linux of its
# architecture. Usage: bash scripts/build.sh [-o OUTPUT] (default ./runnel).
set -euo pipefail
cd "$(dirname "$0")/.."
out=./runnel
if [ "${1:-}" = "-o" ]; then out=$2; fi
CGO_ENABLED=0 go build -o "$out" ./cmd/runnel
