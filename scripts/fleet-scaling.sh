#!/usr/bin/env bash
# fleet-scaling.sh measures creates/s of a fleet of 1, 2, 3… plantstore
# instances on one PostgreSQL database with webhooks on, over loopback: the
# instances share the database and its outbox, and the load is split evenly
# over them. Each row starts the instances on a fresh schema (dropped after),
# with -webhook to a subscriber that answers every delivery 200 (the floor
# server), runs one cmd/plantload per instance at once, and adds up their
# rates. Several binaries can be compared in one run: the rows alternate.
#
# Usage: scripts/fleet-scaling.sh
#        BINS="old new" BIN_old=/tmp/a BIN_new=/tmp/b scripts/fleet-scaling.sh
#
# Environment (all optional):
#   PG_DSN=postgres://postgres@127.0.0.1:5432/test?sslmode=disable
#   INSTANCES="1 2 3"   fleet sizes, one row each
#   CONNS=48            client connections in all, split over the instances
#   DURATION=10s        length of each row
#   ROUNDS=1            rows per binary and fleet size
#   BINS=plantstore     names of the binaries to compare; BIN_<name> is each
#                       one's path (default: ./cmd/plantstore built here)
set -euo pipefail

PG_DSN=${PG_DSN:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}
INSTANCES=${INSTANCES:-1 2 3}
CONNS=${CONNS:-48}
DURATION=${DURATION:-10s}
ROUNDS=${ROUNDS:-1}
BINS=${BINS:-plantstore}
export BENCH_TOKEN=fleet-scaling
export PLANTSTORE_WEBHOOK_SECRET=whsec_fleetscalingfleetscalingfleetscaling

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tmp=$(mktemp -d)
pids=()
schema=""

# shellcheck source=scripts/bench-lib.sh
source "$repo/scripts/bench-lib.sh"
die() { echo "fleet-scaling: $*" >&2; exit 1; }
q() { PGOPTIONS='-c client_min_messages=warning' psql "$PG_DSN" -XAtqc "$1"; }
stop_all() {
	local pid
	for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
	for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
	pids=()
	if [[ -n $schema ]]; then q "DROP SCHEMA IF EXISTS $schema CASCADE" || true; fi
	schema=""
}
cleanup() {
	stop_all
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

(
	cd "$repo"
	go build -o "$tmp/plantload" ./cmd/plantload
	go build -o "$tmp/floorserver" ./internal/floor/cmd/floorserver
	go build -o "$tmp/plantstore" ./cmd/plantstore
)

# start NAME OUT ERR ARGS...: starts a server, adds it to pids and sets
# server_url once it prints its listening line.
start() {
	local name=$1 out=$2 err=$3
	shift 3
	PLANTSTORE_TOKENS=$BENCH_TOKEN "$@" >"$out" 2>"$err" &
	server_pid=$!
	pids+=("$server_pid")
	wait_listening "$name" "$out" "$err"
}

start subscriber "$tmp/sub.out" "$tmp/sub.err" "$tmp/floorserver" -addr 127.0.0.1:0
subscriber=$server_url sub_pid=$server_pid
pids=()
trap 'stop_all; kill $sub_pid 2>/dev/null; rm -rf "$tmp"' EXIT

sep='?'; [[ $PG_DSN == *\?* ]] && sep='&'
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores; $CONNS connections in all; $DURATION a row; webhooks to $subscriber" >&2
printf '%-6s %-12s %9s %12s %10s %8s\n' round binary instances creates/s p99_ms errors
declare -A rates
for round in $(seq "$ROUNDS"); do
	for n in $INSTANCES; do
		for name in $BINS; do
			b="BIN_$name"
			bin=${!b:-$tmp/plantstore}
			schema=plantstore_fleet_scaling_$$_$n
			q "CREATE SCHEMA $schema"
			urls=()
			for i in $(seq "$n"); do
				start "$name-$i" "$tmp/ps$i.out" "$tmp/ps$i.err" "$bin" -addr 127.0.0.1:0 -log-level warn \
					-db "$PG_DSN${sep}search_path=$schema" -webhook "$subscriber/hooks"
				urls+=("$server_url")
			done
			loads=()
			base=$(($(date +%s) * 1000000000))
			for i in $(seq "$n"); do
				"$tmp/plantload" -url "${urls[$((i - 1))]}" -token "$BENCH_TOKEN" -c $((CONNS / n)) -d "$DURATION" \
					-start-id $((base + i * 1000000000)) >"$tmp/load$i.out" 2>&1 &
				loads+=($!)
			done
			for pid in "${loads[@]}"; do wait "$pid" || true; done
			read -r rate p99 errors < <(cat "$tmp"/load*.out | awk -F': *' '
				$1 == "req/s" { rate += $2 }
				$1 == "latency p99" { v = $2; sub(/ms$/, "", v); if (v > p99) p99 = v }
				$1 ~ /^status / && $1 != "status 200" { bad += $2 }
				$1 == "transport errors" { bad += $2 }
				END { printf "%.0f %.1f %d\n", rate, p99, bad }')
			rm -f "$tmp"/load*.out
			printf '%-6s %-12s %9d %12s %10s %8s\n' "$round" "$name" "$n" "$rate" "$p99" "$errors"
			rates[$name/$n]+="$rate "
			stop_all
		done
	done
done
for name in $BINS; do
	for n in $INSTANCES; do
		# shellcheck disable=SC2086 # the list is words.
		printf 'median %-12s %2d instances: %8.0f creates/s\n' "$name" "$n" "$(median ${rates[$name/$n]})"
	done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
