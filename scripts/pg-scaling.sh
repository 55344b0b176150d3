#!/usr/bin/env bash
# pg-scaling.sh measures what one PostgreSQL primary gives plantstore on this
# machine: creates/s at several client counts (with the fsyncs and the CPU
# they cost), list pages/s, and bytes per stored plant. It runs one plantstore
# process on a fresh schema of the database $PG_DSN names, drives it over
# loopback with cmd/plantload (creates) and wrk (list pages), and drops the
# schema at the end. Figures are this machine's, under whatever else runs on
# it: the script prints the load average before each run.
#
# Usage: scripts/pg-scaling.sh
#
# Environment (all optional):
#   PG_DSN=postgres://postgres@127.0.0.1:5432/test?sslmode=disable
#   CONNS="16 64 256"   client connections, one create run each
#   DURATION=10s        length of each run
#   LIST_CONNS=16       connections of the list run
#   PLANTS=0            before measuring size and lists, create plants until
#                       at least this many are stored
set -euo pipefail

PG_DSN=${PG_DSN:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}
CONNS=${CONNS:-16 64 256}
DURATION=${DURATION:-10s}
LIST_CONNS=${LIST_CONNS:-16}
PLANTS=${PLANTS:-0}
export BENCH_TOKEN=pg-scaling

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tmp=$(mktemp -d)
schema=plantstore_scaling_$$
app=plantstore-scaling-$$
server_pid=""

q() { PGOPTIONS='-c client_min_messages=warning' psql "$PG_DSN" -XAtqc "$1"; }
cleanup() {
	[[ -n $server_pid ]] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null || true
	q "DROP SCHEMA IF EXISTS $schema CASCADE" || true
	rm -rf "$tmp"
}
trap cleanup EXIT

# ticks prints the CPU time, in clock ticks, that the given processes have used.
ticks() {
	local t=0 pid
	for pid in "$@"; do
		[[ -r /proc/$pid/stat ]] || continue
		t=$((t + $(awk '{print $14 + $15}' "/proc/$pid/stat")))
	done
	echo "$t"
}
backends() { q "SELECT pid FROM pg_stat_activity WHERE application_name = '$app'"; }
hz=$(getconf CLK_TCK)
secs() { awk -v d="$1" 'BEGIN { if (d ~ /ms$/) print d/1000; else if (d ~ /m$/) print d*60; else print d+0 }'; }

(cd "$repo" && go build -o "$tmp/plantstore" ./cmd/plantstore && go build -o "$tmp/plantload" ./cmd/plantload)
q "CREATE SCHEMA $schema"
sep='?'; [[ $PG_DSN == *\?* ]] && sep='&'
PLANTSTORE_TOKENS=$BENCH_TOKEN "$tmp/plantstore" -addr 127.0.0.1:0 -log-level warn \
	-db "$PG_DSN${sep}search_path=$schema&application_name=$app" >"$tmp/out" 2>"$tmp/err" &
server_pid=$!
for _ in $(seq 300); do grep -q '^listening on ' "$tmp/out" && break; sleep 0.1; done
url=$(sed -n 's/^listening on //p' "$tmp/out")
[[ -n $url ]] || { cat "$tmp/err" >&2; exit 1; }

echo "PostgreSQL: $(q 'SHOW server_version'), shared_buffers $(q 'SHOW shared_buffers'), wal_sync_method $(q 'SHOW wal_sync_method'), synchronous_commit $(q 'SHOW synchronous_commit')"
echo "machine: $(nproc) cores; loopback; plantstore, plantload and PostgreSQL share them"
echo
printf '%-6s %-10s %-9s %-9s %-10s %-13s %-11s %-11s %-11s %s\n' conns creates/s p50 p99 fsyncs/s creates/fsync plantstore postgres plantload "load avg"
next_id=1
run=0
for c in $CONNS; do
	run=$((run + 1))
	load=$(cut -d' ' -f1 /proc/loadavg)
	# The backends are those the pool has open; the run may open more,
	# whose time then goes uncounted: a lower bound.
	mapfile -t pids < <(backends)
	s0=$(q "SELECT wal_sync FROM pg_stat_wal"); p0=$(ticks "$server_pid"); b0=$(ticks "${pids[@]}")
	TIMEFORMAT='%U %S'
	{ time "$tmp/plantload" -url "$url" -token "$BENCH_TOKEN" -c "$c" -d "$DURATION" -start-id "$next_id" >"$tmp/load-$c"; } 2>"$tmp/time-$c"
	mapfile -t pids2 < <(backends)
	s1=$(q "SELECT wal_sync FROM pg_stat_wal"); p1=$(ticks "$server_pid"); b1=$(ticks "${pids2[@]}")
	# Backends that were open before the run count from where they were.
	b1=$((b1 - b0 + 0))
	d=$(secs "$DURATION")
	n=$(awk '/^status 200:/ {print $3}' "$tmp/load-$c")
	rps=$(awk '/^req\/s:/ {print $2}' "$tmp/load-$c")
	p50=$(awk '/^latency p50:/ {print $3}' "$tmp/load-$c")
	p99=$(awk '/^latency p99:/ {print $3}' "$tmp/load-$c")
	syncs=$((s1 - s0))
	printf '%-6s %-10s %-9s %-9s %-10s %-13s %-11s %-11s %-11s %s\n' "$c" "$rps" "$p50" "$p99" \
		"$(awk -v s="$syncs" -v d="$d" 'BEGIN {printf "%.0f", s/d}')" \
		"$(awk -v n="$n" -v s="$syncs" 'BEGIN {printf "%.1f", (s ? n/s : 0)}')" \
		"$(awk -v t="$((p1 - p0))" -v h="$hz" -v d="$d" 'BEGIN {printf "%.2f cores", t/h/d}')" \
		"$(awk -v t="$b1" -v h="$hz" -v d="$d" 'BEGIN {printf "%.2f cores", t/h/d}')" \
		"$(awk -v d="$d" '{printf "%.2f cores", ($1+$2)/d}' "$tmp/time-$c")" \
		"$load"
	grep -E '^(status|error|transport)' "$tmp/load-$c" | grep -v '^status 200:' | sed 's/^/       /' || true
	next_id=$((next_id + n + 1000000))
done

stored=$(q "SELECT count(*) FROM $schema.plants")
while ((stored < PLANTS)); do
	"$tmp/plantload" -url "$url" -token "$BENCH_TOKEN" -c 64 -n $((PLANTS - stored)) -d 0 -start-id "$next_id" >/dev/null
	next_id=$((next_id + PLANTS + 1000000))
	stored=$(q "SELECT count(*) FROM $schema.plants")
done
max_id=$(q "SELECT max(id) FROM $schema.plants")

echo
q "SELECT 'size after ' || count(*) || ' plants (name ''Monstera'', no tag): table ' ||
	pg_relation_size('$schema.plants') || ' B, primary key ' || pg_indexes_size('$schema.plants') ||
	' B, total ' || pg_total_relation_size('$schema.plants') || ' B = ' ||
	round(pg_total_relation_size('$schema.plants')::numeric / count(*), 1) || ' B per plant' FROM $schema.plants"

echo
load=$(cut -d' ' -f1 /proc/loadavg)
mapfile -t pids < <(backends)
p0=$(ticks "$server_pid"); b0=$(ticks "${pids[@]}")
LIST_MAX_ID=$max_id LIST_LIMIT=100 wrk -t1 -c"$LIST_CONNS" -d"$DURATION" --latency \
	-s "$repo/scripts/pg-scaling-list.lua" "$url" >"$tmp/list"
mapfile -t pids2 < <(backends)
p1=$(ticks "$server_pid"); b1=$(ticks "${pids2[@]}")
d=$(secs "$DURATION")
echo "100-plant list pages, $LIST_CONNS connections, random start (load avg $load):" \
	"$(awk '/^Requests\/sec:/ {print $2}' "$tmp/list") pages/s," \
	"p50 $(awk '$1 == "50%" {print $2}' "$tmp/list"), p99 $(awk '$1 == "99%" {print $2}' "$tmp/list");" \
	"plantstore $(awk -v t="$((p1 - p0))" -v h="$hz" -v d="$d" 'BEGIN {printf "%.2f", t/h/d}') cores," \
	"postgres $(awk -v t="$((b1 - b0))" -v h="$hz" -v d="$d" 'BEGIN {printf "%.2f", t/h/d}') cores"
grep -E 'Non-2xx|Socket errors' "$tmp/list" || true
