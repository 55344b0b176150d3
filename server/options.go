package server

import (
	"log/slog"
	"net/http"
	"os"
	"time"
)

// An Option configures the [Server] that [Listen] returns.
type Option func(*config)

type config struct {
	timeouts        Timeouts
	maxHeaderBytes  int
	shutdownTimeout time.Duration
	logger          *slog.Logger
	// certFile and keyFile, both set or neither, make the server serve
	// TLS.
	certFile, keyFile string
	// metricsAddr, when set, is the address of the second listener,
	// serving metricsHandler and, with pprof, the profiles.
	metricsAddr    string
	metricsHandler http.Handler
	pprof          bool
	reloaders      []reloader
	// reloadOn carries the signals that make the server reload; see
	// WithReloadOn. ownSignal is false once WithReloadOn has given it.
	reloadOn  <-chan os.Signal
	ownSignal bool
}

// WithTimeouts sets the deadlines the server gives its clients; the
// default is [DefaultTimeouts]. [Listen] refuses a negative one.
func WithTimeouts(t Timeouts) Option {
	return func(c *config) { c.timeouts = t }
}

// WithMaxHeaderBytes sets the limit on a request's line and headers that
// the handler enforces (give the handler the same n:
// httpapi.WithMaxHeaderBytes); the server reads up to 2n bytes of them,
// so that headers somewhat over the limit reach the handler and are
// answered as the handler answers them, and past that answers 431 itself.
// The default is [DefaultMaxHeaderBytes]; [Listen] refuses an n of zero
// or less.
func WithMaxHeaderBytes(n int) Option {
	return func(c *config) { c.maxHeaderBytes = n }
}

// WithShutdownTimeout sets how long [Server.Serve] drains the requests in
// flight once its context ends; the default is [DefaultShutdownTimeout].
// [Listen] refuses a d of zero or less.
func WithShutdownTimeout(d time.Duration) Option {
	return func(c *config) { c.shutdownTimeout = d }
}

// WithLogger sets where the server logs: its start of a drain, its
// reloads, a TLS key file others may read, client deadlines all off
// beyond loopback, net/http's own complaints (a panic in a handler) at
// level Warn, and TLS handshakes that failed at level Debug, at most one
// line a minute (they are counted in [Stats]). The default is
// [slog.Default].
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { c.logger = l }
}

// WithTLS makes the server serve HTTPS with the PEM certificate chain in
// certFile and its private key in keyFile: TLS 1.2 or later, HTTP/2
// offered. [Listen] reads them, each bounded to 1 MiB, and warns when
// others may read keyFile; [Server.Reload] reads them again, and a
// handshake after it gets the new certificate while connections already
// open keep theirs.
func WithTLS(certFile, keyFile string) Option {
	return func(c *config) { c.certFile, c.keyFile = certFile, keyFile }
}

// WithMetrics makes [Listen] bind a second listener, at addr, that serves
// h without the handler's authentication: for a Prometheus scraper on the
// operator's network, with h serving /metrics and answering 404 elsewhere.
// It has the same deadlines as the first, and headers are bounded to 64
// KiB. [Server.Close] and the end of [Server.Serve] close it first:
// scrapes are short, and the requests to drain are the API's.
func WithMetrics(addr string, h http.Handler) Option {
	return func(c *config) { c.metricsAddr, c.metricsHandler = addr, h }
}

// PprofPath is where [WithPprof] serves net/http/pprof's handlers on the
// metrics listener: go tool pprof http://HOST:PORT/debug/pprof/profile.
const PprofPath = "/debug/pprof/"

// WithPprof serves Go's profiles (net/http/pprof) under [PprofPath] on
// the listener of [WithMetrics], which it needs, and never on the first:
// profiles show the program's insides and cost CPU, for the operator's
// network only. A CPU profile or trace whose seconds reach the listener's
// write deadline (Timeouts Read + Handler + Write, 45 s by default) is
// answered 400 with a line saying so, as are profile requests without
// seconds when the default (30 for a CPU profile) reaches it; with no
// write deadline (Timeouts.Write zero) none is refused. (The pprof
// package's init also registers them on [http.DefaultServeMux], which the
// server does not serve.)
func WithPprof() Option {
	return func(c *config) { c.pprof = true }
}

// WithReload makes [Server.Reload] call reload, which re-reads one thing
// the handler uses (a token file, a signing secret) and reports whether
// it changed, or why it could not, in which case it must keep the old
// value in use. name names it in the log: "reload: kept the old NAME".
// When reload reports a change and attrs is not nil, the line
// "configuration reloaded" ends with the attributes attrs returns, as
// tokens=3. Reloads are called in the order given, after the certificate
// of [WithTLS], and never two at a time.
func WithReload(name string, reload func() (changed bool, err error), attrs func() []slog.Attr) Option {
	return func(c *config) { c.reloaders = append(c.reloaders, reloader{name: name, reload: reload, attrs: attrs}) }
}

// WithReloadOn makes the server reload at each value received on c while
// [Server.Serve] runs, instead of at SIGHUP: for a host that catches
// SIGHUP itself from earlier on (signal.Notify(c, syscall.SIGHUP)), so
// that one during its start does not end the process, and reloads once
// serving; or reloads at something else. A nil c turns reloading by
// signal off. Without this option, [Listen] catches SIGHUP until
// [Server.Close].
func WithReloadOn(c <-chan os.Signal) Option {
	return func(cf *config) { cf.reloadOn, cf.ownSignal = c, false }
}
