#!/usr/bin/env bash
# Runs the README's "Five-minute tour" and "A local cluster" demo as a newcomer would,
# word for word (the commands are read out of README.md, so the README cannot drift
# from the program), with a binary built from this checkout by scripts/build.sh, then
# the demo's kill -9: one node of the dev cluster is killed and writes must go on
# through the others at once. It uses the README's default ports (9092-9114, 9644),
# which must be free. Exit status 0 when everything worked; otherwise the failing step
# and its output. go test does not run it (it needs those ports free): run it by hand
# or in a release check. internal/doctest runs every other command of README.md and
# docs/*.md against a node of its own on every go test.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	pkill -9 -f "$work/bin/runnel" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "readme-tour: $*" >&2; exit 1; }

mkdir -p "$work/bin" "$work/tour" "$work/cluster"
bash "$root/scripts/build.sh" -o "$work/bin/runnel"
export PATH="$work/bin:$PATH"

# block HEADING prints the first ```sh block after the line "HEADING".
block() {
	awk -v h="$1" '$0 == h { f = 1; next } f && /^```sh/ { c = 1; next } c && /^```/ { exit } c { print }' "$root/README.md"
}
# wait_for CMD... retries CMD for up to 30 s (a node starting).
wait_for() {
	for _ in $(seq 300); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
	return 1
}

# --- The five-minute tour.
tour=$(block "## Five-minute tour")
[ -n "$tour" ] || fail "README has no ## Five-minute tour code block"
echo "$tour" | grep -qx 'runnel server' || fail "the tour no longer starts with 'runnel server'"
cd "$work/tour"
runnel server >"$work/server.log" 2>&1 &
pids+=($!)
server=$!
wait_for runnel topic list || { cat "$work/server.log"; fail "runnel server did not serve within 30 s"; }
steps=$(echo "$tour" | grep -v -x 'runnel server')
if ! command -v kcat >/dev/null; then
	steps=$(echo "$steps" | grep -v '^kcat ')
	echo "readme-tour: kcat is not installed; its step is skipped"
fi
out=$(bash -euo pipefail -c "$steps" 2>&1) || { echo "$out"; fail "a step of the tour failed"; }
for want in 'alice=1 apple' 'bob=2 pears' 'alice=3 plums'; do
	echo "$out" | grep -Eq "^[0-9]+/[0-9]+ $want\$" || { echo "$out"; fail "the tour's consume did not print 'P/O $want'"; }
done
kill -TERM "$server"
wait "$server" || fail "runnel server did not exit 0 on SIGTERM"
echo "readme-tour: five-minute tour OK"

# --- The local cluster, then kill -9 of one node.
demo=$(block "## A local cluster")
echo "$demo" | grep -q '^runnel dev-cluster --nodes 3' || fail "the cluster demo no longer starts with 'runnel dev-cluster --nodes 3'"
cd "$work/cluster"
runnel dev-cluster --nodes 3 >"$work/dev.log" 2>&1 &
dev=$!
pids+=($dev)
wait_for grep -q 'bootstrap:' "$work/dev.log" || { cat "$work/dev.log"; fail "dev-cluster not ready within 30 s"; }
steps=$(echo "$demo" | grep -v '^runnel dev-cluster')
out=$(bash -euo pipefail -c "$steps" 2>&1) || { echo "$out"; fail "a step of the cluster demo failed"; }
echo "$out" | grep -q 'Controller' || { echo "$out"; fail "cluster status printed no controller"; }
victim=$(awk '$1 == "node" && $2 == "2" && $3 == "pid" { print $4; exit }' "$work/dev.log")
[ -n "$victim" ] || { cat "$work/dev.log"; fail "the ready table shows no pid for node 2"; }
kill -9 "$victim"
start=$(date +%s%N)
printf 'after-kill\n' | runnel -b 127.0.0.1:9092,127.0.0.1:9112 produce demo --acks all ||
	fail "produce with acks=all after kill -9 of node 2 failed"
took=$((($(date +%s%N) - start) / 1000000))
echo "readme-tour: acks=all produce after kill -9 of node 2 took ${took} ms"
[ "$took" -lt 3000 ] || fail "writes resumed only ${took} ms after the kill (the README promises about 0.1 s)"
status=$(runnel -b 127.0.0.1:9092 cluster status 2>&1) || true
echo "$status" | grep -q '1 of 3 nodes down' || { echo "$status"; fail "cluster status does not say '1 of 3 nodes down'"; }
kill -0 "$dev" 2>/dev/null || { cat "$work/dev.log"; fail "dev-cluster stopped after one node was killed"; }
grep -q 'node 2' "$work/dev.log" && grep -qi 'restart' "$work/dev.log" || { cat "$work/dev.log"; fail "dev-cluster did not say how to restart node 2"; }
kill -INT "$dev"
wait "$dev" || fail "dev-cluster did not exit 0 on Ctrl-C"
echo "readme-tour: local cluster and kill -9 OK"
