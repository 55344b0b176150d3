package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/plantstore/plantstore/server"
)

// listen binds -addr, and -metrics-addr with the metrics of reg (and
// with -pprof the profiles) behind it, after reading -tls-cert and
// -tls-key. A port taken or refused is an error naming the flag, and
// nothing stays bound. The server reloads at each signal on hup, which
// run has caught since it began, and reloads then the files of sec.
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
	return srv, err
}

// instanceName names the process listening on addr in the webhook leases
// it takes, so that restarted on the same host and address it takes back
// at once the deliveries it held when it was killed (webhook.WithOwner),
// and no other instance of a fleet shares the name: two processes cannot
// listen on one address of one host. With -addr's port 0 the name changes
// at every start, and a restart waits for the leases, -webhook-lease.
func instanceName(addr net.Addr) string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown-host"
	}
	return "plantstore " + host + " " + addr.String()
}

// serve says where srv serves, on stdout and in the log, and serves
// handler on it until ctx ends and the requests in flight have drained
// (see [server.Server.Serve]).
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
	logger.Info("plantstore started", "addr", srv.Addr().String(), "tls", srv.TLS(), "db", redactDSN(o.db))
	if err := srv.Serve(ctx, handler); err != nil {
		return err
	}
	logger.Info("plantstore stopped")
	return nil
}
