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

// A storageKind is a form of -db.
type storageKind int

const (
	memoryStorage storageKind = iota
	sqliteStorage
	postgresStorage
)

// parseDB tells which storage -db names, and where: a SQLite file's path
// or PostgreSQL's URL.
func parseDB(db string) (storageKind, string, error) {
	switch {
	case db == "memory":
		return memoryStorage, "", nil
	case strings.HasPrefix(db, "postgres://"), strings.HasPrefix(db, "postgresql://"):
		return postgresStorage, db, nil
	case strings.HasPrefix(db, "sqlite:"):
		return sqliteStorage, strings.TrimPrefix(db, "sqlite:"), nil
	case strings.HasSuffix(db, ".db"), strings.HasSuffix(db, ".sqlite"), strings.HasSuffix(db, ".sqlite3"):
		return sqliteStorage, db, nil
	}
	// A mistyped scheme is where a password is most likely given to a
	// form that is not recognised: it is hidden here too.
	return 0, "", fmt.Errorf("-db %q: %w", sqlstore.RedactDSN(db), errDBForm)
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
	case memoryStorage:
		return memstore.New(), func() {}, nil
	case postgresStorage:
		s, err = sqlstore.OpenPostgres(ctx, "pgx", where, append(slices.Clip(opts), sqlstore.WithLogger(logger),
			sqlstore.WithLockTimeout(o.dbLockTimeout), sqlstore.WithIdleInTransactionTimeout(o.dbIdleTxTimeout))...)
	case sqliteStorage:
		s, err = sqlstore.OpenSQLite(ctx, "sqlite", where, opts...)
	}
	if err != nil {
		return nil, nil, err
	}
	return s, func() { s.Close() }, nil
}
