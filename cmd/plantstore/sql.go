package main

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
	_ "modernc.org/sqlite"             // registers the "sqlite" database/sql driver

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/sqlstore"
)

func openSQLite(ctx context.Context, path string, outbox bool, timeout time.Duration) (plantstore.Storage, func(), error) {
	db, err := sql.Open("sqlite", sqlstore.SQLiteDSN(path))
	if err != nil {
		return nil, nil, fmt.Errorf("open SQLite file %s: %w", path, err)
	}
	return openSQL(ctx, db, sqlstore.SQLite, outbox, timeout, "SQLite file "+path)
}

func openPostgres(ctx context.Context, dsn string, outbox bool, timeout time.Duration) (plantstore.Storage, func(), error) {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, nil, fmt.Errorf("open PostgreSQL: %w", err)
	}
	db.SetMaxOpenConns(32)
	db.SetMaxIdleConns(32)
	db.SetConnMaxIdleTime(5 * time.Minute)
	return openSQL(ctx, db, sqlstore.Postgres, outbox, timeout, "PostgreSQL "+redactDSN(dsn))
}

func openSQL(ctx context.Context, db *sql.DB, d sqlstore.Dialect, outbox bool, timeout time.Duration, what string) (plantstore.Storage, func(), error) {
	opts := []sqlstore.Option{sqlstore.WithTimeout(timeout)}
	if outbox {
		opts = append(opts, sqlstore.WithOutbox())
	}
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
