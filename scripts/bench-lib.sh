# bench-lib.sh: shell functions shared by loopback-bench.sh,
# webhook-bench.sh and groupcommit-sweep.sh, which source it. They expect die to be defined.

# wait_listening NAME OUT ERR: waits until the server started as
# server_pid prints "listening on http://127.0.0.1:PORT" to OUT, and sets
# server_url; dies, showing ERR, if it exits first or takes over 30 s.
wait_listening() {
	local name=$1 out=$2 err=$3
	server_url=""
	for _ in $(seq 300); do
		server_url=$(sed -n 's/^listening on \(http:\/\/127\.0\.0\.1:[0-9]*\).*/\1/p' "$out" | head -n1)
		[[ -n $server_url ]] && return 0
		kill -0 "$server_pid" 2>/dev/null || { cat "$err" >&2; die "$name exited before listening"; }
		sleep 0.1
	done
	cat "$err" >&2
	die "$name did not print 'listening on http://127.0.0.1:PORT' within 30s"
}

# stop_server stops the server started as server_pid.
stop_server() {
	kill "$server_pid" 2>/dev/null || true
	wait "$server_pid" 2>/dev/null || true
	server_pid=""
}

# median prints the median of its arguments.
median() {
	printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# new_pg_schema DSN SCHEMA: makes SCHEMA anew (dropping the one of that
# name) in the PostgreSQL database at DSN with psql, and prints DSN with
# search_path set to it.
new_pg_schema() {
	PGOPTIONS=--client-min-messages=warning psql -q "$1" \
		-c "DROP SCHEMA IF EXISTS $2 CASCADE" -c "CREATE SCHEMA $2" >/dev/null \
		|| die "could not make schema $2 with psql"
	echo "$1$([[ $1 == *\?* ]] && echo '&' || echo '?')search_path=$2"
}
