#!/usr/bin/env bash
# webhook-bench.sh measures webhook delivery against creates: it runs the real
# plantstore binary on a new SQLite file with one webhook subscriber, which is
# cmd/plantload -webhook-listen answering every delivery at once, loads it with
# POST /plants for DURATION, then waits for the deliveries still due. All on
# 127.0.0.1; every run stops by itself (plantload waits at most WAIT after the
# load).
#
# Per round and server it prints creates/s and deliveries/s during the load,
# the backlog (plants created and not yet delivered) when the load ended, how
# long that backlog took to drain, deliveries/s over load and drain, and
# duplicate deliveries; then the medians.
#
# Usage: scripts/webhook-bench.sh
#        SERVERS="old new" BIN_old=/tmp/a BIN_new=/tmp/b scripts/webhook-bench.sh
#
# SERVERS lists names of binaries: "plantstore" is BENCH_BIN (default:
# ./cmd/plantstore built here); any other name is BIN_<name>. The servers
# alternate within each round, on a new database file each run.
#
# Environment (all optional):
#   ROUNDS=3 DURATION=8s CONNS=32 WAIT=2m   rounds, load length, connections, drain bound
#   DOWN=0s                                 the subscriber answers 503 for this long from
#                                           the start (DOWN=$DURATION: down during the load)
#   SERVER_CPU=0 CLIENT_CPU=1               cores to pin the server and plantload to
#                                           (PIN=0 pins nothing)
#   EXTRA_ARGS=""                           more arguments for every server
#   BENCH_KEEP=dir                          keep every run's output and server log in dir
set -euo pipefail

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-8s}
CONNS=${CONNS:-32}
WAIT=${WAIT:-2m}
DOWN=${DOWN:-0s}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
PIN=${PIN:-1}
SERVERS=${SERVERS:-plantstore}
EXTRA_ARGS=${EXTRA_ARGS:-}
read -r -a servers <<<"$SERVERS"

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tmp=$(mktemp -d)
server_pid=""

cleanup() {
	if [[ -n $server_pid ]]; then
		kill "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
	if [[ -n ${BENCH_KEEP:-} ]]; then
		mkdir -p "$BENCH_KEEP" && cp "$tmp"/*.out "$tmp"/*.log "$BENCH_KEEP"/ 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

die() { echo "webhook-bench: $*" >&2; exit 1; }
# shellcheck source=scripts/bench-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/bench-lib.sh"

# The commands that pin the server and plantload, or nothing.
pin_server=() pin_client=()
if [[ $PIN == 1 ]]; then
	command -v taskset >/dev/null || die "taskset not found (package util-linux); or set PIN=0"
	pin_server=(taskset -c "$SERVER_CPU") pin_client=(taskset -c "$CLIENT_CPU")
fi
for name in "${servers[@]}"; do
	[[ $name =~ ^[A-Za-z0-9_]+$ ]] || die "server names are letters, digits and _: not \"$name\""
done

echo "building into $tmp" >&2
(
	cd "$repo"
	go build -o "$tmp/plantload" ./cmd/plantload
	if [[ -z ${BENCH_BIN:-} ]]; then
		go build -o "$tmp/plantstore" ./cmd/plantstore
	fi
)

export PLANTSTORE_TOKENS=webhook-bench
# A fixed secret for a throwaway database: plantload checks every signature.
export PLANTSTORE_WEBHOOK_SECRET=whsec_d2ViaG9vay1iZW5jaCBzaWduaW5nIGtleSwgMzIgYnl0ZXM=

# free_port prints a loopback port that nothing listens on now.
free_port() {
	local p
	for _ in $(seq 100); do
		p=$(( 20000 + RANDOM % 30000 ))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
	die "no free port found"
}

# start_server NAME HOOK_PORT LOG: starts the server on a new SQLite file and
# sets server_pid and server_url once it prints its listening line.
start_server() {
	local name=$1 port=$2 log=$3 bin out="$tmp/server.out"
	if [[ $name == plantstore ]]; then bin=${BENCH_BIN:-$tmp/plantstore}
	else local b="BIN_$name"; bin=${!b:-}; [[ -n $bin ]] || die "server $name needs BIN_$name"
	fi
	rm -rf "$tmp/db" && mkdir "$tmp/db"
	: >"$out"
	# shellcheck disable=SC2086 # EXTRA_ARGS is a list of words.
	"${pin_server[@]}" "$bin" -addr 127.0.0.1:0 -db "$tmp/db/plants.db" \
		-webhook "http://127.0.0.1:$port/" $EXTRA_ARGS >"$out" 2>"$log" &
	server_pid=$!
	wait_listening "$name" "$out" "$log"
}



echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine skews the figures)" >&2
echo "$(nproc) cores; $ROUNDS rounds of $DURATION, $CONNS connections, one subscriber (down for the first $DOWN); all on 127.0.0.1" >&2
declare -A creates_of hooks_of drain_of overall_of
bad=0
printf '%-6s %-11s %10s %12s %9s %9s %12s %5s\n' round server creates/s webhooks/s backlog drain_s webhooks/s_all dups
for round in $(seq "$ROUNDS"); do
	for name in "${servers[@]}"; do
		port=$(free_port)
		out="$tmp/$name-$round.out"
		start_server "$name" "$port" "$tmp/$name-$round.log"
		status=0
		"${pin_client[@]}" "$tmp/plantload" -url "$server_url" -c "$CONNS" -d "$DURATION" \
			-webhook-listen "127.0.0.1:$port" -webhook-wait "$WAIT" -webhook-down "$DOWN" >"$out" 2>&1 || status=$?
		stop_server
		read -r creates hooks backlog drain overall dups < <(awk -F': *' '
			$1 == "creates/s" { c = $2 }
			$1 == "webhooks/s in load" { h = $2 }
			$1 == "webhook backlog" { b = $2 }
			$1 == "webhook drain" { d = $2; if (d ~ /^not drained/) d = "inf"; else if (d ~ /ms$/) { sub(/ms$/, "", d); d /= 1000 } else if (d ~ /m[0-9.]+s$/) { split(d, p, "m"); sub(/s$/, "", p[2]); d = p[1] * 60 + p[2] } else sub(/s$/, "", d) }
			$1 == "webhooks/s overall" { o = $2 }
			$1 == "webhook duplicates" { u = $2 }
			END { printf "%s %s %s %s %s %s\n", c, h, b, d, o, u }' "$out")
		[[ -n $creates ]] || die "no figures from plantload for $name round $round: $(cat "$out")"
		printf '%-6s %-11s %10.1f %12.1f %9d %9s %12.1f %5d\n' "$round" "$name" "$creates" "$hooks" "$backlog" "$drain" "$overall" "$dups"
		(( status == 0 )) || { bad=1; echo "webhook-bench: plantload exited $status for $name round $round:" >&2; grep -E 'not drained|bad signature|status [^2]' "$out" >&2 || true; }
		creates_of[$name]+="$creates "; hooks_of[$name]+="$hooks "; drain_of[$name]+="$drain "; overall_of[$name]+="$overall "
	done
done
for name in "${servers[@]}"; do
	# shellcheck disable=SC2086 # the lists are words.
	printf '%-6s %-11s %10.1f %12.1f %9s %9s %12.1f\n' median "$name" "$(median ${creates_of[$name]})" \
		"$(median ${hooks_of[$name]})" "" "$(median ${drain_of[$name]})" "$(median ${overall_of[$name]})"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
exit "$bad"
