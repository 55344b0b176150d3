package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/plantstore/plantstore/promstats"
	"github.com/plantstore/plantstore/server"
	"github.com/plantstore/plantstore/sqlstore"
)

// listen binds -addr, with -tls-cert, and -metrics-addr, with reg's
// metrics and -pprof's profiles; a port it cannot bind is an error naming
// the flag. Each signal on hup reloads the certificate and sec's files;
// reg gets the reloads' outcomes and failed handshakes (promstats.Server).
func listen(o *options, sec *secrets, reg *prometheus.Registry, hup <-chan os.Signal, logger *slog.Logger) (*server.Server, error) {
	opts := append([]server.Option{
		server.WithTimeouts(o.timeouts()),
		server.WithShutdownTimeout(o.shutdownTimeout),
		server.WithLogger(logger),
		server.WithReloadOn(hup),
	}, sec.reloaders(o, logger)...)
	if o.tlsCert != "" {
		opts = append(opts, server.WithTLS(o.tlsCert, o.tlsKey))
	}
	if o.metricsAddr != "" {
		mux := http.NewServeMux()
		mux.Handle("GET "+metricsPath, metricsHandler(reg))
		opts = append(opts, server.WithMetrics(o.metricsAddr, mux))
		if o.pprof {
			opts = append(opts, server.WithPprof())
		}
	}
	srv, err := server.Listen(o.addr, opts...)
	if le, ok := errors.AsType[*server.ListenError](err); ok {
		flag := "addr"
		if le.Metrics {
			flag = "metrics-addr"
		}
		return nil, fmt.Errorf("%s: %w", o.name(flag), le.Err)
	}
	if err != nil {
		return nil, err
	}
	// Reloads and failed TLS handshakes, for the alert on a reload that
	// kept an old value.
	if err := promstats.Server(reg, srv); err != nil {
		srv.Close()
		return nil, err
	}
	return srv, nil
}

// serve says where srv serves, on stdout and in the log, and serves
// handler until ctx ends and the requests in flight have drained.
func serve(ctx context.Context, o *options, srv *server.Server, handler http.Handler, logger *slog.Logger, stdout io.Writer) error {
	if addr := srv.MetricsAddr(); addr != nil {
		fmt.Fprintf(stdout, "serving metrics on http://%s%s\n", addr, metricsPath)
		if o.pprof {
			fmt.Fprintf(stdout, "serving profiles on http://%s%s\n", addr, server.PprofPath)
		}
	}
	scheme := "http"
	if srv.TLS() {
		scheme = "https"
	}
	fmt.Fprintf(stdout, "listening on %s://%s\n", scheme, srv.Addr())
	logger.Info("plantstore started", "addr", srv.Addr().String(), "tls", srv.TLS(), "db", sqlstore.RedactDSN(o.db))
	if err := srv.Serve(ctx, handler); err != nil {
		return err
	}
	logger.Info("plantstore stopped")
	return nil
}

// metricsPath is where the binary serves its metrics, in the Prometheus
// text format: on -metrics-addr without a token, or on -addr behind the
// API's tokens unless -metrics-public.
const metricsPath = "/metrics"

// newRegistry returns the binary's own registry, with what
// [promstats.Process] registers (plantstore_build_info with the linker's
// buildVersion and buildCommit, the runtime's and the process's collectors).
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	if err := promstats.Process(reg, promstats.WithBuild(buildVersion, buildCommit)); err != nil {
		panic(err) // a new registry refuses none of them
	}
	return reg
}

// metricsHandler serves reg's metrics.
func metricsHandler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})
}
