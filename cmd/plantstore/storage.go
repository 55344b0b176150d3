package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
	_ "modernc.org/sqlite"             // registers the "sqlite" database/sql driver

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/memstore"
	"github.com/plantstore/plantstore/sqlstore"
)

// errDBForm is why parseDB refuses a -db value: it names no storage.
var errDBForm = errors.New(`want "memory", a SQLite file path ending in .db, .sqlite or .sqlite3 (or sqlite:PATH), or a postgres:// or postgresql:// URL`)

// parseDB tells which storage -db names, "memory", "sqlite" or
// "postgres", and where: a SQLite file's path or PostgreSQL's URL.
func parseDB(db string) (kind, where string, err error) {
	switch {
	case db == "memory":
		return "memory", "", nil
	case strings.HasPrefix(db, "postgres://"), strings.HasPrefix(db, "postgresql://"):
		return "postgres", db, nil
	case strings.HasPrefix(db, "sqlite:"):
		return "sqlite", strings.TrimPrefix(db, "sqlite:"), nil
	case strings.HasSuffix(db, ".db"), strings.HasSuffix(db, ".sqlite"), strings.HasSuffix(db, ".sqlite3"):
		return "sqlite", db, nil
	}
	// A mistyped scheme may hold a password: it is hidden here too.
	return "", "", fmt.Errorf("-db %q: %w", sqlstore.RedactDSN(db), errDBForm)
}

// openStorage opens the storage -db names, which parseFlags has checked,
// and returns it with the function that closes it. opts configure
// durable storage; -db-lock-timeout and -db-idle-tx-timeout are added for
// PostgreSQL.
func openStorage(ctx context.Context, o *options, logger *slog.Logger, opts ...sqlstore.Option) (plantstore.Storage, func(), error) {
	kind, where, err := parseDB(o.db)
	if err != nil {
		return nil, nil, err
	}
	var s *sqlstore.Store
	switch kind {
	case "memory":
		return memstore.New(), func() {}, nil
	case "postgres":
		s, err = sqlstore.OpenPostgres(ctx, "pgx", where, append(slices.Clip(opts), sqlstore.WithLogger(logger),
			sqlstore.WithLockTimeout(o.dbLockTimeout), sqlstore.WithIdleInTransactionTimeout(o.dbIdleTxTimeout))...)
	case "sqlite":
		s, err = sqlstore.OpenSQLite(ctx, "sqlite", where, opts...)
	}
	if err != nil {
		return nil, nil, err
	}
	return s, func() { s.Close() }, nil
}
