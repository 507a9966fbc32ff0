#!/usr/bin/env bash
# Installs what Runnel's tests need on a fresh Debian machine with Go: kcat (librdkafka's
# command-line client, used by the interop tests) from Debian's packages, and the Go
# modules. Safe to run twice.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v kcat >/dev/null 2>&1; then
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq >/dev/null || true
  $SUDO apt-get install -y -qq kcat >/dev/null
fi
go mod download
echo "deps ok: $(go version), kcat $(kcat -V 2>/dev/null | head -1 | awk '{print $2}')"
