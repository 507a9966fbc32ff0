#!/usr/bin/env bash
# flood.sh: the produce flood of issue 16 against one node with default settings.
# N producers (default 8) of 16 KiB records, acks=all, 5 requests in flight each (the
# most an idempotent franz-go producer allows), as fast as the node takes them; the
# node's RSS (VmRSS, and VmHWM, its peak) is sampled every second with the bytes
# written so far; afterwards `runnel bench consume` reads the topic back and fails
# unless every acknowledged (producer, sequence) is there, once. Prints one line per
# sample and a summary (docs/benchmarks.md, "Memory under a produce flood").
#
# A tool, not a test: CI never runs it (it writes tens of GB). On a shared machine run
# it under the heavy lock:
#   flock /tmp/runnel-heavy.lock bench/flood.sh --records 1200000
#
# usage: bench/flood.sh [--producers N] [--records TOTAL] [--record-size BYTES]
#                        [--partitions P] [--bin FILE] [--work DIR] [--set KEY=VALUE ...]
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
producers=8 records=1200000 size=16384 partitions=8 bin="" work=""
sets=()
while [[ $# -gt 0 ]]; do
	case "$1" in
	--producers) producers=$2; shift 2 ;;
	--records) records=$2; shift 2 ;;
	--record-size) size=$2; shift 2 ;;
	--partitions) partitions=$2; shift 2 ;;
	--bin) bin=$2; shift 2 ;;
	--work) work=$2; shift 2 ;;
	--set) sets+=(--set "$2"); shift 2 ;;
	*) echo "flood.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
work=${work:-$(mktemp -d /tmp/runnel-flood.XXXXXX)}
mkdir -p "$work"
if [[ -z "$bin" ]]; then
	bin=$work/runnel
	(cd "$root" && CGO_ENABLED=0 go build -o "$bin" ./cmd/runnel)
fi
port=$((20000 + RANDOM % 20000))
"$bin" server --data-dir "$work/data" --listen "127.0.0.1:$port" --controller-listen "127.0.0.1:$((port + 1))" \
	--http-listen "127.0.0.1:$((port + 2))" "${sets[@]}" >"$work/node.log" 2>&1 &
node=$!
cleanup() { kill "$node" 2>/dev/null || true; wait "$node" 2>/dev/null || true; }
trap cleanup EXIT
for _ in $(seq 100); do
	curl -sf "http://127.0.0.1:$((port + 2))/readyz" >/dev/null 2>&1 && break
	sleep 0.1
done

# One sample a second: seconds, RSS and peak RSS (MiB), bytes in the data directory (GB).
sample() {
	local start=$SECONDS
	while kill -0 "$node" 2>/dev/null; do
		rss=$(awk '/^VmRSS:/ {print int($2/1024)}' "/proc/$node/status")
		hwm=$(awk '/^VmHWM:/ {print int($2/1024)}' "/proc/$node/status")
		gb=$(du -sb "$work/data" 2>/dev/null | awk '{printf "%.1f", $1/1e9}')
		echo "t=$((SECONDS - start))s rss=${rss}MiB peak=${hwm}MiB data=${gb}GB"
		sleep 1
	done
}
sample >"$work/rss.txt" &
sampler=$!

b="127.0.0.1:$port"
"$bin" bench produce -b "$b" --topic flood -p "$partitions" --producers "$producers" --record-size "$size" \
	-n "$records" --acks all 2>"$work/produce.err" | tee "$work/produce.txt"
"$bin" bench consume -b "$b" --topic flood -n "$records" 2>"$work/consume.err" | tee "$work/consume.txt"
kill "$sampler" 2>/dev/null || true
cat "$work/rss.txt"
peak=$(awk '/^VmHWM:/ {print int($2/1024)}' "/proc/$node/status")
echo "flood: $producers producers x $size B, $records records; node peak RSS ${peak} MiB; every acknowledged record read back (bench consume checks each producer's sequence); work dir $work"
