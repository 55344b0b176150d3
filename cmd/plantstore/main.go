// Command plantstore serves the Plant Store API: with no flags on
// 127.0.0.1:8080, from the SQLite file plantstore.db, with a token
// generated for the run. plantstore -h lists the flags;
// docs/operations.md says what each does.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/apidocs"
	"github.com/plantstore/plantstore/httpapi"
	"github.com/plantstore/plantstore/oteltrace"
	"github.com/plantstore/plantstore/promstats"
	"github.com/plantstore/plantstore/server"
	"github.com/plantstore/plantstore/sqlstore"
	"github.com/plantstore/plantstore/webhook"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	if err == nil {
		return
	}
	if _, ok := errors.AsType[loggedError](err); !ok {
		fmt.Fprintln(os.Stderr, "plantstore:", err)
	}
	switch {
	case errors.Is(err, errBadArgs):
		os.Exit(2)
	case errors.Is(err, sqlstore.ErrDiskFull):
		os.Exit(3)
	}
	os.Exit(1)
}

// logFormat returns the format -log-format names.
func logFormat(o *options) httpapi.LogFormat {
	if o.logFormat == "json" {
		return httpapi.JSONLog
	}
	return httpapi.TextLog
}

// A loggedError is an error run has already written to the log, which main
// need not print again.
type loggedError struct{ err error }

func (e loggedError) Error() string { return e.err.Error() }
func (e loggedError) Unwrap() error { return e.err }

// run is the whole program: it runs a command, answers -h, -version or
// -probe, or serves until ctx ends (see serveFlags).
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if isCommand(args) {
		return commands[args[0]](ctx, args[1:], stdout, stderr)
	}
	o, err := parseFlags(args, getenv)
	switch {
	case errors.Is(err, flag.ErrHelp):
		printUsage(stdout, o.fs)
		return nil
	case err != nil:
		return err
	case o.version:
		fmt.Fprintln(stdout, version())
		return nil
	case o.probe != "":
		return probe(ctx, o, stdout)
	}
	return serveFlags(ctx, o, getenv, stdout, stderr)
}

// serveFlags serves as o says until ctx ends, and returns nil once the
// requests have drained, the deliveries stopped, the spans been flushed
// and the storage closed, in that order.
func serveFlags(ctx context.Context, o *options, getenv func(string) string, stdout, stderr io.Writer) (err error) {
	// SIGHUP re-reads the files of secrets once serving (see
	// server.Server.Reload); caught from here on, it no longer ends the process.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	logs, logger := startLogs(o, stderr)
	for _, w := range unknownVariables(environ(), o.fs) {
		logger.Warn(w)
	}
	// Whatever way it returns, what it logged reaches stderr, and so does
	// the error that ends it, as a log line a log collector can parse.
	defer func() {
		if err != nil {
			logger.Error("plantstore failed", "err", err)
			err = loggedError{err}
		}
		logs.Close()
	}()
	// The secrets are read and checked before anything is opened, and the
	// ports are bound before the storage is: a start that fails on either
	// creates no database and prints no token.
	sec, err := loadSecrets(o, getenv, logger)
	if err != nil {
		return err
	}
	reg := newRegistry()
	if err := promstats.LogWriter(reg, logs); err != nil {
		return err
	}
	srv, err := listen(o, sec, reg, hup, logger)
	if err != nil {
		return err
	}
	defer srv.Close()
	// The run lock goes in systemd's state directory, when there is one.
	stateDir, _, _ := strings.Cut(getenv("STATE_DIRECTORY"), ":")
	o.instance = webhook.InstanceName(srv.Addr())
	o.runLock = webhook.RunLockPath(stateDir, o.addr, o.instance)
	ps, tp, stop, err := openPlantStore(ctx, o, getenv, sec, reg, logger)
	if err != nil {
		return err
	}
	defer stop()
	ensureToken(sec, stdout)
	handler, err := newHandler(o, ps, sec, reg, tp, logs, logger)
	if err != nil {
		return err
	}
	return serve(ctx, o, srv, handler, logger, stdout)
}

// ensureToken makes up a token and prints it when none is configured,
// once everything has opened, so that a start that fails prints none.
func ensureToken(sec *secrets, stdout io.Writer) {
	if sec.tokens == nil {
		tok := httpapi.NewToken()
		sec.tokens = httpapi.Tokens(tok)
		fmt.Fprintf(stdout, "no token configured (-token-file, PLANTSTORE_TOKENS); generated one for this run:\n  Authorization: Bearer %s\n", tok)
	}
}

// startLogs starts the binary's log output to stderr and its logger, in
// the format and from the level of -log-format and -log-level.
func startLogs(o *options, stderr io.Writer) (*server.LogWriter, *slog.Logger) {
	logs := server.NewLogWriter(stderr)
	logger := slog.New(httpapi.NewLogHandler(logs, logFormat(o), &slog.HandlerOptions{Level: o.logLevel}))
	logs.OnDrop(func(n int64) {
		logger.Warn("log lines dropped: the log output did not take them in time", "dropped", n)
	})
	return logs, logger
}

// openPlantStore starts tracing, opens the storage and starts the
// webhooks, with a context that outlives the drain. It returns the
// PlantStore, the TracerProvider (nil when tracing is off) and the
// function that stops the webhooks, flushes the spans and closes the
// storage, in that order.
func openPlantStore(ctx context.Context, o *options, getenv func(string) string, sec *secrets, reg *prometheus.Registry, logger *slog.Logger) (*plantstore.PlantStore, *sdktrace.TracerProvider, func(), error) {
	tp, stopTracing, err := startTracing(ctx, o, getenv, logger)
	if err != nil {
		return nil, nil, nil, err
	}
	hooks, err := promstats.Storage(reg)
	if err != nil {
		stopTracing()
		return nil, nil, nil, err
	}
	sopts := []sqlstore.Option{sqlstore.WithTimeout(o.dbTimeout), sqlstore.WithHooks(hooks)}
	var wopts []webhook.Option
	if tp != nil {
		sopts = append(sopts, sqlstore.WithHooks(oteltrace.Storage(tp)))
		wopts = append(wopts, webhook.WithHooks(oteltrace.Webhooks(tp)))
	}
	if len(o.webhooks) > 0 {
		sopts = append(sopts, sqlstore.WithOutbox(), sqlstore.WithOutboxMaxPending(o.webhookMaxPending))
	}
	storage, closeStorage, err := openStorage(ctx, o, logger, sopts...)
	if err != nil {
		stopTracing()
		return nil, nil, nil, err
	}
	psOpts, stopWebhooks, err := startWebhooks(context.WithoutCancel(ctx), o, sec, storage, logger, reg, wopts...)
	if err != nil {
		stopTracing()
		closeStorage()
		return nil, nil, nil, err
	}
	return plantstore.New(storage, psOpts...), tp, func() {
		stopWebhooks()
		stopTracing()
		closeStorage()
	}, nil
}

// newHandler returns the API's handler as the binary serves it on -addr,
// traced when tp is not nil.
func newHandler(o *options, ps *plantstore.PlantStore, sec *secrets, reg *prometheus.Registry, tp *sdktrace.TracerProvider, logs *server.LogWriter, logger *slog.Logger) (http.Handler, error) {
	hooks, err := promstats.HTTP(reg)
	if err != nil {
		return nil, err
	}
	access := httpapi.AccessLog{Format: logFormat(o), Level: o.logLevel}
	hopts := []httpapi.Option{
		httpapi.WithAuthenticator(sec.tokens),
		httpapi.WithLogger(logger),
		httpapi.WithMaxBodyBytes(o.maxBody),
		httpapi.WithHooks(hooks),
		httpapi.WithMaxHeaderBytes(server.DefaultMaxHeaderBytes),
		httpapi.WithReadyTimeout(o.readyTimeout),
	}
	if tp != nil {
		hopts = append(hopts, httpapi.WithHooks(oteltrace.HTTP()))
		access.TraceID = oteltrace.TraceID
	}
	hopts = append(hopts, httpapi.WithAccessLog(logs, access))
	if o.conventional {
		hopts = append(hopts, httpapi.WithConventionalStatus())
	}
	if len(o.corsOrigins) > 0 {
		hopts = append(hopts, httpapi.WithCORS(o.corsOrigins...))
	}
	if o.metricsAddr == "" {
		hopts = append(hopts, httpapi.WithMetricsHandler(metricsHandler(reg)))
		if o.metricsPublic {
			hopts = append(hopts, httpapi.WithPublicMetrics())
		}
	}
	if o.docs {
		hopts = append(hopts, httpapi.WithDocs(apidocs.Handler()))
	}
	if tp == nil {
		return httpapi.New(ps, hopts...), nil
	}
	return oteltrace.Handler(httpapi.New(ps, hopts...), tp), nil
}
