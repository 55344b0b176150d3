package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"

	"github.com/prometheus/client_golang/prometheus"
)

// maxHeaderBytes is the most bytes of request line and headers the API
// accepts; the handler answers a request over it with the Error for 431.
// net/http reads headers up to serverHeaderBytes (and 4 KiB more), so that
// headers somewhat over the limit still reach the handler; past that,
// net/http answers 431 itself, as text/plain, without reading the rest.
const (
	maxHeaderBytes    = 64 << 10
	serverHeaderBytes = 2 * maxHeaderBytes
)

// listeners are the binary's bound sockets: the API's, and the metrics'
// when -metrics-addr is given.
type listeners struct {
	api, metrics net.Listener
}

// listen binds -addr and -metrics-addr. A port taken or refused is an
// error naming the flag, and nothing stays bound.
func listen(o *options) (*listeners, error) {
	lns := &listeners{}
	var err error
	if lns.api, err = net.Listen("tcp", o.addr); err != nil {
		return nil, fmt.Errorf("%s: %w", o.name("addr"), err)
	}
	if o.metricsAddr != "" {
		if lns.metrics, err = net.Listen("tcp", o.metricsAddr); err != nil {
			lns.api.Close()
			return nil, fmt.Errorf("%s: %w", o.name("metrics-addr"), err)
		}
	}
	return lns, nil
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

// close closes the listeners not closed already, as an http.Server's
// Close does those it serves.
func (l *listeners) close() {
	for _, ln := range []net.Listener{l.api, l.metrics} {
		if ln != nil {
			ln.Close()
		}
	}
}

// newServer returns the http.Server of one listener: the client deadlines
// of the options and net/http's own complaints in the log.
//
// A zero timeout is none: net/http then neither reads the clock for it nor
// moves a deadline timer per request. With all four at zero the runtime
// keeps no timer per connection at all, which is worth about 4 % of a
// create's throughput (docs/performance.md); for servers behind a proxy
// that bounds its clients itself.
func newServer(o *options, h http.Handler, headerBytes int, logger *slog.Logger) *http.Server {
	idle := o.idleTimeout
	if idle == 0 {
		idle = -1 // net/http's "none"; zero would mean -read-timeout
	}
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: o.readHeaderTimeout,
		ReadTimeout:       o.readTimeout,
		WriteTimeout:      o.serverWriteTimeout(),
		IdleTimeout:       idle,
		MaxHeaderBytes:    headerBytes,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
}

// serve serves handler on the API's listener, over TLS when tlsConfig is
// not nil, and the metrics on theirs, until ctx ends; then it drains the
// API's requests in flight, for at most -shutdown-timeout, and returns
// nil. A listener that fails ends it with that error.
func serve(ctx context.Context, o *options, lns *listeners, handler http.Handler, tlsConfig *tls.Config, reg *prometheus.Registry, logger *slog.Logger, stdout io.Writer) error {
	srv := newServer(o, handler, serverHeaderBytes, logger)
	serveErr := make(chan error, 2)
	metricsSrv := serveMetrics(o, lns.metrics, reg, logger, stdout, serveErr)
	scheme := "http"
	if tlsConfig != nil {
		scheme = "https"
		srv.TLSConfig = tlsConfig
	}
	fmt.Fprintf(stdout, "listening on %s://%s\n", scheme, lns.api.Addr())
	logger.Info("plantstore started", "addr", lns.api.Addr().String(), "tls", tlsConfig != nil, "db", redactDSN(o.db))
	go func() {
		if tlsConfig != nil {
			// The certificate comes from tlsConfig.GetCertificate.
			serveErr <- srv.ServeTLS(lns.api, "", "")
			return
		}
		serveErr <- srv.Serve(lns.api)
	}()

	select {
	case err := <-serveErr:
		srv.Close()
		if metricsSrv != nil {
			metricsSrv.Close()
		}
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down: draining in-flight requests", "timeout", o.shutdownTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), o.shutdownTimeout)
	defer cancel()
	if metricsSrv != nil {
		// Scrapes are short; the API's requests are the ones to drain.
		metricsSrv.Close()
	}
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
		return fmt.Errorf("shutdown: %w", err)
	}
	logger.Info("plantstore stopped")
	return nil
}

// serveMetrics serves the metrics, and with -pprof the profiles, on ln,
// sending to serveErr how serving ended, and returns its server; without
// -metrics-addr, ln is nil and so is the server.
func serveMetrics(o *options, ln net.Listener, reg *prometheus.Registry, logger *slog.Logger, stdout io.Writer, serveErr chan<- error) *http.Server {
	if ln == nil {
		return nil
	}
	mux := http.NewServeMux()
	mux.Handle("GET "+metricsPath, metricsHandler(reg))
	if o.pprof {
		// Registered here by hand: profiles show the program's insides
		// and cost CPU, for the operator's network only. (The package's
		// init also registers them on http.DefaultServeMux, which no
		// server of this binary serves.)
		mux.HandleFunc(pprofPath, pprof.Index)
		mux.HandleFunc(pprofPath+"cmdline", pprof.Cmdline)
		mux.HandleFunc(pprofPath+"profile", pprof.Profile)
		mux.HandleFunc(pprofPath+"symbol", pprof.Symbol)
		mux.HandleFunc(pprofPath+"trace", pprof.Trace)
	}
	srv := newServer(o, mux, 64<<10, logger)
	fmt.Fprintf(stdout, "serving metrics on http://%s%s\n", ln.Addr(), metricsPath)
	if o.pprof {
		fmt.Fprintf(stdout, "serving profiles on http://%s%s\n", ln.Addr(), pprofPath)
	}
	go func() { serveErr <- srv.Serve(ln) }()
	return srv
}

// pprofPath is where -pprof serves net/http/pprof's handlers, on
// -metrics-addr: go tool pprof http://HOST:PORT/debug/pprof/profile.
const pprofPath = "/debug/pprof/"
