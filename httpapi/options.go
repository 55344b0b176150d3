package httpapi

import (
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/plantstore/plantstore/internal/wire"
)

// DefaultMaxBodyBytes is the largest request body the handler reads unless
// [WithMaxBodyBytes] says otherwise.
const DefaultMaxBodyBytes = 1 << 20

// DefaultMaxPageBytes is the most bytes a page of GET /plants holds
// unless [WithMaxPageBytes] says otherwise.
const DefaultMaxPageBytes = 4 << 20

// An Option configures the handler returned by [New].
type Option func(*config)

type config struct {
	auth         Authenticator
	noAuth       bool
	conventional bool
	maxBody      int64
	maxPage      int
	maxHeader    int
	// headerTooLarge is the error for headers over maxHeader.
	headerTooLarge *apiError
	logger         *slog.Logger
	accessLog      *accessLog
	cors           *corsPolicy
	baseURL        string
	hooks          Hooks
	// metricsHandler serves GET /metrics, behind the token unless
	// publicMetrics; see WithMetricsHandler.
	metricsHandler http.Handler
	publicMetrics  bool
	// docsHandler serves GET /docs and /docs/NAME, without the token; see
	// WithDocs.
	docsHandler http.Handler
	// readyTimeout and readyInterval bound GET /readyz; see ready.go.
	readyTimeout  time.Duration
	readyInterval time.Duration
	// prefix begins every route's path; see WithPrefix.
	prefix string
}

// WithAuthenticator makes the handler serve the requests a accepts, and
// answer the others with the error a's verdict calls for: 401, 403 or 503
// (see [Authenticator]).
func WithAuthenticator(a Authenticator) Option {
	return func(c *config) { c.auth = a }
}

// WithTokens makes the handler accept exactly the given bearer tokens,
// compared in constant time. It is WithAuthenticator([Tokens](tokens...)),
// and panics as Tokens does on a token that no request can send.
func WithTokens(tokens ...string) Option {
	return WithAuthenticator(Tokens(tokens...))
}

// InsecureWithoutAuthentication makes the handler serve every request
// without checking credentials. Use it only behind a proxy or host server
// that authenticates every request before it reaches the handler.
func InsecureWithoutAuthentication() Option {
	return func(c *config) { c.noAuth = true }
}

// WithConventionalStatus makes the handler answer each failure with the
// HTTP status named by its error code (401, 404, 409, …) instead of the
// contract's 400. The body is the same Error either way.
func WithConventionalStatus() Option {
	return func(c *config) { c.conventional = true }
}

// WithMaxBodyBytes sets the largest request body the handler reads; a
// larger one is refused with error code 413. An n of zero or less leaves
// the default, [DefaultMaxBodyBytes].
func WithMaxBodyBytes(n int64) Option {
	return func(c *config) {
		if n > 0 {
			c.maxBody = n
		}
	}
}

// WithMaxPageBytes sets the most bytes of JSON a page of GET /plants
// holds. A page ends early, with its Link to the next, once the next plant
// would take it past n bytes; it still holds one plant when a single plant
// is larger than n, so that paging always moves on. An n of zero or less
// leaves the default, [DefaultMaxPageBytes].
func WithMaxPageBytes(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.maxPage = n
		}
	}
}

// WithMaxHeaderBytes makes the handler refuse, with error code 431, a
// request whose request line and headers take more than n bytes, counted
// as they were sent: each header line as name, colon, space, value and
// CRLF. It lets the Error body answer headers that an [http.Server]
// with a larger MaxHeaderBytes has read; headers past the server's own
// limit are refused by net/http before the handler runs. An n of zero or
// less, the default, checks nothing.
func WithMaxHeaderBytes(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.maxHeader = n
			c.headerTooLarge = &apiError{code: wire.CodeHeadersTooLarge,
				msg: "request headers exceed the limit of " + strconv.Itoa(n) + " bytes"}
		}
	}
}

// WithLogger sets where the handler logs internal errors, recovered
// panics and storage failures; the last are summarised while they recur
// (see the package documentation). The default is [slog.Default]. A line
// logged while serving a request carries the request's id as request_id
// (see [RequestID]), and the request's method and path as sent, but
// quoted as a Go string literal when they hold a character that does not
// print, so that no handler is handed a control or bidirectional
// character a client chose. [NewLogHandler] makes a handler in the form
// of the access lines ([WithAccessLog]).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { c.logger = l }
}

// WithMetricsHandler makes the handler serve GET and HEAD /metrics with h
// (for example promhttp.HandlerFor of a Prometheus registry): through the
// handler's request ids, access log and hooks, and behind its
// authentication, as the API is, unless [WithPublicMetrics] is given too.
// Other methods are answered error 405. Without it, /metrics is error 404.
// A metrics scraper that cannot send a token is better served on a
// listener of its own, which only the scraper can reach.
func WithMetricsHandler(h http.Handler) Option {
	return func(c *config) { c.metricsHandler = h }
}

// WithPublicMetrics lets anyone who can reach the handler read /metrics
// without a token (see [WithMetricsHandler]). The metrics say how busy the
// server is, which routes and error codes it answers, and, with webhooks,
// how far behind delivery is; give them only where that is no one's
// business to learn.
func WithPublicMetrics() Option {
	return func(c *config) { c.publicMetrics = true }
}

// WithDocs makes the handler serve GET and HEAD /docs and /docs/NAME with
// h, without a token, as it serves /openapi.json: h is meant to be the
// reference page of package apidocs, apidocs.Handler(), which renders the
// document at /openapi.json beside it. The requests go through the
// handler's request ids, access log and hooks, and what h answers is its
// own, but for a 404 (apidocs's answer to a name it does not serve), which
// the handler answers with its Error 404 instead; other methods, and paths
// below /docs/ of more than one segment, are answered with the Error too,
// as every path the handler does not serve. Without it, /docs is error
// 404, and the binary links none of the page's files.
func WithDocs(h http.Handler) Option {
	return func(c *config) { c.docsHandler = h }
}
