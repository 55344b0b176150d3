#!/usr/bin/env bash
# fleet.sh runs a plantstore fleet on this machine, over loopback: one
# PostgreSQL database, several plantstore instances sharing it, and HAProxy
# in front of them, health-checking each on GET /readyz.
#
#   deploy/fleet.sh start         start everything; returns once HAProxy answers,
#                                 printing its address and each instance's
#   deploy/fleet.sh stop          stop everything it started: HAProxy, then the
#                                 instances (SIGTERM: they drain), then PostgreSQL
#   deploy/fleet.sh restart ps2   restart one instance (SIGTERM, then start it
#                                 again on its port); returns once it is ready
#   deploy/fleet.sh status        which processes run, and where
#
# Settings, from the environment. A port left unset is the one the fleet
# in $FLEET_DIR had last time when that is still free, or else a free one;
# start prints them, and $FLEET_DIR/url holds HAProxy's address.
#   FLEET_DIR         state: pid files, logs, the database cluster (./fleet)
#   FLEET_LB_ADDR     where HAProxy listens (127.0.0.1:<a free port>)
#   FLEET_PORTS       one loopback port per instance (three free ports)
#   FLEET_DB          a postgres:// URL to use; when unset, a private
#                     PostgreSQL cluster is created in $FLEET_DIR/pg
#   FLEET_PG_PORT     the private cluster's port (a free one)
#   FLEET_PG_BIN      PostgreSQL's programs (/usr/lib/postgresql/15/bin)
#   FLEET_BIN         the plantstore binary; built from this tree when unset
#   PLANTSTORE_TOKENS accepted bearer tokens, comma-separated; when unset a
#                     token is generated into $FLEET_DIR/tokens and printed
#
# HAProxy's log ($FLEET_DIR/haproxy.log) and each instance's
# ($FLEET_DIR/psN.log) are appended to, run after run.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
FLEET_DIR=${FLEET_DIR:-$PWD/fleet}
FLEET_PG_BIN=${FLEET_PG_BIN:-/usr/lib/postgresql/15/bin}
# The settings start chose, for stop, status and restart.
settings=$FLEET_DIR/settings

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
# A process that has exited but that its parent has not reaped yet (a
# zombie: the instances outlive the start that forked them, so init reaps
# them, when it gets to it) is not alive.
alive() {
	local pid
	[ -s "$1" ] && pid=$(cat "$1") && kill -0 "$pid" 2>/dev/null || return 1
	[ ! -r "/proc/$pid/stat" ] || [ "$(sed 's/.*) //' "/proc/$pid/stat" | cut -d' ' -f1)" != Z ]
}

# wait_exit waits up to $2 seconds for the process in pid file $1 to exit.
wait_exit() {
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		alive "$1" || return 0
		sleep 0.1
	done
	return 1
}

# saved prints setting $1 as the last start recorded it, or nothing.
saved() {
	if [ -f "$settings" ]; then sed -n "s/^$1=//p" "$settings"; fi
}

# port_free tells whether nothing accepts connections on 127.0.0.1:$1.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# free_port prints a loopback port nothing listens on, none of "$@", below
# the kernel's range for outgoing connections (32768 and up).
free_port() {
	local p n
	for ((n = 0; n < 100; n++)); do
		p=$((20000 + RANDOM % 12768))
		case " $* " in *" $p "*) continue ;; esac
		port_free "$p" && echo "$p" && return
	done
	die "found no free port"
}

# choose_ports sets the unset ports: last start's when still free, else
# free ones.
choose_ports() {
	local p taken=""
	if [ -z "${FLEET_PORTS:-}" ]; then
		FLEET_PORTS=$(saved FLEET_PORTS)
		for p in $FLEET_PORTS; do port_free "$p" || FLEET_PORTS=""; done
		if [ -z "$FLEET_PORTS" ]; then
			for _ in 1 2 3; do
				p=$(free_port $taken)
				taken="$taken $p"
			done
			FLEET_PORTS=${taken# }
		fi
	fi
	taken="$FLEET_PORTS"
	if [ -z "${FLEET_LB_ADDR:-}" ]; then
		FLEET_LB_ADDR=$(saved FLEET_LB_ADDR)
		if [ -z "$FLEET_LB_ADDR" ] || ! port_free "${FLEET_LB_ADDR##*:}"; then
			FLEET_LB_ADDR=127.0.0.1:$(free_port $taken)
		fi
	fi
	taken="$taken ${FLEET_LB_ADDR##*:}"
	if [ -z "${FLEET_DB:-}" ] && [ -z "${FLEET_PG_PORT:-}" ]; then
		FLEET_PG_PORT=$(saved FLEET_PG_PORT)
		if [ -z "$FLEET_PG_PORT" ] || ! port_free "$FLEET_PG_PORT"; then
			FLEET_PG_PORT=$(free_port $taken)
		fi
	fi
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

# start_instance starts instance $1 (ps1, ps2…) on port $2 with the
# settings start recorded, and waits until it listens.
start_instance() {
	local name=$1 port=$2 n
	: >"$FLEET_DIR/$name.out"
	"$(saved FLEET_BIN)" -addr "127.0.0.1:$port" -db "$(cat "$FLEET_DIR/db")" -token-file "$FLEET_DIR/tokens" \
		</dev/null >"$FLEET_DIR/$name.out" 2>>"$FLEET_DIR/$name.log" &
	echo $! >"$FLEET_DIR/$name.pid"
	# An instance prints its address once it listens, after opening and
	# migrating the database.
	for ((n = 0; n < 300; n++)); do
		grep -q '^listening on ' "$FLEET_DIR/$name.out" && return
		alive "$FLEET_DIR/$name.pid" || die "$name exited: $(tail -5 "$FLEET_DIR/$name.log")"
		sleep 0.1
	done
	die "$name did not start: see $FLEET_DIR/$name.log"
}

start_instances() {
	local bin=${FLEET_BIN:-}
	if [ -z "$bin" ]; then
		bin=$FLEET_DIR/plantstore
		(cd "$here/.." && go build -o "$bin" ./cmd/plantstore) || die "go build failed"
	fi
	echo "FLEET_BIN=$bin" >>"$settings"
	# Every instance reads the tokens from one file, so that an instance
	# restarted later accepts the same ones.
	if [ -n "${PLANTSTORE_TOKENS:-}" ]; then
		(umask 077 && tr ',' '\n' <<<"$PLANTSTORE_TOKENS" >"$FLEET_DIR/tokens")
	elif [ ! -s "$FLEET_DIR/tokens" ]; then
		(umask 077 && head -c 24 /dev/urandom | base64 | tr '+/' '-_' >"$FLEET_DIR/tokens")
		echo "generated a token: Authorization: Bearer $(cat "$FLEET_DIR/tokens")"
	fi
	local i=0 port
	for port in $FLEET_PORTS; do
		i=$((i + 1))
		start_instance "ps$i" "$port"
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
	echo "--- $(date -u +%Y-%m-%dT%H:%M:%SZ) fleet.sh start: HAProxy on $FLEET_LB_ADDR" >>"$FLEET_DIR/haproxy.log"
	# HAProxy makes its output non-blocking, which clears O_APPEND: straight
	# into the file, its lines would overwrite the last run's from the
	# start. Through a pipe, cat appends them; like HAProxy, it holds none of
	# this script's outputs open, so that a caller reading them sees the end.
	haproxy -f "$cfg" </dev/null > >(exec cat >>"$FLEET_DIR/haproxy.log" 2>/dev/null) 2>&1 &
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
	choose_ports
	{
		echo "FLEET_LB_ADDR=$FLEET_LB_ADDR"
		echo "FLEET_PORTS=$FLEET_PORTS"
		echo "FLEET_PG_PORT=${FLEET_PG_PORT:-}"
		echo "FLEET_EXTERNAL_DB=${FLEET_DB:+1}"
	} >"$settings.new"
	mv "$settings.new" "$settings"
	echo "http://$FLEET_LB_ADDR" >"$FLEET_DIR/url"
	# A start that fails half way stops what it started, so that a rerun
	# does not find it "already running".
	trap 'stop' EXIT
	start_postgres
	start_instances
	start_haproxy
	trap - EXIT
	local i=0 port list=""
	for port in $FLEET_PORTS; do
		i=$((i + 1))
		list="$list ps$i=127.0.0.1:$port"
	done
	echo "plantstore fleet: http://$FLEET_LB_ADDR ->$list; database ${FLEET_DB:-postgres://127.0.0.1:$FLEET_PG_PORT}; state in $FLEET_DIR"
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
	if [ -z "$(saved FLEET_EXTERNAL_DB)" ] && [ -f "$FLEET_DIR/pg/data/postmaster.pid" ]; then
		as_postgres "$FLEET_PG_BIN/pg_ctl" stop -D "$FLEET_DIR/pg/data" -m fast -w -t 60 >/dev/null
	fi
}

# haproxy_cli sends a command to HAProxy's stats socket, with socat, and
# fails when socat is missing or HAProxy does not answer.
haproxy_cli() {
	command -v socat >/dev/null && alive "$FLEET_DIR/haproxy.pid" &&
		echo "$1" | socat -t 2 stdio "unix-connect:$FLEET_DIR/haproxy.sock" >/dev/null
}

# restart restarts instance $1 on its port. First HAProxy drains it: it
# sends it no new request, while those it has finish. Then SIGTERM makes
# the instance finish its own and exit, it starts again, and once it
# answers GET /readyz with 200 HAProxy may send to it again (after its two
# health checks). Without the drain (no socat), a request HAProxy has just
# handed the instance as it stops listening fails as outcome unknown.
restart() {
	local name=${1:-} port n drained=""
	[[ $name =~ ^ps[1-9][0-9]*$ ]] || die "usage: $0 restart psN"
	[ -f "$settings" ] || die "no fleet in $FLEET_DIR: run $0 start"
	port=$(saved FLEET_PORTS | tr ' ' '\n' | sed -n "${name#ps}p")
	[ -n "$port" ] || die "no $name in this fleet (ports: $(saved FLEET_PORTS))"
	if haproxy_cli "set server plantstore/$name state drain"; then
		drained=1
		echo "$name drained in HAProxy"
		# A request HAProxy was handing it as the drain began.
		sleep 0.2
	else
		echo "$name not drained in HAProxy first (socat missing, or HAProxy not running): a request handed to it as it stops may fail" >&2
	fi
	if alive "$FLEET_DIR/$name.pid"; then
		kill -TERM "$(cat "$FLEET_DIR/$name.pid")"
		wait_exit "$FLEET_DIR/$name.pid" 15 || kill -KILL "$(cat "$FLEET_DIR/$name.pid")"
	fi
	start_instance "$name" "$port"
	for ((n = 0; n < 300; n++)); do
		curl -fsS -o /dev/null "http://127.0.0.1:$port/readyz" 2>/dev/null && break
		sleep 0.1
	done
	curl -fsS -o /dev/null "http://127.0.0.1:$port/readyz" || die "$name is not ready: see $FLEET_DIR/$name.log"
	if [ -n "$drained" ]; then
		haproxy_cli "set server plantstore/$name state ready" || die "HAProxy did not take $name back: set server plantstore/$name state ready"
	fi
	echo "$name restarted: pid $(cat "$FLEET_DIR/$name.pid"), http://127.0.0.1:$port, ready"
}

status() {
	local f
	[ -f "$settings" ] && echo "fleet: http://$(saved FLEET_LB_ADDR) -> ports $(saved FLEET_PORTS); state in $FLEET_DIR"
	for f in "$FLEET_DIR"/*.pid; do
		[ -e "$f" ] || continue
		if alive "$f"; then
			echo "$(basename "$f" .pid): running, pid $(cat "$f")"
		else
			echo "$(basename "$f" .pid): not running"
		fi
	done
	if [ -f "$FLEET_DIR/pg/data/postmaster.pid" ]; then
		echo "postgres: running, pid $(head -1 "$FLEET_DIR/pg/data/postmaster.pid"), port $(sed -n 4p "$FLEET_DIR/pg/data/postmaster.pid")"
	fi
}

case "${1:-}" in
start) start ;;
stop) stop ;;
restart) restart "${2:-}" ;;
status) status ;;
*) die "usage: $0 start|stop|restart psN|status" ;;
esac
