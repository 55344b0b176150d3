#!/usr/bin/env bash
# loopback-bench.sh compares the POST /plants throughput of several servers on
# this machine, over loopback, in interleaved rounds. By default it compares
# plantstore on memory storage with the floor server (internal/floor: reads the
# body, answers a fixed 200); the ratio to the first server is the figure to
# read: it does not depend on the hardware the way req/s does.
#
# Each server is pinned to one core and the load generator to another; the
# servers alternate (floor, plantstore, floor, ...) for ROUNDS rounds and are
# restarted each round, so that drift hits all alike. Each run starts on an
# empty store and a quiet disk: what the run before stored is deleted, and
# the kernel's dirty pages flushed (sync; CHECKPOINT on PostgreSQL).
#
# Usage: scripts/loopback-bench.sh            (from the repository root or anywhere)
#        SERVERS="memory sqlite postgres" scripts/loopback-bench.sh
#        SERVERS="old new" BIN_old=/tmp/a BIN_new=/tmp/b scripts/loopback-bench.sh
#        SERVERS="floor plantstore ogen oapi-codegen" scripts/loopback-bench.sh
#
# SERVERS lists the servers, the first being the one the others are divided by.
# A name is one of
#   floor        the floor server
#   plantstore   BENCH_BIN (default: ./cmd/plantstore built here) with BENCH_ARGS
#   memory       plantstore -db memory
#   sqlite       plantstore on a new SQLite file in a temporary directory each round
#   postgres     plantstore on BENCH_POSTGRES_DSN (default: PLANTSTORE_TEST_POSTGRES_DSN),
#                in a new schema each round (made and dropped with psql)
#   ogen         ogen's server without OpenTelemetry, generated from httpapi/openapi.json
#   oapi-codegen oapi-codegen's strict server on net/http, generated likewise
#                (both from the module scripts/peers, plants in memory; see its doc.go)
#   pocketbase   PocketBase (scripts/peers/pbserver): a single-file SQLite store, a
#                new data directory each round, creates to its records API
#   any other    BIN_<name> (default: plantstore) with ARGS_<name> (default: -db memory);
#                {tmp} in ARGS_<name> becomes a new empty directory each round, so
#                that ARGS_new="-db {tmp}/plants.db" starts every round on a new file;
#                PATH_<name> (default: /plants) is where it takes the creates, as
#                PATH_embed=/api/plants for examples/embed, which serves the API
#                under /api/ (give it BENCH_TOKEN=alice-token and PLANTSTORE_ADDR=127.0.0.1:0);
#                {pg} becomes a PostgreSQL URL, as for server postgres, so that
#                BIN_base=/tmp/old ARGS_base="-db {pg}" compares builds on PostgreSQL
# Every plantstore server also gets -addr 127.0.0.1:0 and EXTRA_ARGS.
#
# Environment (all optional):
#   ROUNDS=5 DURATION=10s CONNS=32     rounds per server, length of one run, connections
#   CLIENT=wrk                         wrk, or plantload (cmd/plantload) as a cross-check
#   SERVER_CPU=0 CLIENT_CPU=1          cores to pin the server and the load generator to
#   BENCH_TOKEN=loopback-bench         bearer token (the server gets it in PLANTSTORE_TOKENS)
#   BENCH_BIN=path                     run this binary instead of building ./cmd/plantstore
#   BENCH_ARGS="-addr 127.0.0.1:0 -db memory"   its arguments (server "plantstore")
#   EXTRA_ARGS="-log-level warn"       more arguments for every plantstore server
#   BENCH_KEEP=dir                     keep every run's raw output in dir
set -euo pipefail

ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-10s}
CONNS=${CONNS:-32}
CLIENT=${CLIENT:-wrk}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
BENCH_TOKEN=${BENCH_TOKEN:-loopback-bench}
BENCH_ARGS=${BENCH_ARGS:--addr 127.0.0.1:0 -db memory}
SERVERS=${SERVERS:-floor plantstore}
EXTRA_ARGS=${EXTRA_ARGS:-}
BENCH_POSTGRES_DSN=${BENCH_POSTGRES_DSN:-${PLANTSTORE_TEST_POSTGRES_DSN:-}}
read -r -a servers <<<"$SERVERS"
export BENCH_TOKEN

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
lua="$repo/scripts/loopback-post.lua"
tmp=$(mktemp -d)
server_pid=""

cleanup() {
	if [[ -n $server_pid ]]; then
		kill "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
	if [[ -n ${BENCH_KEEP:-} ]]; then
		mkdir -p "$BENCH_KEEP" && cp "$tmp"/*.out "$BENCH_KEEP"/ 2>/dev/null || true
	fi
	rm -rf "$tmp"
	if [[ -n $uses_pg ]]; then
		psql -q "$BENCH_POSTGRES_DSN" -c "DROP SCHEMA IF EXISTS $pg_schema CASCADE" >/dev/null 2>&1 || true
	fi
}
pg_schema=loopback_bench_$$
uses_pg="" # set when a server runs on PostgreSQL
trap cleanup EXIT
trap 'exit 130' INT TERM

die() { echo "loopback-bench: $*" >&2; exit 1; }
# shellcheck source=scripts/bench-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/bench-lib.sh"

if (( ${#servers[@]} < 2 )); then
	die "SERVERS must name at least two servers, not \"$SERVERS\""
fi
for name in "${servers[@]}"; do
	[[ $name =~ ^[A-Za-z0-9_]+$ || $name == oapi-codegen ]] || die "server names are letters, digits and _: not \"$name\""
	a="ARGS_$name"
	if [[ $name == postgres || ($name != oapi-codegen && ${!a:-} == *"{pg}"*) ]]; then
		uses_pg=1
		[[ -n $BENCH_POSTGRES_DSN ]] || die "server $name needs BENCH_POSTGRES_DSN or PLANTSTORE_TEST_POSTGRES_DSN"
		command -v psql >/dev/null || die "server $name needs psql to make a schema for each round"
	fi
done
if (( $(nproc) < 2 )); then
	die "need at least 2 cores (server and load generator pinned apart), have $(nproc)"
fi
command -v taskset >/dev/null || die "taskset not found (package util-linux)"
case $CLIENT in
wrk)
	if ! command -v wrk >/dev/null; then
		echo "loopback-bench: wrk is missing; installing it with apt-get install -y wrk" >&2
		apt-get install -y wrk >&2 || { apt-get update >&2 && apt-get install -y wrk >&2; } \
			|| die "could not install wrk"
	fi
	;;
plantload) ;;
*) die "CLIENT must be wrk or plantload, not $CLIENT" ;;
esac

echo "building into $tmp" >&2
(
	cd "$repo"
	go build -o "$tmp/floorserver" ./internal/floor/cmd/floorserver
	go build -o "$tmp/plantload" ./cmd/plantload
	if [[ -z ${BENCH_BIN:-} ]]; then
		go build -o "$tmp/plantstore" ./cmd/plantstore
	fi
	if [[ " ${servers[*]} " == *" ogen "* || " ${servers[*]} " == *" oapi-codegen "* ]]; then
		cd "$repo/scripts/peers"
		go generate ./... >/dev/null 2>&1 || die "go generate in scripts/peers failed: run it there to see why"
		go build -o "$tmp/ogenserver" ./ogenserver
		go build -o "$tmp/oapiserver" ./oapiserver
	fi
	if [[ " ${servers[*]} " == *" pocketbase "* ]]; then
		cd "$repo/scripts/peers" && go build -o "$tmp/pbserver" ./pbserver
	fi
)
plantstore_bin=${BENCH_BIN:-$tmp/plantstore}

# start_server NAME: starts the server pinned to SERVER_CPU and sets
# server_pid and server_url once it prints its listening line.
start_server() {
	local name=$1 out="$tmp/server.out" bin args
	: >"$out"
	if [[ $name == pocketbase ]]; then
		rm -rf "$tmp/pb.d"
		PLANTSTORE_TOKENS=$BENCH_TOKEN taskset -c "$SERVER_CPU" "$tmp/pbserver" -addr 127.0.0.1:0 -dir "$tmp/pb.d" \
			>"$out" 2>"$tmp/server.err" &
	elif [[ $name == floor || $name == ogen || $name == oapi-codegen ]]; then
		bin=$tmp/floorserver
		[[ $name == ogen ]] && bin=$tmp/ogenserver
		[[ $name == oapi-codegen ]] && bin=$tmp/oapiserver
		PLANTSTORE_TOKENS=$BENCH_TOKEN taskset -c "$SERVER_CPU" "$bin" -addr 127.0.0.1:0 >"$out" 2>"$tmp/server.err" &
	else
		bin=$plantstore_bin
		case $name in
		plantstore) args=$BENCH_ARGS ;;
		memory) args="-db memory" ;;
		sqlite)
			rm -rf "$tmp/sqlite" && mkdir "$tmp/sqlite"
			args="-db $tmp/sqlite/plants.db"
			;;
		postgres)
			# A new schema each round, as SQLite gets a new file.
			args="-db $(new_pg_schema "$BENCH_POSTGRES_DSN" "$pg_schema")"
			;;
		*)
			local b="BIN_$name" a="ARGS_$name"
			bin=${!b:-$plantstore_bin}
			args=${!a:--db memory}
			if [[ $args == *"{tmp}"* ]]; then
				rm -rf "$tmp/$name.d" && mkdir "$tmp/$name.d"
				args=${args//"{tmp}"/$tmp/$name.d}
			fi
			if [[ $args == *"{pg}"* ]]; then
				local dsn
				dsn=$(new_pg_schema "$BENCH_POSTGRES_DSN" "$pg_schema")
				args=${args//"{pg}"/"$dsn"} # quoted: the & in dsn stays itself
			fi
			;;
		esac
		# shellcheck disable=SC2086 # args and EXTRA_ARGS are lists of words.
		PLANTSTORE_TOKENS=$BENCH_TOKEN taskset -c "$SERVER_CPU" "$bin" -addr 127.0.0.1:0 $args $EXTRA_ARGS \
			>"$out" 2>"$tmp/server.err" &
	fi
	server_pid=$!
	wait_listening "$name" "$out" "$tmp/server.err"
}


# settle drops what the last run stored and flushes what the kernel still
# holds of it, so that no run pays for the writes of the one before.
settle() {
	rm -rf "$tmp/sqlite" "$tmp/pb.d" "$tmp"/*.d
	if [[ -n $uses_pg ]]; then
		PGOPTIONS=--client-min-messages=warning psql -q "$BENCH_POSTGRES_DSN" \
			-c "DROP SCHEMA IF EXISTS $pg_schema CASCADE" -c "CHECKPOINT" >/dev/null 2>&1 || true
	fi
	sync
}

# load OUT NAME: drives server_url from CLIENT_CPU and prints "REQS P99MS
# BAD", BAD being the responses other than 200 plus transport errors.
load() {
	local out=$1 path=/plants field=id p="PATH_$2"
	[[ $2 =~ ^[A-Za-z0-9_]+$ ]] && path=${!p:-/plants}
	if [[ $2 == pocketbase ]]; then
		path=/api/collections/plants/records field=pid
	fi
	case $CLIENT in
	wrk)
		BENCH_PATH=$path BENCH_ID_FIELD=$field BENCH_ID_BASE=$(( $(date +%s) * 1000000 + RANDOM * 10 )) \
			taskset -c "$CLIENT_CPU" wrk -t1 -c"$CONNS" -d"$DURATION" --latency -s "$lua" "$server_url" >"$out"
		awk '
			/^Requests\/sec:/ { reqs = $2 }
			/^ +99%/ {
				v = $2; unit = v; sub(/^[0-9.]+/, "", unit); sub(/[a-z]+$/, "", v)
				p99 = v * (unit == "us" ? 0.001 : unit == "ms" ? 1 : unit == "s" ? 1000 : unit == "m" ? 60000 : 0)
			}
			/Non-2xx or 3xx responses:/ { bad += $NF }
			/Socket errors:/ { for (i = 4; i <= NF; i += 2) { v = $i; sub(/,/, "", v); bad += v } }
			END { printf "%s %.3f %d\n", reqs, p99, bad }' "$out"
		;;
	plantload)
		taskset -c "$CLIENT_CPU" "$tmp/plantload" -url "$server_url" -token "$BENCH_TOKEN" \
			-c "$CONNS" -d "$DURATION" >"$out" || true
		awk -F': *' '
			$1 == "req/s" { reqs = $2 }
			$1 == "latency p99" { p99 = $2; sub(/ms$/, "", p99) }
			$1 ~ /^status / && $1 != "status 200" { bad += $2 }
			$1 == "transport errors" { bad += $2 }
			END { printf "%s %.3f %d\n", reqs, p99, bad }' "$out"
		;;
	esac
}


echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine skews the figures)" >&2
echo "$(nproc) cores; server on core $SERVER_CPU, $CLIENT on core $CLIENT_CPU; $ROUNDS rounds of $DURATION, $CONNS connections; all on 127.0.0.1" >&2
declare -A rps_of p99_of ratios_of
bad_total=0
base=${servers[0]}
printf '%-6s %-12s %12s %10s %8s\n' round server req/s p99_ms non200
for round in $(seq "$ROUNDS"); do
	for name in "${servers[@]}"; do
		start_server "$name"
		read -r rps p99 bad < <(load "$tmp/$name-$round.out" "$name")
		stop_server
		settle
		[[ -n $rps ]] || die "no req/s in $CLIENT's output for $name round $round: $(cat "$tmp/$name-$round.out")"
		printf '%-6s %-12s %12.1f %10.3f %8d\n' "$round" "$name" "$rps" "$p99" "$bad"
		bad_total=$(( bad_total + bad ))
		rps_of[$name]+="$rps "; p99_of[$name]+="$p99 "
		if [[ $name == "$base" ]]; then base_rps=$rps
		else ratios_of[$name]+="$(awk -v p="$rps" -v f="$base_rps" 'BEGIN { printf "%.4f", p / f }') "
		fi
	done
done

# shellcheck disable=SC2086 # the lists are words.
mb=$(median ${rps_of[$base]}); mbp=$(median ${p99_of[$base]})
printf '%-6s %-12s %12.1f %10.3f\n' median "$base" "$mb" "$mbp"
for name in "${servers[@]:1}"; do
	# shellcheck disable=SC2086
	m=$(median ${rps_of[$name]}); mp=$(median ${p99_of[$name]})
	printf '%-6s %-12s %12.1f %10.3f\n' median "$name" "$m" "$mp"
done
# Each round's runs follow one another, so they share most of whatever else
# the machine was doing; the median of the rounds' ratios is steadier than
# the ratio of the medians when that changes during a run.
for name in "${servers[@]:1}"; do
	# shellcheck disable=SC2086
	m=$(median ${rps_of[$name]}); mp=$(median ${p99_of[$name]})
	awk -v n="$name/$base" -v mb="$mb" -v m="$m" -v mbp="$mbp" -v mp="$mp" -v r="$(median ${ratios_of[$name]})" -v rs="${ratios_of[$name]% }" 'BEGIN {
		printf "ratio %s: req/s %.3f, p99 %.3f; median of per-round ratios: req/s %.3f (rounds: %s)\n", n, m / mb, (mbp > 0 ? mp / mbp : 0), r, rs
	}'
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
if (( bad_total > 0 )); then
	echo "loopback-bench: WARNING: $bad_total responses were not 200 or failed; the figures are not of successful creates" >&2
	exit 2
fi
