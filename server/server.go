package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// A Server serves an [http.Handler] on the listener [Listen] bound, with
// the deadlines, limits, TLS and reloads its options give, and the
// metrics on a second listener when [WithMetrics] asks for one.
type Server struct {
	cfg    config
	logger *slog.Logger
	// ln and metricsLn are the bound listeners; metricsLn is nil without
	// WithMetrics.
	ln, metricsLn net.Listener
	cert          *certificate // nil without WithTLS
	reloaders     []reloader   // the certificate's first, then WithReload's
	// reloadOn carries the signals Serve reloads at; hup is the channel
	// Listen gave signal.Notify, nil with WithReloadOn.
	reloadOn <-chan os.Signal
	hup      chan os.Signal

	mu           sync.Mutex // guards the four fields below
	serving      bool
	closed       bool
	api, metrics *http.Server // nil until Serve

	// reloadMu is held by each reload, so that none runs two at a time,
	// and by Close to set reloadsOff, so that none runs after it.
	reloadMu   sync.Mutex
	reloadsOff bool

	stats counters
}

// A ListenError is an address [Listen] could not bind: taken, refused,
// or not an address.
type ListenError struct {
	Addr    string // the address as given
	Metrics bool   // whether it is the address of WithMetrics
	Err     error  // the *net.OpError of the failed listen
}

func (e *ListenError) Error() string {
	if e.Metrics {
		return "server: metrics listener: " + e.Err.Error()
	}
	return "server: " + e.Err.Error()
}

func (e *ListenError) Unwrap() error { return e.Err }

// Listen binds addr over TCP, and the address of [WithMetrics] when it
// is given, for [Server.Serve] to serve. It reads the certificate of
// [WithTLS] first: a certificate that cannot be used, or an address that
// cannot be bound (a [*ListenError]), is an error, and then nothing stays
// bound. Options that do not fit (a negative timeout, [WithPprof] without
// [WithMetrics]) are an error too.
//
// When every client deadline of [WithTimeouts] is off (all of ReadHeader,
// Read, Write and Idle zero), Listen logs a warning for each listener
// bound beyond loopback (0.0.0.0, a public address), where nothing then
// bounds how long a client holds a connection.
//
// Unless [WithReloadOn] says otherwise, from Listen until [Server.Close]
// SIGHUP no longer ends the process: while [Server.Serve] runs, it
// reloads (see [Server.Reload]), and one that came before reloads once
// Serve runs.
func Listen(addr string, opts ...Option) (*Server, error) {
	cfg := config{
		timeouts:        DefaultTimeouts,
		maxHeaderBytes:  DefaultMaxHeaderBytes,
		shutdownTimeout: DefaultShutdownTimeout,
		ownSignal:       true,
	}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.logger == nil {
		cfg.logger = slog.Default()
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, logger: cfg.logger}
	if cfg.certFile != "" {
		cert, err := loadCertificate(cfg.certFile, cfg.keyFile, cfg.logger)
		if err != nil {
			return nil, err
		}
		s.cert = cert
		s.reloaders = append(s.reloaders, reloader{name: "certificate", reload: cert.reload, attrs: cert.attrs})
	}
	s.reloaders = append(s.reloaders, cfg.reloaders...)
	var err error
	if s.ln, err = net.Listen("tcp", addr); err != nil {
		return nil, &ListenError{Addr: addr, Err: err}
	}
	if cfg.metricsAddr != "" {
		if s.metricsLn, err = net.Listen("tcp", cfg.metricsAddr); err != nil {
			s.ln.Close()
			return nil, &ListenError{Addr: cfg.metricsAddr, Metrics: true, Err: err}
		}
	}
	s.warnUnbounded()
	s.reloadOn = cfg.reloadOn
	if cfg.ownSignal {
		s.hup = make(chan os.Signal, 1)
		signal.Notify(s.hup, syscall.SIGHUP)
		s.reloadOn = s.hup
	}
	// The configuration Listen starts with counts as the first load.
	now := time.Now().UnixNano()
	s.stats.lastOK.Store(now)
	for i := range s.reloaders {
		s.reloaders[i].st = &reloadCounters{}
		s.reloaders[i].st.lastOK.Store(now)
	}
	return s, nil
}

// warnUnbounded logs a warning when every client deadline is off and a
// listener takes connections from beyond the host: nothing then bounds
// how long a slow or idle client holds a connection, which is for servers
// behind a proxy that bounds its clients itself.
func (s *Server) warnUnbounded() {
	if t := s.cfg.timeouts; t.ReadHeader != 0 || t.Read != 0 || t.Write != 0 || t.Idle != 0 {
		return
	}
	for _, ln := range []net.Listener{s.ln, s.metricsLn} {
		if ln == nil {
			continue
		}
		if a, ok := ln.Addr().(*net.TCPAddr); ok && a.IP.IsLoopback() {
			continue
		}
		s.logger.Warn("every client deadline is off on an address beyond loopback: a slow or idle client holds its connection as long as it likes; do this only behind a proxy that bounds its clients",
			"addr", ln.Addr().String())
	}
}

// check returns an error for the first option that does not fit.
func (c *config) check() error {
	if err := c.timeouts.check(); err != nil {
		return err
	}
	switch {
	case c.maxHeaderBytes <= 0:
		return fmt.Errorf("server: WithMaxHeaderBytes(%d): the limit must be positive", c.maxHeaderBytes)
	case c.shutdownTimeout <= 0:
		return fmt.Errorf("server: WithShutdownTimeout(%v): the timeout must be positive", c.shutdownTimeout)
	case (c.certFile == "") != (c.keyFile == ""):
		return errors.New("server: WithTLS needs both the certificate file and the key file")
	case c.pprof && c.metricsAddr == "":
		return errors.New("server: WithPprof needs WithMetrics: profiles are served there, never on the main listener")
	}
	for _, r := range c.reloaders {
		if r.name == "" || r.reload == nil {
			return fmt.Errorf("server: WithReload(%q) needs a name and a function", r.name)
		}
	}
	return nil
}

// Addr returns the address the server listens on: with port 0 in the
// address given to [Listen], the port the system chose.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// MetricsAddr returns the address of the listener of [WithMetrics], or
// nil without it.
func (s *Server) MetricsAddr() net.Addr {
	if s.metricsLn == nil {
		return nil
	}
	return s.metricsLn.Addr()
}

// TLS reports whether the server serves HTTPS ([WithTLS]).
func (s *Server) TLS() bool { return s.cert != nil }

// errServing is Serve's error when it is called a second time.
var errServing = errors.New("server: Serve called twice")

// Serve serves h on the listener, and the metrics on theirs, until ctx
// ends. Then it closes the metrics listener, stops taking connections,
// and waits for the requests in flight to end, for at most the shutdown
// timeout ([WithShutdownTimeout]), logging "shutting down: draining
// in-flight requests" with the timeout; it returns nil once they have.
// Requests still in flight at the timeout have their connections closed,
// and Serve returns an error wrapping [context.DeadlineExceeded], which
// reads "shutdown: context deadline exceeded".
//
// A listener that fails ends Serve with its error, and [Server.Close]
// ends it with [http.ErrServerClosed]. While it runs, each signal of
// [WithReloadOn] (SIGHUP by default) reloads; a reload under way ends
// before Serve returns. Serve may be called once.
func (s *Server) Serve(ctx context.Context, h http.Handler) error {
	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		return http.ErrServerClosed
	case s.serving:
		s.mu.Unlock()
		return errServing
	}
	s.serving = true
	s.api = newHTTPServer(h, s.cfg.timeouts, 2*s.cfg.maxHeaderBytes, s.errorLog(s.cert != nil))
	if s.cert != nil {
		s.api.TLSConfig = s.cert.config()
	}
	if s.metricsLn != nil {
		s.metrics = newHTTPServer(s.metricsHandler(), s.cfg.timeouts, metricsHeaderBytes, s.errorLog(false))
	}
	api, metrics := s.api, s.metrics
	s.mu.Unlock()

	serveErr := make(chan error, 2)
	if metrics != nil {
		go func() { serveErr <- metrics.Serve(s.metricsLn) }()
	}
	go func() {
		if s.cert != nil {
			// The certificate comes from TLSConfig.GetCertificate.
			serveErr <- api.ServeTLS(s.ln, "", "")
			return
		}
		serveErr <- api.Serve(s.ln)
	}()
	defer s.watch(ctx)()

	select {
	case err := <-serveErr:
		api.Close()
		if metrics != nil {
			metrics.Close()
		}
		return err
	case <-ctx.Done():
	}
	if s.isClosed() {
		// Close came first: its ErrServerClosed may still be on its way
		// from api.Serve, and there is nothing left to drain.
		return http.ErrServerClosed
	}
	s.logger.Info("shutting down: draining in-flight requests", "timeout", s.cfg.shutdownTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.shutdownTimeout)
	defer cancel()
	if metrics != nil {
		// Scrapes are short; the API's requests are the ones to drain.
		metrics.Close()
	}
	if err := api.Shutdown(sctx); err != nil {
		api.Close()
		return fmt.Errorf("shutdown: %w", err)
	}
	if s.isClosed() {
		// Close cut the drain short.
		return http.ErrServerClosed
	}
	return nil
}

// isClosed reports whether Close has been called.
func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// metricsHandler returns what the metrics listener serves: the handler of
// WithMetrics, and with WithPprof the profiles under PprofPath.
func (s *Server) metricsHandler() http.Handler {
	h := s.cfg.metricsHandler
	if h == nil {
		h = http.NotFoundHandler()
	}
	if !s.cfg.pprof {
		return h
	}
	mux := http.NewServeMux()
	mux.Handle("/", h)
	mux.HandleFunc(PprofPath, pprof.Index)
	mux.HandleFunc(PprofPath+"cmdline", pprof.Cmdline)
	mux.HandleFunc(PprofPath+"profile", s.boundedProfile(pprof.Profile, "CPU profile", profileSeconds))
	mux.HandleFunc(PprofPath+"symbol", pprof.Symbol)
	mux.HandleFunc(PprofPath+"trace", s.boundedProfile(pprof.Trace, "trace", traceSeconds))
	return mux
}

// profileSeconds and traceSeconds read a request's seconds as
// net/http/pprof's Profile and Trace do: Profile takes a whole number and
// 30 for anything else, Trace any number and 1 for anything else.
func profileSeconds(v string) float64 {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 30
	}
	return float64(n)
}

func traceSeconds(v string) float64 {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f <= 0 {
		return 1
	}
	return f
}

// boundedProfile returns h, a profile of net/http/pprof that lasts the
// seconds its request asks for, refusing with 400 and a line saying why a
// request whose seconds (as seconds reads them) reach the listener's
// write deadline: net/http/pprof would move the deadline itself and keep
// the connection as long as asked. Without a write deadline it is h.
func (s *Server) boundedProfile(h http.HandlerFunc, what string, seconds func(string) float64) http.HandlerFunc {
	limit := s.cfg.timeouts.writeDeadline()
	if limit == 0 {
		return h
	}
	return func(w http.ResponseWriter, r *http.Request) {
		if sec := seconds(r.FormValue("seconds")); !(sec < limit.Seconds()) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("X-Content-Type-Options", "nosniff")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, "a %s of %v seconds is refused: it must end within the write deadline of %v (Timeouts Read + Handler + Write); ask for fewer seconds\n", what, sec, limit)
			return
		}
		h(w, r)
	}
}

// Close closes the listeners and every connection at once, without a
// drain (for that, end [Server.Serve]'s context), stops catching SIGHUP,
// and waits for a reload under way to end: after Close no reload logs.
// Closing again does nothing more.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	api, metrics := s.api, s.metrics
	s.mu.Unlock()

	var errs []error
	for _, srv := range []*http.Server{metrics, api} {
		if srv != nil {
			errs = append(errs, srv.Close())
		}
	}
	for _, ln := range []net.Listener{s.metricsLn, s.ln} {
		if ln != nil {
			if err := ln.Close(); !errors.Is(err, net.ErrClosed) {
				errs = append(errs, err)
			}
		}
	}
	if s.hup != nil {
		signal.Stop(s.hup)
	}
	s.reloadMu.Lock()
	s.reloadsOff = true
	s.reloadMu.Unlock()
	return errors.Join(errs...)
}
