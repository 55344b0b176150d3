package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/plantstore/plantstore/httpapi"
	"github.com/plantstore/plantstore/server"
	"github.com/plantstore/plantstore/sqlstore"
	"github.com/plantstore/plantstore/webhook"
)

// options are the binary's flags, each field the flag its name spells
// (see define), and instance, the name of this process's webhook leases.
type options struct {
	addr, db, tokenFile, logFormat, metricsAddr       string
	webhookSecretFile, tlsCert, tlsKey, probe         string
	otlpEndpoint, instance, runLock                   string
	logLevel                                          slog.Level
	maxBody, webhookMaxPendingBytes                   int64
	webhookMaxPending                                 int
	conventional, metricsPublic, docs, pprof, version bool
	shutdownTimeout, dbTimeout, dbLockTimeout         time.Duration
	dbIdleTxTimeout, readyTimeout, webhookLease       time.Duration
	readHeaderTimeout, readTimeout, writeTimeout      time.Duration
	idleTimeout                                       time.Duration
	webhooks, corsOrigins                             listFlag

	fs *flag.FlagSet
	// fromEnv maps the flags set from the environment to their variables.
	fromEnv map[string]string
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

// parseFlags returns the options args and the environment give, checked.
// -h is returned as flag.ErrHelp, for run to print the usage.
func parseFlags(args []string, getenv func(string) string) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("plantstore", flag.ContinueOnError)
	o.fs = fs
	// Errors are returned and -h is printed by run, to stdout.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	o.define(fs)
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
	return o, o.check()
}

// define defines the flags of o on fs, with their defaults and usage.
func (o *options) define(fs *flag.FlagSet) {
	fs.StringVar(&o.addr, "addr", "127.0.0.1:8080", "`host:port` to listen on; port 0 picks a free one")
	fs.StringVar(&o.db, "db", "plantstore.db", "`storage`: memory, a SQLite file path (.db, .sqlite, .sqlite3, or sqlite:PATH), or a postgres:// or postgresql:// URL")
	fs.StringVar(&o.tokenFile, "token-file", "", "`file` of accepted bearer tokens, one per line (also: PLANTSTORE_TOKENS, comma-separated)")
	fs.TextVar(&o.logLevel, "log-level", slog.LevelInfo, "log `level`: debug, info, warn or error; at info and below, one access line per request")
	fs.StringVar(&o.logFormat, "log-format", "text", "log line `format`: text (key=value) or json")
	fs.Int64Var(&o.maxBody, "max-body", httpapi.DefaultMaxBodyBytes, "largest request body in `bytes`")
	fs.BoolVar(&o.conventional, "conventional-status", false, "answer failures with the HTTP status of their error code instead of 400")
	fs.DurationVar(&o.shutdownTimeout, "shutdown-timeout", server.DefaultShutdownTimeout, "how long to drain in-flight requests on SIGINT or SIGTERM")
	fs.DurationVar(&o.readHeaderTimeout, "read-header-timeout", server.DefaultTimeouts.ReadHeader, "how long a client may take to send a request's headers; 0: as long as -read-timeout allows")
	fs.DurationVar(&o.readTimeout, "read-timeout", server.DefaultTimeouts.Read, "how long a client may take to send a whole request, body included; 0: no bound")
	fs.DurationVar(&o.writeTimeout, "write-timeout", server.DefaultTimeouts.Write, "how long a client may take to read an answer; the server's write deadline is read-timeout + db-timeout + this, from the request's headers; 0: no bound")
	fs.DurationVar(&o.idleTimeout, "idle-timeout", server.DefaultTimeouts.Idle, "how long a kept-alive connection may wait for its next request; 0: no bound")
	fs.Var(&o.webhooks, "webhook", "subscriber `URL` for plant-added webhooks (repeatable)")
	fs.StringVar(&o.webhookSecretFile, "webhook-secret-file", "", "`file` holding the webhook signing secret (also: PLANTSTORE_WEBHOOK_SECRET)")
	fs.DurationVar(&o.dbTimeout, "db-timeout", sqlstore.DefaultTimeout, "how long a request waits for the database before it is answered error 503 (nothing kept) or 504 (outcome unknown)")
	fs.DurationVar(&o.dbLockTimeout, "db-lock-timeout", 2*time.Second, "PostgreSQL: how long a statement waits for a lock another transaction holds (lock_timeout) before its request is answered error 503; 0: no bound")
	fs.DurationVar(&o.dbIdleTxTimeout, "db-idle-tx-timeout", 5*time.Second, "PostgreSQL: have the server end a session idle this long inside a transaction (idle_in_transaction_session_timeout), as when this process is stopped mid-transaction, releasing its locks; 0: no bound")
	fs.DurationVar(&o.readyTimeout, "ready-timeout", httpapi.DefaultReadyTimeout, "how long GET /readyz waits for its check of the storage before it answers error 503")
	fs.Var(&o.corsOrigins, "cors-origin", "let scripts from this `origin` (https://app.example.com, or * for any) call the API from a browser (repeatable)")
	fs.StringVar(&o.metricsAddr, "metrics-addr", "", "serve /metrics on this `host:port`, without a token, instead of on -addr")
	fs.BoolVar(&o.metricsPublic, "metrics-public", false, "serve /metrics on -addr to anyone, without a token (it needs one by default)")
	fs.BoolVar(&o.docs, "docs", true, "serve the API's reference page at /docs on -addr, without a token: /openapi.json rendered by Swagger UI, from files in the binary (-docs=false: error 404)")
	fs.BoolVar(&o.pprof, "pprof", false, "serve Go's profiles (net/http/pprof) under /debug/pprof/ on -metrics-addr, which it needs; never on -addr")
	fs.StringVar(&o.tlsCert, "tls-cert", "", "PEM `file` of the certificate chain -addr serves HTTPS with (needs -tls-key); SIGHUP re-reads it")
	fs.StringVar(&o.tlsKey, "tls-key", "", "PEM `file` of the private key of -tls-cert; SIGHUP re-reads it")
	fs.BoolVar(&o.version, "version", false, "print the version and exit")
	fs.StringVar(&o.probe, "probe", "", "instead of serving, GET this `path` (/readyz, /healthz) from the server at -addr and exit 0 if it answers 200: a health check for images without curl")
	fs.DurationVar(&o.webhookLease, "webhook-lease", webhook.DefaultLease, "how long a claimed webhook delivery waits for this process before another process on the same database may send it")
	fs.IntVar(&o.webhookMaxPending, "webhook-max-pending", 0, "the most webhook `events` kept undelivered; past it the oldest are dropped (0: 10000 with -db memory, no bound with a database)")
	fs.Int64Var(&o.webhookMaxPendingBytes, "webhook-max-pending-bytes", webhook.DefaultMaxPendingBytes, "with -db memory, the most `bytes` of webhook events kept undelivered; past it the oldest are dropped")
	fs.StringVar(&o.otlpEndpoint, "otlp-endpoint", "", "export traces over OTLP/HTTP to the receiver at this `URL` (http://collector:4318; spans go to its /v1/traces); off unless this or OTEL_EXPORTER_OTLP_ENDPOINT is set")
}

// check returns a *flagError for the first option whose value the binary
// cannot use, naming the flag or variable that gave it.
func (o *options) check() error {
	if _, _, err := parseDB(o.db); err != nil {
		if v, ok := o.fromEnv["db"]; ok {
			return &flagError{Flag: "db", Name: v, Err: err}
		}
		return err
	}
	if o.logFormat != "text" && o.logFormat != "json" {
		return o.flagError("log-format", fmt.Errorf("%w, not %q", errLogFormat, o.logFormat))
	}
	if err := o.checkNumbers(); err != nil {
		return err
	}
	for _, origin := range o.corsOrigins {
		if err := httpapi.CheckOrigin(origin); err != nil {
			return o.flagError("cors-origin", err)
		}
	}
	if o.webhookSecretFile != "" && len(o.webhooks) == 0 {
		return o.flagError("webhook-secret-file", errors.New("needs -webhook: with no subscriber, nothing is signed"))
	}
	if o.metricsPublic && o.metricsAddr != "" {
		return o.flagError("metrics-public", errors.New("is for /metrics on -addr, and -metrics-addr moves it elsewhere"))
	}
	if err := o.checkPairs(); err != nil {
		return err
	}
	if o.metricsAddr != "" {
		if _, _, err := net.SplitHostPort(o.metricsAddr); err != nil {
			return o.flagError("metrics-addr", err)
		}
	}
	if o.otlpEndpoint != "" {
		if err := checkOTLPEndpoint(o.otlpEndpoint); err != nil {
			return o.flagError("otlp-endpoint", err)
		}
	}
	if o.probe != "" {
		if err := checkProbePath(o.probe); err != nil {
			return o.flagError("probe", err)
		}
	}
	return nil
}

// checkNumbers returns a *flagError for the first size, count or
// duration out of its range.
func (o *options) checkNumbers() error {
	for _, f := range []struct {
		flag     string
		n        int64
		positive bool // else not negative
	}{
		{"max-body", o.maxBody, true}, {"webhook-max-pending-bytes", o.webhookMaxPendingBytes, true},
		{"webhook-max-pending", int64(o.webhookMaxPending), false},
		{"shutdown-timeout", int64(o.shutdownTimeout), false}, {"db-lock-timeout", int64(o.dbLockTimeout), false},
		{"db-idle-tx-timeout", int64(o.dbIdleTxTimeout), false}, {"read-header-timeout", int64(o.readHeaderTimeout), false},
		{"read-timeout", int64(o.readTimeout), false}, {"write-timeout", int64(o.writeTimeout), false},
		{"idle-timeout", int64(o.idleTimeout), false}, {"db-timeout", int64(o.dbTimeout), true},
		{"ready-timeout", int64(o.readyTimeout), true}, {"webhook-lease", int64(o.webhookLease), true},
	} {
		switch {
		case f.positive && f.n <= 0:
			return o.flagError(f.flag, errNotPositive)
		case f.n < 0:
			return o.flagError(f.flag, errNegative)
		}
	}
	return nil
}

// checkPairs returns a usage error, for main to exit 2, when a flag is
// given without the one it needs: -tls-cert and -tls-key go together, and
// -pprof serves only on -metrics-addr.
func (o *options) checkPairs() error {
	switch {
	case o.tlsCert != "" && o.tlsKey == "":
		return fmt.Errorf("%w; %w", o.flagError("tls-cert", errors.New("needs -tls-key, the file of its private key")), errBadArgs)
	case o.tlsKey != "" && o.tlsCert == "":
		return fmt.Errorf("%w; %w", o.flagError("tls-key", errors.New("needs -tls-cert, the file of its certificate")), errBadArgs)
	case o.pprof && o.metricsAddr == "":
		return fmt.Errorf("%w; %w", o.flagError("pprof", errors.New("needs -metrics-addr: profiles are served there, never on -addr")), errBadArgs)
	}
	return nil
}

// A flagError is a flag, or the variable that stood for it, whose value
// the binary cannot use. Its message names what the user gave, so that
// they know what to fix.
type flagError struct {
	Flag string // the flag's name, without its dash
	Name string // how the user gave it: "-" + Flag, or the variable that set it
	// Unparsed is the variable's value when the flag could not parse it,
	// and "" when the flag took its value.
	Unparsed string
	Err      error // why: a valueRule, or the cause
}

func (e *flagError) Error() string {
	switch {
	case e.Unparsed != "":
		return fmt.Sprintf("invalid value %q in %s (the variable of -%s): %v", e.Unparsed, e.Name, e.Flag, e.Err)
	case errors.As(e.Err, new(valueRule)):
		return e.Name + " " + e.Err.Error()
	}
	return e.Name + ": " + e.Err.Error()
}

func (e *flagError) Unwrap() error { return e.Err }

// A valueRule is a rule a flag's value breaks, which reads after the flag's
// name: "-max-body must be positive".
type valueRule string

func (r valueRule) Error() string { return string(r) }

// The rules that parseFlags checks.
const (
	errNotPositive valueRule = "must be positive"
	errNegative    valueRule = "must not be negative"
	errLogFormat   valueRule = "must be text or json"
)

// timeouts returns the client deadlines of the flags, with -db-timeout as
// the longest the handler waits, part of the write deadline.
func (o *options) timeouts() server.Timeouts {
	return server.Timeouts{ReadHeader: o.readHeaderTimeout, Read: o.readTimeout,
		Write: o.writeTimeout, Idle: o.idleTimeout, Handler: o.dbTimeout}
}
