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

// options are the binary's flags.
type options struct {
	addr            string
	db              string
	tokenFile       string
	logLevel        slog.Level
	logFormat       string
	maxBody         int64
	conventional    bool
	shutdownTimeout time.Duration
	// readHeaderTimeout and readTimeout bound how long a client may take
	// to send a request's headers, and its whole request, so that slow
	// clients cannot hold connections forever.
	readHeaderTimeout time.Duration
	readTimeout       time.Duration
	// writeTimeout is how long a client may take to read an answer; see
	// serverWriteTimeout.
	writeTimeout  time.Duration
	webhooks      listFlag
	webhookSecret string
	// dbTimeout bounds how long a request waits for the database.
	dbTimeout time.Duration
	// dbLockTimeout and dbIdleTxTimeout are PostgreSQL's lock_timeout and
	// idle_in_transaction_session_timeout for every session.
	dbLockTimeout   time.Duration
	dbIdleTxTimeout time.Duration
	// readyTimeout bounds how long GET /readyz waits for its check.
	readyTimeout time.Duration
	corsOrigins  listFlag
	// metricsAddr, when set, moves /metrics off the main listener.
	metricsAddr string
	version     bool
	// probe, when set, makes the binary ask a running server for this
	// path instead of serving (see probe).
	probe string

	fs *flag.FlagSet
	// fromEnv maps the flags set from the environment to their variables.
	fromEnv map[string]string
	// webhookLease is how long a claimed webhook delivery stays with this
	// process before another process on the same database may take it.
	webhookLease time.Duration
	// webhookMaxPending bounds the outbox, in events: 0 is the storage's
	// default, 10,000 in memory and no bound in a database.
	// webhookMaxPendingBytes bounds the in-memory outbox of memory storage.
	webhookMaxPending      int
	webhookMaxPendingBytes int64
}

// name returns how the user gave flag f: "-f", or the variable that set
// it, so that an error about its value points at what to fix.
func (o *options) name(f string) string {
	if v, ok := o.fromEnv[f]; ok {
		return v
	}
	return "-" + f
}

// flagError returns a *flagError for flag f, named as the user gave it.
func (o *options) flagError(f string, err error) error {
	return &flagError{Flag: f, Name: o.name(f), Err: err}
}

// errBadArgs marks a command line that does not parse: main exits 2 for
// it, as the flag package's own programs do.
var errBadArgs = errors.New("see plantstore -h")

func parseFlags(args []string, getenv func(string) string) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("plantstore", flag.ContinueOnError)
	o.fs = fs
	// Errors are returned and -h is printed by run, to stdout.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.StringVar(&o.addr, "addr", "127.0.0.1:8080", "`host:port` to listen on; port 0 picks a free one")
	fs.StringVar(&o.db, "db", "plantstore.db", "`storage`: memory, a SQLite file path (.db, .sqlite, .sqlite3, or sqlite:PATH), or a postgres:// or postgresql:// URL")
	fs.StringVar(&o.tokenFile, "token-file", "", "`file` of accepted bearer tokens, one per line (also: PLANTSTORE_TOKENS, comma-separated)")
	fs.TextVar(&o.logLevel, "log-level", slog.LevelInfo, "log `level`: debug, info, warn or error; at info and below, one access line per request")
	fs.StringVar(&o.logFormat, "log-format", "text", "log line `format`: text (key=value) or json")
	fs.Int64Var(&o.maxBody, "max-body", httpapi.DefaultMaxBodyBytes, "largest request body in `bytes`")
	fs.BoolVar(&o.conventional, "conventional-status", false, "answer failures with the HTTP status of their error code instead of 400")
	fs.DurationVar(&o.shutdownTimeout, "shutdown-timeout", 10*time.Second, "how long to drain in-flight requests on SIGINT or SIGTERM")
	fs.DurationVar(&o.readHeaderTimeout, "read-header-timeout", 10*time.Second, "how long a client may take to send a request's headers")
	fs.DurationVar(&o.readTimeout, "read-timeout", 10*time.Second, "how long a client may take to send a whole request, body included")
	fs.DurationVar(&o.writeTimeout, "write-timeout", 30*time.Second, "how long a client may take to read an answer before the server drops the connection (the server's write deadline is read-timeout + db-timeout + this, counted from the request's headers)")
	fs.Var(&o.webhooks, "webhook", "subscriber `URL` for plant-added webhooks (repeatable)")
	fs.StringVar(&o.webhookSecret, "webhook-secret-file", "", "`file` holding the webhook signing secret (also: PLANTSTORE_WEBHOOK_SECRET)")
	fs.DurationVar(&o.dbTimeout, "db-timeout", sqlstore.DefaultTimeout, "how long a request waits for the database before it is answered error 503 (nothing kept) or 504 (outcome unknown)")
	fs.DurationVar(&o.dbLockTimeout, "db-lock-timeout", 2*time.Second, "PostgreSQL: how long a statement waits for a lock another transaction holds (lock_timeout) before its request is answered error 503; 0: no bound")
	fs.DurationVar(&o.dbIdleTxTimeout, "db-idle-tx-timeout", 5*time.Second, "PostgreSQL: have the server end a session idle this long inside a transaction (idle_in_transaction_session_timeout), as when this process is stopped mid-transaction, releasing its locks; 0: no bound")
	fs.DurationVar(&o.readyTimeout, "ready-timeout", httpapi.DefaultReadyTimeout, "how long GET /readyz waits for its check of the storage before it answers error 503")
	fs.Var(&o.corsOrigins, "cors-origin", "let scripts from this `origin` (https://app.example.com, or * for any) call the API from a browser (repeatable)")
	fs.StringVar(&o.metricsAddr, "metrics-addr", "", "serve /metrics on this `host:port` instead of on -addr")
	fs.BoolVar(&o.version, "version", false, "print the version and exit")
	fs.StringVar(&o.probe, "probe", "", "instead of serving, GET this `path` (/readyz, /healthz) from the server at -addr and exit 0 if it answers 200: a health check for images without curl")
	fs.DurationVar(&o.webhookLease, "webhook-lease", webhook.DefaultLease, "how long a claimed webhook delivery waits for this process before another process on the same database may send it")
	fs.IntVar(&o.webhookMaxPending, "webhook-max-pending", 0, "the most webhook `events` kept undelivered; past it the oldest are dropped (0: 10000 with -db memory, no bound with a database)")
	fs.Int64Var(&o.webhookMaxPendingBytes, "webhook-max-pending-bytes", webhook.DefaultMaxPendingBytes, "with -db memory, the most `bytes` of webhook events kept undelivered; past it the oldest are dropped")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, err
		}
		return o, fmt.Errorf("%w; %w", err, errBadArgs)
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %q; %w", fs.Args(), errBadArgs)
	}
	if o.version {
		return o, nil
	}
	var err error
	if o.fromEnv, err = applyEnv(fs, getenv); err != nil {
		return o, err
	}
	if _, _, err := parseDB(o.db); err != nil {
		if v, ok := o.fromEnv["db"]; ok {
			return o, &flagError{Flag: "db", Name: v, Err: err}
		}
		return o, err
	}
	if o.logFormat != "text" && o.logFormat != "json" {
		return o, o.flagError("log-format", fmt.Errorf("%w, not %q", errLogFormat, o.logFormat))
	}
	for _, f := range []struct {
		flag string
		n    int64
	}{{"max-body", o.maxBody}, {"webhook-max-pending-bytes", o.webhookMaxPendingBytes}} {
		if f.n <= 0 {
			return o, o.flagError(f.flag, errNotPositive)
		}
	}
	if o.webhookMaxPending < 0 {
		return o, o.flagError("webhook-max-pending", errNegative)
	}
	for _, f := range []struct {
		flag string
		d    time.Duration
	}{{"shutdown-timeout", o.shutdownTimeout}, {"db-lock-timeout", o.dbLockTimeout}, {"db-idle-tx-timeout", o.dbIdleTxTimeout}} {
		if f.d < 0 {
			return o, o.flagError(f.flag, errNegative)
		}
	}
	for _, t := range []struct {
		flag string
		d    time.Duration
	}{{"read-header-timeout", o.readHeaderTimeout}, {"read-timeout", o.readTimeout}, {"write-timeout", o.writeTimeout}, {"db-timeout", o.dbTimeout}, {"ready-timeout", o.readyTimeout}, {"webhook-lease", o.webhookLease}} {
		if t.d <= 0 {
			return o, o.flagError(t.flag, errNotPositive)
		}
	}
	for _, origin := range o.corsOrigins {
		if err := checkOrigin(origin); err != nil {
			return o, o.flagError("cors-origin", err)
		}
	}
	if o.metricsAddr != "" {
		if _, _, err := net.SplitHostPort(o.metricsAddr); err != nil {
			return o, o.flagError("metrics-addr", err)
		}
	}
	if o.probe != "" {
		if err := checkProbePath(o.probe); err != nil {
			return o, o.flagError("probe", err)
		}
	}
	return o, nil
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
// in-flight requests and returns nil.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) (err error) {
	if isCommand(args) {
		return commands[args[0]](ctx, args[1:], stdout, stderr)
	}
	o, err := parseFlags(args, getenv)
	if errors.Is(err, flag.ErrHelp) {
		printUsage(stdout, o.fs)
		return nil
	}
	if err != nil {
		return err
	}
	if o.version {
		fmt.Fprintln(stdout, version())
		return nil
	}
	if o.probe != "" {
		return probe(ctx, o, stdout)
	}

	logs := newLogWriter(stderr)
	logger := newLogger(o, logs)
	logs.onDrop(func(n int64) {
		logger.Warn("log lines dropped: the log output did not take them in time", "dropped", n)
	})
	// Whatever way run returns, what it logged reaches stderr, and so does
	// the error that ends it, as a log line a log collector can parse.
	defer func() {
		if err != nil {
			logger.Error("plantstore failed", "err", err)
			err = loggedError{err}
		}
		logs.Close()
	}()

	secret, err := webhookSecret(o, getenv, logger)
	if err != nil {
		return err
	}
	tokens, err := loadTokens(o.tokenFile, getenv, logger)
	if err != nil {
		return err
	}

	reg := newRegistry()
	reg.MustRegister(logs.droppedCounter())
	storeHooks, err := promstats.Storage(reg)
	if err != nil {
		return err
	}
	httpHooks, err := promstats.HTTP(reg)
	if err != nil {
		return err
	}
	sopts := []sqlstore.Option{sqlstore.WithTimeout(o.dbTimeout), sqlstore.WithHooks(storeHooks)}
	if len(o.webhooks) > 0 {
		sopts = append(sopts, sqlstore.WithOutbox(), sqlstore.WithOutboxMaxPending(o.webhookMaxPending))
	}
	storage, closeStorage, err := openStorage(ctx, o, logger, sopts...)
	if err != nil {
		return err
	}
	defer closeStorage()

	psOpts, stopWebhooks, err := startWebhooks(ctx, o, secret, storage, logger, reg)
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

	if logger.Enabled(ctx, slog.LevelInfo) {
		access := newAccessLog(logs, o.logFormat == "json", logger.Handler())
		metrics := httpHooks.Served
		httpHooks.Served = func(s httpapi.Served) {
			metrics(s)
			access.served(s)
		}
	}
	hopts := []httpapi.Option{
		httpapi.WithTokens(tokens...),
		httpapi.WithLogger(logger),
		httpapi.WithMaxBodyBytes(o.maxBody),
		httpapi.WithHooks(httpHooks),
		httpapi.WithMaxHeaderBytes(maxHeaderBytes),
		httpapi.WithReadyTimeout(o.readyTimeout),
	}
	if o.conventional {
		hopts = append(hopts, httpapi.WithConventionalStatus())
	}
	if len(o.corsOrigins) > 0 {
		hopts = append(hopts, httpapi.WithCORS(o.corsOrigins...))
	}
	handler := httpapi.New(ps, hopts...)
	if o.metricsAddr == "" {
		handler = withMetricsPath(handler, metricsHandler(reg))
	}
	// With the two read timeouts equal, as by default, net/http sets one
	// read deadline per request instead of two.
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: o.readHeaderTimeout,
		ReadTimeout:       o.readTimeout,
		WriteTimeout:      o.serverWriteTimeout(),
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    serverHeaderBytes,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}

	serveErr := make(chan error, 2)
	var metricsSrv *http.Server
	if o.metricsAddr != "" {
		mln, err := net.Listen("tcp", o.metricsAddr)
		if err != nil {
			return fmt.Errorf("-metrics-addr: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle(metricsPath, metricsHandler(reg))
		metricsSrv = &http.Server{
			Handler:           mux,
			ReadHeaderTimeout: o.readHeaderTimeout,
			ReadTimeout:       o.readTimeout,
			WriteTimeout:      o.serverWriteTimeout(),
			IdleTimeout:       120 * time.Second,
			MaxHeaderBytes:    64 << 10,
			ErrorLog:          srv.ErrorLog,
		}
		fmt.Fprintf(stdout, "serving metrics on http://%s%s\n", mln.Addr(), metricsPath)
		go func() { serveErr <- metricsSrv.Serve(mln) }()
	}

	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		if metricsSrv != nil {
			metricsSrv.Close()
		}
		return err
	}
	fmt.Fprintf(stdout, "listening on http://%s\n", ln.Addr())
	logger.Info("plantstore started", "addr", ln.Addr().String(), "db", redactDSN(o.db))

	go func() { serveErr <- srv.Serve(ln) }()
	select {
	case err := <-serveErr:
		srv.Close()
		if metricsSrv != nil {
			metricsSrv.Close()
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

// maxHeaderBytes is the most bytes of request line and headers the API
// accepts; the handler answers a request over it with the Error for 431.
// net/http reads headers up to serverHeaderBytes (and 4 KiB more), so that
// headers somewhat over the limit still reach the handler; past that,
// net/http answers 431 itself, as text/plain, without reading the rest.
const (
	maxHeaderBytes    = 64 << 10
	serverHeaderBytes = 2 * maxHeaderBytes
)

// redactDSN hides the secrets of a database URL before it is logged: the
// password of its user part, and the value of every query parameter that
// secretParam names. A URL may list several hosts
// (postgres://h1:5432,h2:5433/db), as libpq's and pgx's do. What is not a
// URL is returned as it is: no other -db form holds a password. The other
// parameters keep their order and their spelling.
func redactDSN(db string) string {
	u, err := parseDBURL(db)
	if err != nil || u.Scheme == "" {
		if strings.Contains(db, "://") {
			return "(a database URL that does not parse)"
		}
		return db
	}
	if u.RawQuery != "" {
		params := strings.Split(u.RawQuery, "&")
		for i, p := range params {
			name, _, hasValue := strings.Cut(p, "=")
			if n, err := url.QueryUnescape(name); err == nil {
				name = n
			}
			if hasValue && secretParam(name) {
				params[i] = p[:strings.IndexByte(p, '=')] + "=xxxxx"
			}
		}
		u.RawQuery = strings.Join(params, "&")
	}
	return u.Redacted()
}

// secretParam reports whether a database URL's query parameter may hold a
// secret: its name, in any case, contains "pass", "secret", "token" or
// "key". That covers libpq's and pgx's password, sslpassword and passfile,
// and names such as api_key or auth_token that a driver or proxy may add.
// It also hides sslkey and passfile, which hold paths rather than
// secrets: a rule by name that errs on the side of hiding is easier to
// trust than a list of exceptions.
func secretParam(name string) bool {
	name = strings.ToLower(name)
	for _, s := range []string{"pass", "secret", "token", "key"} {
		if strings.Contains(name, s) {
			return true
		}
	}
	return false
}

// parseDBURL parses a URL whose host part may be a comma-separated list of
// host[:port], which net/url refuses: it parses the URL with one stand-in
// host, checks each host on its own, and puts the list back.
func parseDBURL(s string) (*url.URL, error) {
	_, rest, ok := strings.Cut(s, "://")
	if !ok {
		return url.Parse(s)
	}
	authority := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority = rest[:i]
	}
	hosts := authority[strings.LastIndex(authority, "@")+1:]
	if !strings.Contains(hosts, ",") {
		return url.Parse(s)
	}
	for h := range strings.SplitSeq(hosts, ",") {
		if _, err := url.Parse("postgres://" + h); err != nil || h == "" {
			return nil, fmt.Errorf("host %q in a database URL: %v", h, err)
		}
	}
	start := len(s) - len(rest) + len(authority) - len(hosts)
	u, err := url.Parse(s[:start] + "multi.host.invalid" + s[start+len(hosts):])
	if err != nil {
		return nil, err
	}
	u.Host = hosts
	return u, nil
}

// serverWriteTimeout is the http.Server's WriteTimeout. net/http counts it
// from the end of a request's headers, so it also runs while the body
// arrives (at most -read-timeout) and while the handler waits for the
// database (at most -db-timeout); the sum leaves the client -write-timeout
// to read the answer, so that a create the database kept is never cut off
// before its answer could be written.
func (o *options) serverWriteTimeout() time.Duration {
	return o.readTimeout + o.dbTimeout + o.writeTimeout
}
