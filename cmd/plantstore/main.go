// Command plantstore serves the Plant Store API.
//
// With no flags it listens on 127.0.0.1:8080, keeps plants in the SQLite
// file plantstore.db in the working directory, and prints a bearer token
// generated for the run. plantstore -h lists every flag;
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
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/httpapi"
	"github.com/plantstore/plantstore/oteltrace"
	"github.com/plantstore/plantstore/promstats"
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
	case errors.Is(err, errDiskFull):
		os.Exit(3)
	}
	os.Exit(1)
}

// newLogger returns the logger of the binary, writing to w in the format
// -log-format names.
func newLogger(o *options, w io.Writer) *slog.Logger {
	if o.logFormat == "json" {
		return slog.New(slog.NewJSONHandler(escapingWriter{w}, &slog.HandlerOptions{Level: o.logLevel}))
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: o.logLevel}))
}

// A loggedError is an error run has already written to the log, which main
// need not print again.
type loggedError struct{ err error }

func (e loggedError) Error() string { return e.err.Error() }
func (e loggedError) Unwrap() error { return e.err }

// run is the whole program: it serves until ctx ends, then drains
// in-flight requests and returns nil. Its steps are the ones an operator
// names: the configuration, the listeners, the storage, the handler, then
// serving until told to stop.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) (err error) {
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

	logs, logger := startLogs(o, stderr)
	// Whatever way run returns, what it logged reaches stderr, and so does
	// the error that ends it, as a log line a log collector can parse.
	defer func() {
		if err != nil {
			logger.Error("plantstore failed", "err", err)
			err = loggedError{err}
		}
		logs.Close()
	}()

	// The configuration's secrets are read and checked before anything
	// is opened, and the ports are bound before the storage is: a start
	// that fails on either creates no database and prints no token.
	secret, err := webhookSecret(o, getenv, logger)
	if err != nil {
		return err
	}
	tokens, err := loadTokens(o.tokenFile, getenv, logger)
	if err != nil {
		return err
	}
	lns, err := listen(o)
	if err != nil {
		return err
	}
	defer lns.close()

	// Flushed last, once the requests and the deliveries have ended.
	tp, stopTracing, err := startTracing(ctx, o, getenv, logger)
	if err != nil {
		return err
	}
	defer stopTracing()
	reg := newRegistry()
	reg.MustRegister(logs.droppedCounter())
	ps, stop, err := openPlantStore(ctx, o, secret, reg, tp, logger)
	if err != nil {
		return err
	}
	defer stop()
	if len(tokens) == 0 {
		// Made up only now that everything has opened.
		tok, err := randomToken()
		if err != nil {
			return err
		}
		tokens = []string{tok}
		fmt.Fprintf(stdout, "no token configured (-token-file, PLANTSTORE_TOKENS); generated one for this run:\n  Authorization: Bearer %s\n", tok)
	}
	handler, err := newHandler(ctx, o, ps, tokens, reg, tp, logs, logger)
	if err != nil {
		return err
	}
	return serve(ctx, o, lns, handler, reg, logger, stdout)
}

// startLogs starts the binary's log output to stderr and its logger.
func startLogs(o *options, stderr io.Writer) (*logWriter, *slog.Logger) {
	logs := newLogWriter(stderr)
	logger := newLogger(o, logs)
	logs.onDrop(func(n int64) {
		logger.Warn("log lines dropped: the log output did not take them in time", "dropped", n)
	})
	return logs, logger
}

// openPlantStore opens the storage -db names and starts the webhooks,
// and returns the PlantStore over them and a function that stops the
// webhooks and closes the storage. tp, unless nil, traces them.
func openPlantStore(ctx context.Context, o *options, secret string, reg *prometheus.Registry, tp *sdktrace.TracerProvider, logger *slog.Logger) (*plantstore.PlantStore, func(), error) {
	hooks, err := promstats.Storage(reg)
	if err != nil {
		return nil, nil, err
	}
	var wopts []webhook.Option
	if tp != nil {
		spans := oteltrace.Storage(tp)
		hooks.Start, hooks.Batch = spans.Start, spans.Batch
		wopts = append(wopts, webhook.WithHooks(oteltrace.Webhooks(tp)))
	}
	sopts := []sqlstore.Option{sqlstore.WithTimeout(o.dbTimeout), sqlstore.WithHooks(hooks)}
	if len(o.webhooks) > 0 {
		sopts = append(sopts, sqlstore.WithOutbox(), sqlstore.WithOutboxMaxPending(o.webhookMaxPending))
	}
	storage, closeStorage, err := openStorage(ctx, o, logger, sopts...)
	if err != nil {
		return nil, nil, err
	}
	psOpts, stopWebhooks, err := startWebhooks(ctx, o, secret, storage, logger, reg, wopts...)
	if err != nil {
		closeStorage()
		return nil, nil, err
	}
	return plantstore.New(storage, psOpts...), func() {
		stopWebhooks()
		closeStorage()
	}, nil
}

// newHandler returns the API's handler as the binary serves it on -addr:
// with its tokens, the metrics and the access log as hooks, and /metrics
// unless -metrics-addr takes it elsewhere; inside otelhttp's handler when
// tp traces it.
func newHandler(ctx context.Context, o *options, ps *plantstore.PlantStore, tokens []string, reg *prometheus.Registry, tp *sdktrace.TracerProvider, logs *logWriter, logger *slog.Logger) (http.Handler, error) {
	hooks, err := promstats.HTTP(reg)
	if err != nil {
		return nil, err
	}
	if tp != nil {
		hooks.Routed = oteltrace.HTTP().Routed
	}
	if logger.Enabled(ctx, slog.LevelInfo) {
		access := newAccessLog(logs, o.logFormat == "json", logger.Handler())
		access.traceIDs = tp != nil
		metrics := hooks.Served
		hooks.Served = func(s httpapi.Served) {
			metrics(s)
			access.served(s)
		}
	}
	hopts := []httpapi.Option{
		httpapi.WithTokens(tokens...),
		httpapi.WithLogger(logger),
		httpapi.WithMaxBodyBytes(o.maxBody),
		httpapi.WithHooks(hooks),
		httpapi.WithMaxHeaderBytes(maxHeaderBytes),
		httpapi.WithReadyTimeout(o.readyTimeout),
	}
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
	if tp == nil {
		return httpapi.New(ps, hopts...), nil
	}
	return traced(httpapi.New(ps, hopts...), tp), nil
}
