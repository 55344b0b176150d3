// Command plantload drives a running plantstore server with POST /plants
// requests over keep-alive connections and reports throughput, latency
// percentiles, and counts per HTTP status and per Error code.
//
// Usage:
//
//	plantload [-url http://127.0.0.1:8080] [-token T] [-c 32] [-d 10s] [-n N]
//	          [-start-id ID] [-name NAME] [-tag TAG] [-timeout 10s]
//
// Requests go to <url>/plants only; redirects are not followed and no proxy
// is used. The token comes from -token or else is the first of the
// comma-separated $PLANTSTORE_TOKENS, the variable the server reads its
// tokens from, and is sent as a bearer credential. The run stops after -d
// or after -n requests, whichever comes first; at least one of them must
// be set. Every request carries a distinct id, counting up from -start-id,
// whose default is the current time in nanoseconds so that reruns against
// one server do not collide.
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
