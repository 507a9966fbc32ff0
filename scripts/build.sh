#!/usr/bin/env bash
# Builds the runnel binary: one static executable (CGO_ENABLED=0: Go's own DNS
# resolver and user lookup, no libc), so that it runs on any Linux of its
# architecture, stamped with its version (`git describe`, or $RUNNEL_VERSION) and build
# time and commit for `runnel version`. Usage: bash scripts/build.sh
# [-o OUTPUT] (default ./runnel).
set -euo pipefail
cd "$(dirname "$0")/.."
out=./runnel
if [ "${1:-}" = "-o" ]; then out=$2; fi
version=${RUNNEL_VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
built=$(date -u +%Y-%m-%dT%H:%M:%SZ)
commit=$(git rev-parse HEAD 2>/dev/null || true)
pkg=github.com/runnel-io/runnel/internal/cli
CGO_ENABLED=0 go build -ldflags "-X $pkg.version=$version -X $pkg.buildTime=$built -X $pkg.commit=$commit" -o "$out" ./cmd/runnel
