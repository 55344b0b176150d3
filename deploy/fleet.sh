#!/usr/bin/env bash
# fleet.sh runs a plantstore fleet on this machine, over loopback: one
# PostgreSQL database, several plantstore instances sharing it, and HAProxy
# in front of them, health-checking each on GET /readyz.
#
#   deploy/fleet.sh start    start everything; returns once HAProxy answers
#   deploy/fleet.sh stop     stop everything it started: HAProxy, then the
#                            instances (SIGTERM: they drain), then PostgreSQL
#   deploy/fleet.sh status   which processes run
#
# Settings, from the environment:
#   FLEET_DIR         state: pid files, logs, the database cluster (./fleet)
#   FLEET_LB_ADDR     where HAProxy listens (127.0.0.1:8080)
#   FLEET_PORTS       one loopback port per instance ("8081 8082 8083")
#   FLEET_DB          a postgres:// URL to use; when unset, a private
#                     PostgreSQL cluster is created in $FLEET_DIR/pg
#   FLEET_PG_PORT     the private cluster's port (5433)
#   FLEET_PG_BIN      PostgreSQL's programs (/usr/lib/postgresql/15/bin)
#   PLANTSTORE_BIN    the plantstore binary; built from this tree when unset
#   PLANTSTORE_TOKENS accepted bearer tokens, comma-separated; when unset a
#                     token is generated into $FLEET_DIR/tokens and printed
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
FLEET_DIR=${FLEET_DIR:-$PWD/fleet}
FLEET_LB_ADDR=${FLEET_LB_ADDR:-127.0.0.1:8080}
FLEET_PORTS=${FLEET_PORTS:-8081 8082 8083}
FLEET_PG_PORT=${FLEET_PG_PORT:-5433}
FLEET_PG_BIN=${FLEET_PG_BIN:-/usr/lib/postgresql/15/bin}

die() { echo "fleet.sh: $*" >&2; exit 1; }

# as_postgres runs a PostgreSQL program as the postgres user when this
# script runs as root, which PostgreSQL refuses to run as.
as_postgres() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

# alive tells whether the process in pid file $1 runs.
alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

# wait_exit waits up to $2 seconds for the process in pid file $1 to exit.
wait_exit() {
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		alive "$1" || return 0
		sleep 0.1
	done
	return 1
}

start_postgres() {
	if [ -n "${FLEET_DB:-}" ]; then
		echo "$FLEET_DB" >"$FLEET_DIR/db"
		return
	fi
	local pg=$FLEET_DIR/pg
	mkdir -p "$pg"
	[ "$(id -u)" = 0 ] && chown postgres: "$pg"
	as_postgres test -w "$pg" || die "the postgres user cannot write $pg: make every directory above it searchable"
	if [ ! -f "$pg/data/PG_VERSION" ]; then
		as_postgres "$FLEET_PG_BIN/initdb" -D "$pg/data" -U postgres --auth=trust \
			--encoding=UTF8 --locale=C >"$pg/initdb.log" 2>&1 ||
			die "initdb failed: see $pg/initdb.log"
	fi
	as_postgres "$FLEET_PG_BIN/pg_ctl" start -D "$pg/data" -l "$pg/postgres.log" -w -t 60 \
		-o "-c listen_addresses=127.0.0.1 -c port=$FLEET_PG_PORT -c unix_socket_directories=$pg" >/dev/null ||
		die "PostgreSQL did not start: see $pg/postgres.log"
	echo "postgres://postgres@127.0.0.1:$FLEET_PG_PORT/postgres?sslmode=disable" >"$FLEET_DIR/db"
}

start_instances() {
	local bin=${PLANTSTORE_BIN:-}
	if [ -z "$bin" ]; then
		bin=$FLEET_DIR/plantstore
		(cd "$here/.." && go build -o "$bin" ./cmd/plantstore) || die "go build failed"
	fi
	local tokens=()
	if [ -z "${PLANTSTORE_TOKENS:-}" ]; then
		if [ ! -s "$FLEET_DIR/tokens" ]; then
			(umask 077 && head -c 24 /dev/urandom | base64 | tr '+/' '-_' >"$FLEET_DIR/tokens")
			echo "generated a token: Authorization: Bearer $(cat "$FLEET_DIR/tokens")"
		fi
		tokens=(-token-file "$FLEET_DIR/tokens")
	fi
	local db i=0 port
	db=$(cat "$FLEET_DIR/db")
	for port in $FLEET_PORTS; do
		i=$((i + 1))
		"$bin" -addr "127.0.0.1:$port" -db "$db" "${tokens[@]}" \
			</dev/null >"$FLEET_DIR/ps$i.out" 2>"$FLEET_DIR/ps$i.log" &
		echo $! >"$FLEET_DIR/ps$i.pid"
	done
	# Each instance prints its address once it listens, after opening and
	# migrating the database.
	for ((i = 1; i <= $(wc -w <<<"$FLEET_PORTS"); i++)); do
		local n
		for ((n = 0; n < 300; n++)); do
			grep -q '^listening on ' "$FLEET_DIR/ps$i.out" && break
			alive "$FLEET_DIR/ps$i.pid" || die "instance $i exited: $(tail -5 "$FLEET_DIR/ps$i.log")"
			sleep 0.1
		done
		grep -q '^listening on ' "$FLEET_DIR/ps$i.out" || die "instance $i did not start: see $FLEET_DIR/ps$i.log"
	done
}

start_haproxy() {
	local cfg=$FLEET_DIR/haproxy.cfg i=0 port
	cp "$here/haproxy.cfg" "$cfg"
	for port in $FLEET_PORTS; do
		i=$((i + 1))
		echo "    server ps$i 127.0.0.1:$port" >>"$cfg"
	done
	export FLEET_DIR FLEET_LB_ADDR FLEET_ERRORS=$here/errors
	haproxy -c -q -f "$cfg" || die "HAProxy refuses $cfg"
	haproxy -f "$cfg" </dev/null >"$FLEET_DIR/haproxy.log" 2>&1 &
	echo $! >"$FLEET_DIR/haproxy.pid"
	local n
	for ((n = 0; n < 100; n++)); do
		curl -fsS -o /dev/null "http://$FLEET_LB_ADDR/readyz" 2>/dev/null && return
		alive "$FLEET_DIR/haproxy.pid" || die "HAProxy exited: $(tail -5 "$FLEET_DIR/haproxy.log")"
		sleep 0.1
	done
	die "HAProxy does not answer at $FLEET_LB_ADDR: see $FLEET_DIR/haproxy.log"
}

start() {
	command -v haproxy >/dev/null || die "haproxy is not installed (Debian: apt-get install haproxy)"
	command -v curl >/dev/null || die "curl is not installed"
	mkdir -p "$FLEET_DIR"
	for f in "$FLEET_DIR"/*.pid; do
		[ -e "$f" ] && alive "$f" && die "already running ($f); run: $0 stop"
	done
	# A start that fails half way stops what it started, so that a rerun
	# does not find it "already running".
	trap 'stop' EXIT
	start_postgres
	start_instances
	start_haproxy
	trap - EXIT
	echo "plantstore fleet: http://$FLEET_LB_ADDR -> $FLEET_PORTS; state in $FLEET_DIR"
}

stop() {
	local f
	if [ -e "$FLEET_DIR/haproxy.pid" ]; then
		alive "$FLEET_DIR/haproxy.pid" && kill -USR1 "$(cat "$FLEET_DIR/haproxy.pid")"
		wait_exit "$FLEET_DIR/haproxy.pid" 10 || kill -KILL "$(cat "$FLEET_DIR/haproxy.pid")"
		rm -f "$FLEET_DIR/haproxy.pid"
	fi
	for f in "$FLEET_DIR"/ps*.pid; do
		[ -e "$f" ] || continue
		alive "$f" && kill -TERM "$(cat "$f")"
	done
	for f in "$FLEET_DIR"/ps*.pid; do
		[ -e "$f" ] || continue
		wait_exit "$f" 15 || kill -KILL "$(cat "$f")"
		rm -f "$f"
	done
	if [ -z "${FLEET_DB:-}" ] && [ -f "$FLEET_DIR/pg/data/postmaster.pid" ]; then
		as_postgres "$FLEET_PG_BIN/pg_ctl" stop -D "$FLEET_DIR/pg/data" -m fast -w -t 60 >/dev/null
	fi
}

status() {
	local f
	for f in "$FLEET_DIR"/*.pid; do
		[ -e "$f" ] || continue
		if alive "$f"; then
			echo "$(basename "$f" .pid): running, pid $(cat "$f")"
		else
			echo "$(basename "$f" .pid): not running"
		fi
	done
	if [ -f "$FLEET_DIR/pg/data/postmaster.pid" ]; then
		echo "postgres: running, pid $(head -1 "$FLEET_DIR/pg/data/postmaster.pid")"
	fi
}

case "${1:-}" in
start) start ;;
stop) stop ;;
status) status ;;
*) die "usage: $0 start|stop|status" ;;
esac
