#!/usr/bin/env bash
# Installs what Runnel's tests need on a fresh Debian machine with Go: from Debian's
# packages kcat (librdkafka's command-line client) and the Python clients kafka-python
# and confluent-kafka for /usr/bin/python3 (all used by the interop tests) and chromium
# (the web console's browser test drives it headless), the Go modules, and KafkaJS
# from npm when node and npm are there. Safe to run twice.
set -euo pipefail
cd "$(dirname "$0")/.."

# Only what is missing. The Python clients are checked with /usr/bin/python3, where
# Debian installs them (a python3 earlier on PATH, such as pyenv's, may lack them).
apt=()
if ! command -v kcat >/dev/null 2>&1; then apt+=(kcat); fi
if ! /usr/bin/python3 -c 'import kafka' >/dev/null 2>&1; then apt+=(python3-kafka); fi
if ! /usr/bin/python3 -c 'import confluent_kafka' >/dev/null 2>&1; then apt+=(python3-confluent-kafka); fi
if [ ! -x /usr/bin/chromium ]; then apt+=(chromium); fi
if [ ${#apt[@]} -gt 0 ]; then
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq >/dev/null || true
  $SUDO apt-get install -y -qq "${apt[@]}" >/dev/null
fi
# promtool, for the alert rules' test (deploy/): Debian ships it in prometheus. Only the
# command is needed: the package comes without its recommends (the node exporter, ...),
# and the Prometheus server it starts where systemd runs is stopped and disabled.
if ! command -v promtool >/dev/null 2>&1; then
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq >/dev/null || true
  $SUDO apt-get install -y -qq --no-install-recommends prometheus >/dev/null
  $SUDO systemctl disable --now prometheus >/dev/null 2>&1 || true
fi
go mod download

# KafkaJS, at the version pinned in internal/interop/js/package-lock.json, for the
# interop tests' Node.js scenarios; they skip themselves where node is missing.
js=""
if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
  npm ci --prefix internal/interop/js --prefer-offline --no-audit --no-fund >/dev/null
  js=", node $(node --version), kafkajs $(node -p 'require("./internal/interop/js/node_modules/kafkajs/package.json").version')"
fi
py=$(/usr/bin/python3 -c 'import kafka, confluent_kafka as ck; print("kafka-python %s, confluent-kafka %s (librdkafka %s)" % (kafka.__version__, ck.version()[0], ck.libversion()[0]))')
# Debian's chromium wrapper prints a shell warning on stderr before its version line.
chromium=$(/usr/bin/chromium --version 2>/dev/null | awk '/^Chromium/ {print $2; exit}')
echo "deps ok: $(go version), kcat $(kcat -V 2>/dev/null | awk '/^Version/ {print $2; exit}'), $py$js, chromium $chromium"
