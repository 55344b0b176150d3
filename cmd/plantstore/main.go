// Command plantstore serves the Plant Store API.
//
// With no flags it listens on 127.0.0.1:8080, keeps plants in the SQLite
// file plantstore.db in the working directory, and prints a bearer token
// generated for the run. See the README for every flag.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/httpapi"
	"github.com/plantstore/plantstore/internal/textlog"
	"github.com/plantstore/plantstore/webhook"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "plantstore:", err)
		os.Exit(1)
	}
}

// options are the binary's flags.
type options struct {
	addr            string
	db              string
	tokenFile       string
	logLevel        slog.Level
	maxBody         int64
	conventional    bool
	shutdownTimeout time.Duration
	// readHeaderTimeout and readTimeout bound how long a client may take
	// to send a request's headers, and its whole request, so that slow
	// clients cannot hold connections forever.
	readHeaderTimeout time.Duration
	readTimeout       time.Duration
	// writeTimeout bounds how long a client may leave answers unread.
	writeTimeout  time.Duration
	webhooks      []string
	webhookSecret string
	// webhookLease is how long a claimed webhook delivery stays with this
	// process before another process on the same database may take it.
	webhookLease time.Duration
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("plantstore", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.addr, "addr", "127.0.0.1:8080", "`host:port` to listen on; port 0 picks a free one")
	fs.StringVar(&o.db, "db", "plantstore.db", "storage: `memory`, a SQLite file path (.db, .sqlite, .sqlite3, or sqlite:PATH), or a postgres:// or postgresql:// URL")
	fs.StringVar(&o.tokenFile, "token-file", "", "`file` of accepted bearer tokens, one per line (also: env PLANTSTORE_TOKENS, comma-separated)")
	fs.TextVar(&o.logLevel, "log-level", slog.LevelInfo, "log `level`: debug, info, warn or error")
	fs.Int64Var(&o.maxBody, "max-body", httpapi.DefaultMaxBodyBytes, "largest request body in `bytes`")
	fs.BoolVar(&o.conventional, "conventional-status", false, "answer failures with the HTTP status of their error code instead of 400")
	fs.DurationVar(&o.shutdownTimeout, "shutdown-timeout", 10*time.Second, "how long to drain in-flight requests on SIGINT or SIGTERM")
	fs.DurationVar(&o.readHeaderTimeout, "read-header-timeout", 10*time.Second, "how long a client may take to send a request's headers")
	fs.DurationVar(&o.readTimeout, "read-timeout", 10*time.Second, "how long a client may take to send a whole request, body included")
	fs.DurationVar(&o.writeTimeout, "write-timeout", 30*time.Second, "how long a client may leave an answer unread before its connection is dropped")
	fs.Func("webhook", "subscriber `URL` for plant-added webhooks (repeatable)", func(s string) error {
		o.webhooks = append(o.webhooks, s)
		return nil
	})
	fs.StringVar(&o.webhookSecret, "webhook-secret-file", "", "`file` holding the webhook signing secret (also: env PLANTSTORE_WEBHOOK_SECRET)")
	fs.DurationVar(&o.webhookLease, "webhook-lease", webhook.DefaultLease, "how long a claimed webhook delivery waits for this process before another process on the same database may send it")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if _, _, err := parseDB(o.db); err != nil {
		return o, err
	}
	if o.maxBody <= 0 {
		return o, errors.New("-max-body must be positive")
	}
	if o.shutdownTimeout < 0 {
		return o, errors.New("-shutdown-timeout must not be negative")
	}
	if o.webhookLease <= 0 {
		return o, errors.New("-webhook-lease must be positive")
	}
	if o.readHeaderTimeout <= 0 || o.readTimeout <= 0 || o.writeTimeout <= 0 {
		return o, errors.New("-read-header-timeout, -read-timeout and -write-timeout must be positive")
	}
	return o, nil
}

// run is the whole program: it serves until ctx ends, then drains
// in-flight requests and returns nil.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}

	logs := newLogWriter(stderr)
	defer logs.Close()
	// textlog writes what slog.TextHandler writes, access lines faster.
	logger := slog.New(textlog.New(logs, o.logLevel))

	secret, err := webhookSecret(o, getenv)
	if err != nil {
		return err
	}
	tokens, err := loadTokens(o.tokenFile, getenv, logger)
	if err != nil {
		return err
	}

	storage, closeStorage, err := openStorage(ctx, o.db, len(o.webhooks) > 0)
	if err != nil {
		return err
	}
	defer closeStorage()

	var psOpts []plantstore.Option
	stopWebhooks, err := startWebhooks(ctx, o, secret, storage, &psOpts, logger)
	if err != nil {
		return err
	}
	defer stopWebhooks()
	ps := plantstore.New(storage, psOpts...)

	// A token is made up only once the storage and webhooks have opened,
	// so that a run that fails on them prints none.
	if len(tokens) == 0 {
		tok, err := randomToken()
		if err != nil {
			return err
		}
		tokens = []string{tok}
		fmt.Fprintf(stdout, "no token configured (-token-file, PLANTSTORE_TOKENS); generated one for this run:\n  Authorization: Bearer %s\n", tok)
	}

	hopts := []httpapi.Option{
		httpapi.WithTokens(tokens...),
		httpapi.WithLogger(logger),
		httpapi.WithMaxBodyBytes(o.maxBody),
	}
	if logger.Enabled(ctx, slog.LevelInfo) {
		hopts = append(hopts, httpapi.WithAccessLog(logger))
	}
	if o.conventional {
		hopts = append(hopts, httpapi.WithConventionalStatus())
	}
	// With the two read timeouts equal, as by default, net/http sets one
	// read deadline per request instead of two. Writes are bounded by the
	// stallListener below rather than by WriteTimeout.
	srv := &http.Server{
		Handler:           httpapi.New(ps, hopts...),
		ReadHeaderTimeout: o.readHeaderTimeout,
		ReadTimeout:       o.readTimeout,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}

	tcp, err := net.Listen("tcp", o.addr)
	if err != nil {
		return err
	}
	ln := stallListener{Listener: tcp, stall: o.writeTimeout}
	fmt.Fprintf(stdout, "listening on http://%s\n", ln.Addr())
	logger.Info("plantstore started", "addr", ln.Addr().String(), "db", redactDSN(o.db))

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	select {
	case err := <-serveErr:
		return err
	case <-ctx.Done():
	}

	logger.Info("shutting down: draining in-flight requests", "timeout", o.shutdownTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), o.shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
		return fmt.Errorf("shutdown: %w", err)
	}
	logger.Info("plantstore stopped")
	return nil
}

// redactDSN hides the password in a database URL, in its user part or in a
// password query parameter, before it is logged. What is not a URL is
// returned as it is: no other -db form holds a password.
func redactDSN(db string) string {
	u, err := url.Parse(db)
	if err != nil || u.Scheme == "" {
		if strings.Contains(db, "://") {
			return "(a database URL that does not parse)"
		}
		return db
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}
