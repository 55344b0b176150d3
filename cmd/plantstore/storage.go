package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/plantstore/plantstore"
)

const dbForms = `want "memory", a SQLite file path ending in .db, .sqlite or .sqlite3 (or sqlite:PATH), or a postgres:// or postgresql:// URL`

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
	return 0, "", fmt.Errorf("-db %q: %s", db, dbForms)
}

// openStorage opens the storage -db names, which parseFlags has checked.
// outbox asks durable storage to record plant-added events with each
// plant, for webhooks; timeout bounds each call to a database.
func openStorage(ctx context.Context, db string, outbox bool, timeout time.Duration) (plantstore.Storage, func(), error) {
	kind, where, err := parseDB(db)
	if err != nil {
		return nil, nil, err
	}
	switch kind {
	case postgresStorage:
		return openPostgres(ctx, where, outbox, timeout)
	case sqliteStorage:
		return openSQLite(ctx, where, outbox, timeout)
	}
	return plantstore.NewMemoryStorage(), func() {}, nil
}
