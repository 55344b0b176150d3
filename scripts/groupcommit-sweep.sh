#!/usr/bin/env bash
# groupcommit-sweep.sh: how SQLite's group commit holds up as clients grow.
#
# Runs cmd/plantstore on a new SQLite file (the default: WAL,
# synchronous=FULL) for each number of connections in CONNS_LIST, pinned to
# one core with wrk -t1 on the other, and prints for each the creates/s,
# the creates per commit and the commit time (from the binary's own
# plantstore_storage_group_commit_* metrics), and wrk's p50 and p99.
# With BASE set, it builds cmd/plantstore from that commit too and runs the
# two alternately, base then work tree, for each count and round, so that
# drift hits both alike.
#
# Usage: scripts/groupcommit-sweep.sh
#        BASE=main ROUNDS=3 scripts/groupcommit-sweep.sh
#        CONNS_LIST="32 128" DB=postgres scripts/groupcommit-sweep.sh
#
# Environment (all optional):
#   BASE=rev                   also run cmd/plantstore built from rev, as "base"
#   CONNS_LIST="8 32 128 512"  connection counts
#   ROUNDS=3 DURATION=6s       rounds per count and server, length of one run
#   DB=sqlite                  sqlite, or postgres (on BENCH_POSTGRES_DSN or
#                              PLANTSTORE_TEST_POSTGRES_DSN, in a new schema each run)
#   DB_DIR=dir                 where the SQLite files go (default: a new temporary
#                              directory); DB_DIR=/dev/shm, whose flush is free,
#                              shows the committer where the flush costs least
#   SERVER_CPU=0 CLIENT_CPU=1  cores for the server and wrk
#   EXTRA_ARGS="-log-level warn"  more arguments for the server
#
# The in-process counterpart, which also models a slow flush, is
#   go test ./sqlstore -run '^$' -bench GroupCommitSweep -cpu 1
set -euo pipefail

BASE=${BASE:-}
CONNS_LIST=${CONNS_LIST:-8 32 128 512}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-6s}
DB=${DB:-sqlite}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
EXTRA_ARGS=${EXTRA_ARGS:--log-level warn}
BENCH_POSTGRES_DSN=${BENCH_POSTGRES_DSN:-${PLANTSTORE_TEST_POSTGRES_DSN:-}}
export BENCH_TOKEN=${BENCH_TOKEN:-groupcommit-sweep}

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
lua="$repo/scripts/loopback-post.lua"
tmp=$(mktemp -d)
dbdir=$tmp/db
[[ -n ${DB_DIR:-} ]] && dbdir=$(mktemp -d -p "$DB_DIR" -u groupcommit-sweep.XXXXXX)
server_pid=""
cleanup() {
	if [[ -n $server_pid ]]; then
		kill "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
	rm -rf "$tmp" "$dbdir"
	if [[ $DB == postgres ]]; then
		for name in base new; do
			psql -q "$BENCH_POSTGRES_DSN" -c "DROP SCHEMA IF EXISTS groupcommit_sweep_${name}_$$ CASCADE" >/dev/null 2>&1 || true
		done
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
die() { echo "groupcommit-sweep: $*" >&2; exit 1; }
# shellcheck source=scripts/bench-lib.sh
source "$repo/scripts/bench-lib.sh"

command -v wrk >/dev/null || die "wrk is missing (apt-get install -y wrk)"
command -v taskset >/dev/null || die "taskset not found (package util-linux)"
case $DB in
sqlite) ;;
postgres)
	[[ -n $BENCH_POSTGRES_DSN ]] || die "DB=postgres needs BENCH_POSTGRES_DSN or PLANTSTORE_TEST_POSTGRES_DSN"
	command -v psql >/dev/null || die "DB=postgres needs psql to make a schema for each run"
	;;
*) die "DB must be sqlite or postgres, not $DB" ;;
esac

servers=(new)
(cd "$repo" && go build -o "$tmp/plantstore-new" ./cmd/plantstore)
if [[ -n $BASE ]]; then
	rev=$(git -C "$repo" rev-parse --short "$BASE^{commit}")
	mkdir "$tmp/base"
	git -C "$repo" archive "$rev" | tar -x -C "$tmp/base"
	(cd "$tmp/base" && go build -o "$tmp/plantstore-base" ./cmd/plantstore)
	servers=(base new)
	echo "base is $BASE ($rev); new is the work tree ($(git -C "$repo" describe --always --dirty))" >&2
fi

# metric NAME URL: the value of the unlabelled series NAME on URL's /metrics.
metric() {
	curl -fsS "$2/metrics" | awk -v n="$1" '$1 == n { print $2; found = 1 } END { if (!found) print 0 }'
}

# ms V: wrk's latency V (such as 850.12us, 3.10ms, 1.02s) in milliseconds.
ms() {
	awk -v v="$1" 'BEGIN { u = v; sub(/^[0-9.]+/, "", u); sub(/[a-z]+$/, "", v)
		printf "%.3f", v * (u == "us" ? 0.001 : u == "ms" ? 1 : u == "s" ? 1000 : u == "m" ? 60000 : 0) }'
}

# run NAME CONNS: one run; prints "creates/s per_commit commit_us p50_ms p99_ms non200".
run() {
	local name=$1 conns=$2 out="$tmp/server.out" db maddr
	: >"$out"
	if [[ $DB == sqlite ]]; then
		rm -rf "$dbdir" && mkdir "$dbdir"
		db="$dbdir/plants.db"
	else
		# A new schema of this server's own each run: the builds may be at
		# different schema versions.
		db=$(new_pg_schema "$BENCH_POSTGRES_DSN" "groupcommit_sweep_${name}_$$")
	fi
	# The metrics port is picked at random: try again when it is taken.
	for _ in 1 2 3 4 5; do
		maddr="127.0.0.1:$(( 20000 + RANDOM % 20000 ))"
		# shellcheck disable=SC2086 # EXTRA_ARGS is a list of words.
		PLANTSTORE_TOKENS=$BENCH_TOKEN taskset -c "$SERVER_CPU" "$tmp/plantstore-$name" -addr 127.0.0.1:0 \
			-db "$db" -metrics-addr "$maddr" $EXTRA_ARGS >"$out" 2>"$tmp/server.err" &
		server_pid=$!
		sleep 0.2
		if kill -0 "$server_pid" 2>/dev/null || ! grep -q "address already in use" "$tmp/server.err"; then
			break
		fi
		wait "$server_pid" 2>/dev/null || true
	done
	wait_listening "$name" "$out" "$tmp/server.err"
	local murl="http://$maddr" n0 s0 d0 n1 s1 d1
	n0=$(metric plantstore_storage_group_commit_batch_size_count "$murl")
	s0=$(metric plantstore_storage_group_commit_batch_size_sum "$murl")
	d0=$(metric plantstore_storage_group_commit_duration_seconds_sum "$murl")
	BENCH_ID_BASE=$(( $(date +%s) * 1000000 + RANDOM * 10 )) \
		taskset -c "$CLIENT_CPU" wrk -t1 -c"$conns" -d"$DURATION" --timeout 10s --latency -s "$lua" "$server_url" >"$tmp/wrk.out"
	n1=$(metric plantstore_storage_group_commit_batch_size_count "$murl")
	s1=$(metric plantstore_storage_group_commit_batch_size_sum "$murl")
	d1=$(metric plantstore_storage_group_commit_duration_seconds_sum "$murl")
	stop_server
	local rps p50 p99 bad
	rps=$(awk '/^Requests\/sec:/ { print $2 }' "$tmp/wrk.out")
	p50=$(ms "$(awk '/^ +50%/ { print $2 }' "$tmp/wrk.out")")
	p99=$(ms "$(awk '/^ +99%/ { print $2 }' "$tmp/wrk.out")")
	bad=$(awk '/Non-2xx or 3xx responses:/ { b += $NF }
		/Socket errors:/ { for (i = 4; i <= NF; i += 2) { v = $i; sub(/,/, "", v); b += v } }
		END { print b + 0 }' "$tmp/wrk.out")
	[[ -n $rps ]] || die "no req/s in wrk's output: $(cat "$tmp/wrk.out")"
	awk -v r="$rps" -v n="$(( ${n1%.*} - ${n0%.*} ))" -v s="$s1" -v s0="$s0" -v d="$d1" -v d0="$d0" \
		-v p50="$p50" -v p99="$p99" -v bad="$bad" 'BEGIN {
		printf "%s %.1f %.0f %s %s %d\n", r, (n > 0 ? (s - s0) / n : 0), (n > 0 ? (d - d0) / n * 1e6 : 0), p50, p99, bad }'
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
echo "$DB; server on core $SERVER_CPU, wrk -t1 on core $CLIENT_CPU; $ROUNDS rounds of $DURATION per count" >&2
declare -A rows
printf '%-5s %-5s %6s %10s %10s %10s %9s %9s %7s\n' round srv conns creates/s per_commit commit_us p50_ms p99_ms non200
for conns in $CONNS_LIST; do
	for round in $(seq "$ROUNDS"); do
		for name in "${servers[@]}"; do
			line=$(run "$name" "$conns")
			printf '%-5s %-5s %6s %10s %10s %10s %9s %9s %7s\n' "$round" "$name" "$conns" $line
			rows[$name/$conns]+="$line"$'\n'
		done
	done
done
echo
echo "medians over the rounds:"
printf '%-5s %6s %10s %10s %10s %9s %9s %9s\n' srv conns creates/s per_commit commit_us p50_ms p99_ms p99/p50
for conns in $CONNS_LIST; do
	for name in "${servers[@]}"; do
		# shellcheck disable=SC2046 # each column is a list of numbers.
		printf '%-5s %6s %10.0f %10.1f %10.0f %9.2f %9.2f %9.1f\n' "$name" "$conns" \
			"$(median $(awk '{ print $1 }' <<<"${rows[$name/$conns]}"))" \
			"$(median $(awk '{ print $2 }' <<<"${rows[$name/$conns]}"))" \
			"$(median $(awk '{ print $3 }' <<<"${rows[$name/$conns]}"))" \
			"$(median $(awk '{ print $4 }' <<<"${rows[$name/$conns]}"))" \
			"$(median $(awk '{ print $5 }' <<<"${rows[$name/$conns]}"))" \
			"$(median $(awk '$4 > 0 { print $5 / $4 }' <<<"${rows[$name/$conns]}"))"
	done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
