#!/usr/bin/env bash
# compare.sh: run the same workloads against Runnel (one node; one node with page-cache
# durability; three nodes RF3 acks=all), franz-go's kfake (fsync per batch; blackhole)
# and NATS JetStream (file storage, R1 and R3) on loopback, and print one table of
# medians, min-max and ratios to Runnel on one node, after the machine's physical
# limits (fdatasync write, fsync latency, loopback bandwidth).
#
# A tool, not a test: CI never runs it. See docs/benchmarks.md for what it measures.
#
# usage: bench/compare.sh [--quick] [--runs N] [--systems a,b,...] [--work DIR]
#                         [--runnel-bin PATH] [--profile 10s] [--out FILE] [--partitions P]
#   --quick        small workloads, one run (a smoke test of the harness, a minute or two)
#   --runs N       repetitions of every workload (default 3)
#   --systems      only these: runnel-1 runnel-1-pagecache runnel-1-noidem runnel-3 kfake-sync
#                  kfake-blackhole nats-r1-sync nats-r1 nats-r3
#   --work DIR     data, logs, binaries and results.json (default a new temp dir)
#   --runnel-bin   use this runnel binary instead of building ./cmd/runnel
#   --profile D    take a CPU profile of runnel-1 (or --profile-system S) for D during
#                  its first produce; go tool pprof -top bin/runnel WORK/S-produce.pprof
#   --out FILE     also write the results table (markdown) to FILE
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
work="" runnel_bin="" compare_args=()
while [[ $# -gt 0 ]]; do
	case "$1" in
	--quick) compare_args+=(-quick); shift ;;
	--runs | --systems | --profile | --profile-system | --out | --partitions)
		[[ $# -ge 2 ]] || { echo "compare.sh: $1 needs a value" >&2; exit 2; }
		compare_args+=("-${1#--}" "$2"); shift 2 ;;
	--work) work=$2; shift 2 ;;
	--runnel-bin) runnel_bin=$2; shift 2 ;;
	-h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
	*) echo "compare.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
[[ -n "$work" ]] || work=$(mktemp -d /tmp/runnel-compare.XXXXXX)
mkdir -p "$work/bin"
echo "== work directory: $work" >&2

cd "$root"
echo "== building" >&2
if [[ -n "$runnel_bin" ]]; then
	cp "$runnel_bin" "$work/bin/runnel"
else
	go build -o "$work/bin/runnel" ./cmd/runnel
fi
for tool in kfakeserver natsbench physlimits compare; do
	go build -o "$work/bin/$tool" "./bench/$tool"
done

echo "== machine" >&2
{
	echo "cpus: $(nproc), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
	echo "memory: $(free -g | awk '/^Mem:/ {print $2 " GiB"}')"
	echo "disk ($work): $(df -h "$work" | awk 'NR==2 {print $1 ", " $2 " total, " $4 " free"}')"
	echo "kernel: $(uname -r), go: $(go env GOVERSION)"
} | tee "$work/machine.txt"

echo "== physical limits" >&2
quick=false
for a in "${compare_args[@]}"; do [[ "$a" == -quick ]] && quick=true; done
if $quick; then
	"$work/bin/physlimits" -dir "$work" -write-mib 128 -syncs 500 -loopback 1s | tee "$work/physlimits.json"
else
	"$work/bin/physlimits" -dir "$work" -write-mib 1024 -syncs 5000 -loopback 5s | tee "$work/physlimits.json"
fi

echo "== workloads" >&2
"$work/bin/compare" -bin "$work/bin" -work "$work" -limits "$work/physlimits.json" "${compare_args[@]}"
