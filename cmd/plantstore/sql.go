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

func openPostgres(ctx context.Context, dsn string, opts []sqlstore.Option) (plantstore.Storage, func(), error) {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, nil, fmt.Errorf("open PostgreSQL: %w", err)
	}
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
