// Command plantload drives a running plantstore server with POST /plants
// requests over keep-alive connections and reports throughput, latency
// percentiles, and counts per HTTP status and per Error code.
//
// Usage:
//
//	plantload [-url http://127.0.0.1:8080] [-token T] [-c 32] [-d 10s] [-n N]
//	          [-start-id ID] [-name NAME] [-tag TAG] [-timeout 10s]
//	          [-webhook-listen 127.0.0.1:PORT] [-webhook-wait 2m] [-webhook-down D]
//
// Requests go to <url>/plants only; redirects are not followed and no proxy
// is used. The token comes from -token or else is the first of the
// comma-separated $PLANTSTORE_TOKENS, the variable the server reads its
// tokens from, and is sent as a bearer credential. The run stops after -d
// or after -n requests, whichever comes first; at least one of them must
// be set. Every request carries a distinct id, counting up from -start-id,
// whose default is the current time in nanoseconds so that reruns against
// one server do not collide.
//
// With -webhook-listen, plantload is also the server's webhook subscriber:
// start the server with -webhook http://127.0.0.1:PORT/ and the same
// PLANTSTORE_WEBHOOK_SECRET (signatures are checked when it is set).
// plantload answers every delivery at once with 204, and after the load
// waits, at most -webhook-wait, until every plant created with 200 has been
// delivered. It reports creates and deliveries per second during the load,
// the backlog the load left, the time it took to drain, and duplicate
// deliveries; it exits with status 1 when some were not delivered. With
// -webhook-down it answers 503 for that long from the start instead, as a
// subscriber that is down, and then reports how long the backlog took to
// drain once it is back.
// scripts/webhook-bench.sh runs it against a real server on SQLite.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args, os.Getenv, os.Stdout, os.Stderr)
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errUsage):
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
