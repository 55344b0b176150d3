package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/sqlstore"
)

// openSQLite opens the SQLite file at path, which PrepareSQLiteFile checks
// first: a file that is not plantstore's, or that this process cannot
// write, is a configuration error, reported with the file's name and the
// reason, and left as it was.
func openSQLite(ctx context.Context, path string, opts []sqlstore.Option) (plantstore.Storage, func(), error) {
	if err := sqlstore.PrepareSQLiteFile(ctx, "sqlite", path); err != nil {
		return nil, nil, err
	}
	db, err := sql.Open("sqlite", sqlstore.SQLiteDSN(path))
	if err != nil {
		return nil, nil, fmt.Errorf("open SQLite file %s: %w", path, err)
	}
	s, closeStore, err := openSQL(ctx, db, sqlstore.SQLite, opts, "SQLite file "+path)
	if full := diskFull(path, err); full != nil {
		return nil, nil, full
	}
	return s, closeStore, err
}

// openPostgres opens the PostgreSQL database at dsn.
//
// Unless the URL's default_query_exec_mode says otherwise, statements run
// in pgx's exec mode, which prepares no named statement: a pooler in
// transaction mode (PgBouncer's pool_mode = transaction) hands a
// connection's transactions to different server sessions, where named
// statements a session does not have, or has already, fail every query.
//
// Every session gets lockTimeout and idleTxTimeout, when not zero, as
// lock_timeout and idle_in_transaction_session_timeout, unless the URL sets
// them: in the startup packet, which costs nothing per transaction. A
// pooler that refuses such parameters (PgBouncer does: "unsupported
// startup parameter") is found by one connection made here first; the
// settings are then made within each write transaction instead (see
// sqlstore.WithLockTimeout), at a round trip each.
func openPostgres(ctx context.Context, dsn string, lockTimeout, idleTxTimeout time.Duration, logger *slog.Logger, opts []sqlstore.Option) (plantstore.Storage, func(), error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, nil, fmt.Errorf("open PostgreSQL %s: %w", redactDSN(dsn), err)
	}
	var query url.Values
	if u, err := parseDBURL(dsn); err == nil {
		query = u.Query()
	}
	if !query.Has("default_query_exec_mode") {
		cfg.DefaultQueryExecMode = pgx.QueryExecModeExec
	}
	settings := map[string]time.Duration{"lock_timeout": lockTimeout, "idle_in_transaction_session_timeout": idleTxTimeout}
	for name, d := range settings {
		if d > 0 && !query.Has(name) {
			cfg.RuntimeParams[name] = strconv.FormatInt(max(d.Milliseconds(), 1), 10)
		}
	}
	if refusesStartupParams(ctx, cfg) {
		for name := range settings {
			delete(cfg.RuntimeParams, name)
		}
		opts = append(opts, sqlstore.WithLockTimeout(lockTimeout), sqlstore.WithIdleInTransactionTimeout(idleTxTimeout))
		logger.Info("the database connection refuses session settings at connect time, as PgBouncer does: lock_timeout and idle_in_transaction_session_timeout are set in every write transaction instead")
	}
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(32)
	db.SetMaxIdleConns(32)
	db.SetConnMaxIdleTime(5 * time.Minute)
	return openSQL(ctx, db, sqlstore.Postgres, opts, "PostgreSQL "+redactDSN(dsn))
}

// refusesStartupParams reports whether connecting with cfg fails because
// the server, a pooler, refuses a parameter of its startup packet. Any
// other failure is left for sqlstore.Open to report.
func refusesStartupParams(ctx context.Context, cfg *pgx.ConnConfig) bool {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err == nil {
		conn.Close(ctx)
		return false
	}
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "08P01" && strings.HasPrefix(pgErr.Message, "unsupported startup parameter")
}

func openSQL(ctx context.Context, db *sql.DB, d sqlstore.Dialect, opts []sqlstore.Option, what string) (plantstore.Storage, func(), error) {
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	s, err := sqlstore.Open(octx, db, d, opts...)
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("open %s: %w", what, err)
	}
	return s, func() {
		s.Close()
		db.Close()
	}, nil
}
