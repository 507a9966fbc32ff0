#!/usr/bin/env bash
# Installs what Runnel's tests need on a fresh Debian machine with Go: kcat (librdkafka's
# command-line client, used by the interop tests) from Debian's packages, the Go
# modules, and KafkaJS from npm when node and npm are there. Safe to run twice.
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

# KafkaJS, at the version pinned in internal/interop/js/package-lock.json, for the
# interop tests' Node.js scenarios; they skip themselves where node is missing.
js=""
if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
  npm ci --prefix internal/interop/js --prefer-offline --no-audit --no-fund >/dev/null
  js=", node $(node --version), kafkajs $(node -p 'require("./internal/interop/js/node_modules/kafkajs/package.json").version')"
fi
echo "deps ok: $(go version), kcat $(kcat -V 2>/dev/null | head -1 | awk '{print $2}')$js"
