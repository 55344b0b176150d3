# bench-lib.sh: shell functions shared by loopback-bench.sh and
# webhook-bench.sh, which source it. They expect die to be defined.

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
