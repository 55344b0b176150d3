package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// openTimeout bounds how long OpenSQLite and OpenPostgres wait for the
// database at each step: PostgreSQL's first connection, then the checks
// and migrations of [Open]. A server that does not answer fails the
// start rather than hang it.
const openTimeout = 30 * time.Second

// errNotPostgresURL is OpenPostgres's error for a dsn that is not a URL
// it knows.
var errNotPostgresURL = errors.New("sqlstore: open PostgreSQL: want a postgres:// or postgresql:// URL")

// WithLogger sets where [OpenPostgres] says how it makes the session
// settings. Default [slog.Default].
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { c.logger = l }
}

// OpenSQLite opens the SQLite file at path as the cmd/plantstore binary
// does, and returns the Store over it: it checks the file with
// [PrepareSQLiteFile] (another application's file, or one this process
// cannot write, is refused and left as it was), opens it with driverName,
// the database/sql driver the caller registered for SQLite
// (modernc.org/sqlite's is "sqlite"), and [SQLiteDSN], and calls [Open]
// with opts, waiting at most 30 seconds for it. The Store owns the
// *sql.DB: [Store.Close] closes it.
//
// Errors: those of PrepareSQLiteFile and Open; a [*DiskFullError],
// wrapping [ErrDiskFull], when the file could not be opened because its
// filesystem has less than 1 MiB free, where SQLite says only "disk I/O
// error".
func OpenSQLite(ctx context.Context, driverName, path string, opts ...Option) (*Store, error) {
	if err := PrepareSQLiteFile(ctx, driverName, path); err != nil {
		return nil, err
	}
	db, err := sql.Open(driverName, SQLiteDSN(path))
	if err != nil {
		return nil, fmt.Errorf("open SQLite file %s: %w", path, err)
	}
	s, err := openOwned(ctx, db, SQLite, opts)
	if full := diskFull(path, err); full != nil {
		return nil, full
	}
	if err != nil {
		return nil, fmt.Errorf("open SQLite file %s: %w", path, err)
	}
	return s, nil
}

// The PostgreSQL settings that OpenPostgres makes for every session.
const (
	execModeParam    = "default_query_exec_mode"
	lockTimeoutParam = "lock_timeout"
	idleInTxParam    = "idle_in_transaction_session_timeout"
)

// OpenPostgres opens the PostgreSQL database at dsn, a postgres:// or
// postgresql:// URL (several hosts may be listed, as libpq's and pgx's
// URLs allow), as the cmd/plantstore binary does, and returns the Store
// over it. driverName must be pgx's database/sql driver
// (github.com/jackc/pgx/v5/stdlib registers "pgx"), which the caller
// imports: OpenPostgres writes its settings into the URL in pgx's terms.
// The Store owns the *sql.DB, a pool of at most 32 connections that
// closes those idle for 5 minutes: [Store.Close] closes it.
//
// Unless the URL's default_query_exec_mode says otherwise, statements run
// in pgx's exec mode, which prepares no named statement: a pooler in
// transaction mode (PgBouncer's pool_mode = transaction) hands a
// connection's transactions to different server sessions, where named
// statements a session does not have, or has already, fail every query.
//
// The lock and idle timeouts of opts ([WithLockTimeout],
// [WithIdleInTransactionTimeout]) are given to every session at connect
// time, as lock_timeout and idle_in_transaction_session_timeout runtime
// parameters, which costs nothing per transaction, unless the URL sets
// them itself, when the URL's stand. A pooler that refuses such
// parameters (PgBouncer answers "unsupported startup parameter", SQLSTATE
// 08P01) is found by the first connection, made here: the parameters are
// then left out, the URL's too, and the timeouts of opts are set within
// each write transaction instead, at a round trip each, which is logged
// once at info level ([WithLogger]).
//
// It waits at most 30 seconds for the first connection, and 30 seconds
// for [Open].
//
// Errors: those of Open, among them an error wrapping
// [plantstore.ErrUnavailable] when the database cannot be reached and
// [ErrStatementsLost] for named statements through a pooler; an error
// for a dsn that is not a postgres:// URL, or that the driver refuses.
// Every error names the database by [RedactDSN]'s form of dsn only, and
// is scrubbed of what RedactDSN hides.
func OpenPostgres(ctx context.Context, driverName, dsn string, opts ...Option) (*Store, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	logger := cfg.logger
	if logger == nil {
		logger = slog.Default()
	}
	failed := func(err error) error { return dsnError(dsn, err) }
	u, err := parseDBURL(dsn)
	switch {
	case err != nil && strings.Contains(dsn, "://"):
		if ue, ok := errors.AsType[*url.Error](err); ok {
			err = ue.Err // without the URL it quotes
		}
		return nil, failed(err)
	case err != nil, u.Scheme != "postgres" && u.Scheme != "postgresql":
		// Not a URL, maybe keyword=value pairs: nothing of it is shown.
		return nil, errNotPostgresURL
	}
	given := u.Query()
	var params []string
	if !given.Has(execModeParam) {
		params = append(params, execModeParam+"=exec")
	}
	timeouts := []struct {
		name string
		d    time.Duration
	}{{lockTimeoutParam, cfg.lockWait}, {idleInTxParam, cfg.idleInTx}}
	var startup []string
	for _, t := range timeouts {
		if t.d > 0 && !given.Has(t.name) {
			startup = append(startup, t.name+"="+strconv.FormatInt(max(t.d.Milliseconds(), 1), 10))
		}
	}
	db, err := openPool(driverName, withQueryParams(dsn, append(params, startup...)))
	if err != nil {
		return nil, failed(err)
	}
	// The session has the timeouts: no transaction sets them again.
	sessionOpts := append(opts[:len(opts):len(opts)], WithLockTimeout(0), WithIdleInTransactionTimeout(0))
	refused, err := firstConnection(ctx, db)
	if err != nil {
		db.Close()
		return nil, failed(err)
	}
	if refused {
		db.Close()
		db, err = openPool(driverName, withQueryParams(withoutQueryParams(dsn, lockTimeoutParam, idleInTxParam), params))
		if err != nil {
			return nil, failed(err)
		}
		sessionOpts = opts
		logger.Info("the database connection refuses session settings at connect time, as PgBouncer does: lock_timeout and idle_in_transaction_session_timeout are set in every write transaction instead")
	}
	s, err := openOwned(ctx, db, Postgres, sessionOpts)
	if err != nil {
		return nil, failed(err)
	}
	return s, nil
}

// openPool returns the pool OpenPostgres opens: at most 32 connections,
// as many kept idle, each closed after 5 minutes idle.
func openPool(driverName, dsn string) (*sql.DB, error) {
	db, err := sql.Open(driverName, dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(32)
	db.SetMaxIdleConns(32)
	db.SetConnMaxIdleTime(5 * time.Minute)
	return db, nil
}

// firstConnection connects to db, and reports whether that fails because
// the server, a pooler, refuses a parameter of its startup packet. A
// connection made stays in db's pool. It returns the error of a URL the
// driver cannot use, which no retry mends (pgx parses the URL only as it
// connects); any other failure is left for Open to report.
func firstConnection(ctx context.Context, db *sql.DB) (refused bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	err = db.PingContext(ctx)
	var pg interface{ SQLState() string }
	switch {
	case err == nil:
		return false, nil
	case errors.As(err, &pg):
		return pg.SQLState() == "08P01" && strings.Contains(err.Error(), "unsupported startup parameter"), nil
	case strings.HasPrefix(err.Error(), "cannot parse `"): // pgconn.ParseConfigError
		return false, err
	}
	return false, nil
}

// openOwned calls Open on db, which the Store then owns, bounded by
// openTimeout, and closes db when Open fails.
func openOwned(ctx context.Context, db *sql.DB, d Dialect, opts []Option) (*Store, error) {
	ctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	s, err := Open(ctx, db, d, opts...)
	if err != nil {
		db.Close()
		return nil, err
	}
	s.ownsDB = true
	return s, nil
}

// withQueryParams returns the URL dsn with the query parameters params
// ("name=value", escaped) after its own.
func withQueryParams(dsn string, params []string) string {
	if len(params) == 0 {
		return dsn
	}
	sep := "&"
	switch {
	case !strings.Contains(dsn, "?"):
		sep = "?"
	case strings.HasSuffix(dsn, "?"), strings.HasSuffix(dsn, "&"):
		sep = ""
	}
	return dsn + sep + strings.Join(params, "&")
}

// withoutQueryParams returns the URL dsn without its query parameters named
// names; the others keep their order and spelling.
func withoutQueryParams(dsn string, names ...string) string {
	base, query, ok := strings.Cut(dsn, "?")
	if !ok {
		return dsn
	}
	var kept []string
	for p := range strings.SplitSeq(query, "&") {
		name, _, _ := strings.Cut(p, "=")
		if p != "" && !slices.Contains(names, unescapeParam(name)) {
			kept = append(kept, p)
		}
	}
	if len(kept) == 0 {
		return base
	}
	return base + "?" + strings.Join(kept, "&")
}

// dsnError returns err as OpenPostgres returns it: its message names the
// database by RedactDSN's form of dsn, and holds nothing RedactDSN hides,
// whatever the driver quoted; errors.Is and errors.As still see err.
func dsnError(dsn string, err error) error {
	msg := fmt.Sprintf("open PostgreSQL %s: %v", RedactDSN(dsn), err)
	for _, secret := range dsnSecrets(dsn) {
		if secret != "" {
			msg = strings.ReplaceAll(msg, secret, "xxxxx")
		}
	}
	return &redactedError{msg: msg, err: err}
}

// A redactedError is an error whose message was scrubbed of secrets.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
