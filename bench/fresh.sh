#!/usr/bin/env bash
# fresh.sh: `runnel bench e2e` (or `bench produce`, --mode produce) on a freshly started
# system, N times, one line per run (e2e: p50 / p99 / p99.9 / max in ms; produce:
# records/s, MB/s, p50, p99), so that no run inherits another's page cache or write-back
# (docs/benchmarks.md, issue 17). Each run starts the system on an empty data
# directory, runs one bench, stops it, deletes the data and syncs.
#
# A tool, not a test: CI never runs it. Run it under the heavy lock on a shared machine:
#   flock /tmp/runnel-heavy.lock bench/fresh.sh --system runnel-1 --runs 5
#   flock /tmp/runnel-heavy.lock bench/fresh.sh --system runnel-3 --mode produce -- --records 200000 --record-size 1024
#
# usage: bench/fresh.sh [--system runnel-1|runnel-3|kfake-sync|kfake] [--runs N] [--mode e2e|produce]
#                           [--duration 15s] [--rate 10000] [--bin DIR] [--work DIR]
#                           [--set KEY=VALUE ...] [--gctrace] [--trace SECONDS]
#   --bin DIR     runnel and kfakeserver binaries (default: build into the work directory)
#   --set         passed to every runnel node (e.g. log.flush.interval.messages=...)
#   --gctrace     run the nodes with GODEBUG=gctrace=1 (their stderr is in the work dir)
#   --trace S     take an S-second execution trace of node 1 from the middle of each run
#                 (runnel only: /debug/pprof/trace); go tool trace WORK/runK.trace
#   --breakdown   add the nodes' produce and fetch stage breakdown to each line (runnel)
# Extra arguments after -- go to `runnel bench e2e`.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
mode=e2e system=runnel-1 runs=5 duration=15s rate=10000 bin="" work="" gctrace=false trace=0 breakdown=false
sets=() extra=()
while [[ $# -gt 0 ]]; do
	case "$1" in
	--system) system=$2; shift 2 ;;
	--mode) mode=$2; shift 2 ;;
	--runs) runs=$2; shift 2 ;;
	--duration) duration=$2; shift 2 ;;
	--rate) rate=$2; shift 2 ;;
	--bin) bin=$2; shift 2 ;;
	--work) work=$2; shift 2 ;;
	--set) sets+=(--set "$2"); shift 2 ;;
	--gctrace) gctrace=true; shift ;;
	--trace) trace=$2; shift 2 ;;
	--breakdown) breakdown=true; shift ;;
	--) shift; extra=("$@"); break ;;
	-h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
	*) echo "fresh.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
[[ -n "$work" ]] || work=$(mktemp -d /tmp/runnel-e2e.XXXXXX)
mkdir -p "$work"
if [[ -z "$bin" ]]; then
	bin="$work/bin"
	mkdir -p "$bin"
	(cd "$root" && go build -o "$bin/runnel" ./cmd/runnel && go build -o "$bin/kfakeserver" ./bench/kfakeserver)
fi
echo "== $system, $runs runs of $mode${extra:+ ${extra[*]}} ($duration at $rate records/s for e2e); work $work; load: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

base=21000
pids=()
stop_all() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	pids=()
}
trap stop_all EXIT

wait_ready() { # url
	for _ in $(seq 1 600); do
		curl -sf "$1" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	echo "fresh.sh: $1 never answered" >&2
	return 1
}

start_system() { # run number; sets boot, metrics
	local n nodes=1 voters=""
	case "$system" in
	runnel-1) nodes=1 ;;
	runnel-3) nodes=3 ;;
	kfake | kfake-sync)
		local args=(-port "$base")
		if [[ "$system" == kfake-sync ]]; then args+=(-data-dir "$work/data-kfake" -sync); fi
		mkdir -p "$work/data-kfake"
		"$bin/kfakeserver" "${args[@]}" >"$work/kfake.log" 2>&1 &
		pids+=($!)
		boot="127.0.0.1:$base" metrics=""
		for _ in $(seq 1 300); do (echo >/dev/tcp/127.0.0.1/$base) 2>/dev/null && return 0; sleep 0.1; done
		echo "fresh.sh: kfake did not listen" >&2; return 1 ;;
	*) echo "fresh.sh: unknown system $system" >&2; exit 2 ;;
	esac
	for n in $(seq 1 $nodes); do voters+="${voters:+,}$n@127.0.0.1:$((base + 10 + n))"; done
	boot="" metrics=""
	for n in $(seq 1 $nodes); do
		local args=(server --data-dir "$work/data-n$n" --listen "127.0.0.1:$((base + n))"
			--controller-listen "127.0.0.1:$((base + 10 + n))" --http-listen "127.0.0.1:$((base + 20 + n))"
			--set http.pprof.enable=true "${sets[@]}")
		if ((nodes > 1)); then args+=(--node-id "$n" --controllers "$voters"); fi
		if $gctrace; then
			GODEBUG=gctrace=1 "$bin/runnel" "${args[@]}" >"$work/run$1-n$n.log" 2>&1 &
		else
			"$bin/runnel" "${args[@]}" >"$work/run$1-n$n.log" 2>&1 &
		fi
		pids+=($!)
		boot+="${boot:+,}127.0.0.1:$((base + n))"
		metrics+="${metrics:+,}http://127.0.0.1:$((base + 20 + n))/metrics"
	done
	for n in $(seq 1 $nodes); do wait_ready "http://127.0.0.1:$((base + 20 + n))/readyz"; done
}

[[ "$mode" == e2e ]] && printf '%-4s %8s %8s %8s %8s %s\n' run p50 p99 p99.9 max "produce p99, stages" >&2
for k in $(seq 1 "$runs"); do
	rm -rf "$work"/data-*
	sync
	start_system "$k"
	if [[ "$mode" == e2e ]]; then
		args=(bench e2e -b "$boot" --json --duration "$duration" --rate "$rate" --partitions 3)
	else
		args=(bench produce -b "$boot" --json --partitions 3)
	fi
	[[ "$system" == runnel-3 ]] && args+=(--replication-factor 3 --acks all)
	if $breakdown; then args+=(--breakdown "--metrics-url=$metrics"); fi # empty for kfake: the clients' stages only
	if ((trace > 0)) && [[ "$system" == runnel-* ]]; then
		# From the middle of the run: the start (topic creation, first fetches) is not
		# what the tail of a steady run is made of.
		(sleep "$(($(echo "$duration" | tr -dc 0-9) / 2))"
			curl -sf -o "$work/run$k.trace" "http://127.0.0.1:$((base + 21))/debug/pprof/trace?seconds=$trace") &
	fi
	"$bin/runnel" "${args[@]}" "${extra[@]}" >"$work/run$k.json" 2>"$work/run$k.err" || {
		echo "run $k failed: $(tail -1 "$work/run$k.err")" >&2
	}
	wait_jobs=$(jobs -rp | grep -v -F -x -f <(printf '%s\n' "${pids[@]}") || true)
	for j in $wait_jobs; do wait "$j" 2>/dev/null || true; done
	stop_all
	if [[ "$mode" == e2e ]]; then
		jq -r --arg k "$k" '[$k, (.e2e_latency_ms | .p50, .p99, .p99_9, .max)] | @tsv' "$work/run$k.json" 2>/dev/null |
			awk -F'\t' '{ printf "%-4s %8.2f %8.2f %8.2f %8.2f", $1, $2, $3, $4, $5 }' >&2 || true
	else
		jq -r --arg k "$k" '[$k, .records_per_sec, .mb_per_sec, .produce_latency_ms.p50, .produce_latency_ms.p99] | @tsv' "$work/run$k.json" 2>/dev/null |
			awk -F'\t' '{ printf "%-4s %8.0f rec/s %8.1f MB/s p50 %.2f", $1, $2, $3, $4 }' >&2 || true
	fi
	jq -r '" produce p99 \(.produce_latency_ms.p99)" + ([.breakdown_ms[]? | " \(.stage) \(.p99 * 100 | round / 100)/\(.p99_9 * 100 | round / 100)"] | join(""))' \
		"$work/run$k.json" >&2 2>/dev/null || echo >&2
done
rm -rf "$work"/data-*
echo "== done; reports in $work/run*.json; load: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
