package main

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
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
	return openSQL(ctx, db, sqlstore.SQLite, opts, "SQLite file "+path)
}

// openPostgres opens the PostgreSQL database at dsn. Unless the URL's
// default_query_exec_mode says otherwise, statements run in pgx's exec
// mode, which prepares no named statement: a pooler in transaction mode
// (PgBouncer's pool_mode = transaction) hands a connection's transactions
// to different server sessions, where named statements a session does not
// have, or has already, fail every query.
func openPostgres(ctx context.Context, dsn string, opts []sqlstore.Option) (plantstore.Storage, func(), error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, nil, fmt.Errorf("open PostgreSQL %s: %w", redactDSN(dsn), err)
	}
	if u, err := parseDBURL(dsn); err == nil && !u.Query().Has("default_query_exec_mode") {
		cfg.DefaultQueryExecMode = pgx.QueryExecModeExec
	}
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(32)
	db.SetMaxIdleConns(32)
	db.SetConnMaxIdleTime(5 * time.Minute)
	return openSQL(ctx, db, sqlstore.Postgres, opts, "PostgreSQL "+redactDSN(dsn))
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
