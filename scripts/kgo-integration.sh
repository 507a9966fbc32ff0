#!/usr/bin/env bash
# Runs franz-go's own integration tests (pkg/kgo of the franz-go version go.mod names,
# from the module cache, unchanged) against Runnel: builds runnel, starts one node or a
# 3-node dev cluster on loopback, runs the kgo tests with their env knobs (KGO_SEEDS,
# KGO_TEST_RF, KGO_TEST_RECORDS) and prints PASS/FAIL/SKIP per test and the counts.
# Exits 1 when a test fails.
#
#   scripts/kgo-integration.sh                      # one node, every test
#   scripts/kgo-integration.sh --nodes 3            # three nodes, topics at RF 3
#   scripts/kgo-integration.sh --run 'TestGroupETL|TestShare' --records 2000
#
# Options: --nodes 1|3 (1), --records N (KGO_TEST_RECORDS, 5000; franz-go's default
# of 500000 takes long on a small machine), --run REGEX (go test -run, every test),
# --timeout DURATION (15m), --base-port P (29092; a node uses P..P+2, node N of three
# P+10(N-1)..), --keep (leave the data directory and node log). The node log is
# printed on failure. internal/interop's TestKgoIntegration runs the group, KIP-848
# and share-group tests in CI.
set -euo pipefail
cd "$(dirname "$0")/.."

nodes=1 records=5000 run=. timeout=15m base=29092 keep=0
while [ $# -gt 0 ]; do
	case "$1" in
	--nodes) nodes=$2; shift 2 ;;
	--records) records=$2; shift 2 ;;
	--run) run=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--base-port) base=$2; shift 2 ;;
	--keep) keep=1; shift ;;
	*) echo "kgo-integration: unknown argument $1" >&2; exit 2 ;;
	esac
done
case "$nodes" in 1|3) ;; *) echo "kgo-integration: --nodes is 1 or 3" >&2; exit 2 ;; esac

version=$(go list -m -f '{{.Version}}' github.com/twmb/franz-go)
src=$(go list -m -f '{{.Dir}}' github.com/twmb/franz-go)
if [ ! -f "$src/pkg/kgo/helpers_test.go" ]; then
	echo "kgo-integration: franz-go $version's source is not in the module cache (go mod download github.com/twmb/franz-go)" >&2
	exit 2
fi

work=$(mktemp -d /tmp/runnel-kgo.XXXXXX)
node_pid=
cleanup() {
	if [ -n "$node_pid" ]; then
		kill "$node_pid" 2>/dev/null || true
		wait "$node_pid" 2>/dev/null || true
	fi
	if [ "$keep" = 1 ]; then
		echo "kept $work (data/, node.log)"
	else
		rm -rf "$work"
	fi
}
trap cleanup EXIT

echo "building runnel and franz-go $version's kgo tests ..."
go build -o "$work/runnel" ./cmd/runnel
go test -c -o "$work/kgo.test" github.com/twmb/franz-go/pkg/kgo

if [ "$nodes" = 1 ]; then
	seeds=127.0.0.1:$base
	"$work/runnel" server --listen "$seeds" --controller-listen "127.0.0.1:$((base + 1))" \
		--http-listen "127.0.0.1:$((base + 2))" --data-dir "$work/data" >"$work/node.log" 2>&1 &
	node_pid=$!
	ready='runnel node ready'
else
	seeds=127.0.0.1:$base,127.0.0.1:$((base + 10)),127.0.0.1:$((base + 20))
	"$work/runnel" dev-cluster --nodes 3 --base-port "$base" --data-dir "$work/data" >"$work/node.log" 2>&1 &
	node_pid=$!
	ready='nodes ready'
fi
for _ in $(seq 600); do
	grep -q "$ready" "$work/node.log" && break
	if ! kill -0 "$node_pid" 2>/dev/null; then
		echo "kgo-integration: runnel exited before it was ready:" >&2
		tail -50 "$work/node.log" >&2
		exit 1
	fi
	sleep 0.1
done
grep -q "$ready" "$work/node.log" || { echo "kgo-integration: runnel not ready in 60 s" >&2; tail -50 "$work/node.log" >&2; exit 1; }

echo "running franz-go $version's kgo tests against $nodes node(s) at $seeds (KGO_TEST_RECORDS=$records, -run '$run') ..."
status=0
(cd "$src/pkg/kgo" && KGO_SEEDS=$seeds KGO_TEST_RF=$nodes KGO_TEST_RECORDS=$records KGO_LOG_LEVEL=none \
	"$work/kgo.test" -test.v -test.count=1 -test.timeout "$timeout" -test.run "$run") >"$work/kgo.log" 2>&1 || status=$?

# One line per test and subtest, then the counts of the top-level tests.
grep -E -- '^ *--- (PASS|FAIL|SKIP): ' "$work/kgo.log" | sed -E 's/^ *--- (PASS|FAIL|SKIP): ([^ ]+).*/\1 \2/' | sort -k2 -u | sort -k2
echo "top-level tests: $(grep -cE -- '^--- PASS' "$work/kgo.log" || true) passed," \
	"$(grep -cE -- '^--- FAIL' "$work/kgo.log" || true) failed, $(grep -cE -- '^--- SKIP' "$work/kgo.log" || true) skipped"
if [ "$status" != 0 ]; then
	echo "kgo-integration: the kgo tests failed (exit $status); their output's end:" >&2
	tail -80 "$work/kgo.log" >&2
	echo "node log's end:" >&2
	tail -30 "$work/node.log" >&2
	keep=1
	exit 1
fi
