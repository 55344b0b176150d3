package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/plantstore/plantstore/promstats"
	"github.com/plantstore/plantstore/server"
)

// listen binds -addr, and -metrics-addr with the metrics of reg (and
// with -pprof the profiles) behind it, after reading -tls-cert and
// -tls-key. A port taken or refused is an error naming the flag, and
// nothing stays bound. The server reloads at each signal on hup, which
// run has caught since it began, and reloads then the files of sec; reg
// gets its counts (promstats.Server).
func listen(o *options, sec *secrets, reg *prometheus.Registry, hup <-chan os.Signal, logger *slog.Logger) (*server.Server, error) {
	opts := append([]server.Option{
		server.WithTimeouts(o.timeouts()),
		server.WithShutdownTimeout(o.shutdownTimeout),
		server.WithLogger(logger),
		server.WithReloadOn(hup),
	}, sec.reloaders()...)
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

// instanceName names the process listening on addr as the webhook
// instance it runs (webhook.WithInstance): restarted on the same host and
// address after a crash or kill -9, it takes back the deliveries its
// previous run held as soon as that run's record in the outbox expires,
// instead of waiting out -webhook-lease. Two live processes may share the
// name (containers of one service with one host name all listen on
// [::]:8080): each run claims under an owner of its own, and the
// deliveries of a run that still renews its record are never taken back.
// With -addr's port 0 the name changes at every start, and a restart
// waits for the leases. A restart on the same host does not even wait for
// the record to expire: the run lock (runLockPath) shows the previous run
// gone.
func instanceName(addr net.Addr) string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown-host"
	}
	return "plantstore " + host + " " + addr.String()
}

// runLockPath returns the file that the webhook runs of instance lock
// while they live (webhook.WithRunLock), so that a restart on the same
// host knows at once that its previous run is gone, kill -9 included: in
// the service's state directory under systemd (STATE_DIRECTORY, which
// outlives a restart, where PrivateTmp's /tmp does not), or else the
// temporary directory, named after the instance. It returns "", no run
// lock, when -addr (addr) asks for a port the system chooses: the instance
// is then named anew at each start, and its file would only be left
// behind.
func runLockPath(addr, instance string, getenv func(string) string) string {
	if _, port, err := net.SplitHostPort(addr); err != nil || port == "" || port == "0" {
		return ""
	}
	dir, _, _ := strings.Cut(getenv("STATE_DIRECTORY"), ":")
	if dir == "" {
		dir = os.TempDir()
	}
	sum := sha256.Sum256([]byte(instance))
	return filepath.Join(dir, "plantstore-webhook-"+hex.EncodeToString(sum[:8])+".lock")
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
