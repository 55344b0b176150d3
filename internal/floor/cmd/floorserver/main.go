// Command floorserver serves [floor.Handler] on a loopback address, as the
// baseline that plantstore's throughput is compared with.
//
// Usage:
//
//	floorserver [-addr 127.0.0.1:0] [-work 0s]
//
// With -work, each request first keeps the processor busy for that long
// (see [floor.Working]).
//
// Once it accepts connections it prints "listening on http://HOST:PORT" on
// standard output. It stops on SIGINT or SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/plantstore/plantstore/internal/floor"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args, os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:0", "listen on `HOST:PORT`")
	work := fs.Duration("work", 0, "keep the processor busy this `long` per request before answering")
	if err := fs.Parse(args[1:]); err != nil {
		return fmt.Errorf("floorserver: %w", err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("floorserver: unexpected arguments %q", fs.Args())
	}

	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", *addr)
	if err != nil {
		return fmt.Errorf("floorserver: %w", err)
	}
	srv := &http.Server{Handler: floor.Working(floor.Handler(), *work), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "listening on http://%s\n", ln.Addr())

	select {
	case err := <-served:
		return fmt.Errorf("floorserver: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("floorserver: shutdown: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("floorserver: %w", err)
	}
	return nil
}
