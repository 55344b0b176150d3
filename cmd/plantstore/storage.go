package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/plantstore/plantstore"
)

const dbForms = `want "memory", a SQLite file path ending in .db, .sqlite or .sqlite3 (or sqlite:PATH), or a postgres:// or postgresql:// URL`

// openStorage opens the storage -db names. outbox asks durable storage to
// record plant-added events with each plant, for webhooks.
func openStorage(ctx context.Context, db string, outbox bool, logger *slog.Logger) (plantstore.Storage, func(), error) {
	switch {
	case db == "memory":
		return plantstore.NewMemoryStorage(), func() {}, nil
	case strings.HasPrefix(db, "postgres://"), strings.HasPrefix(db, "postgresql://"):
		return openPostgres(ctx, db, outbox, logger)
	case strings.HasPrefix(db, "sqlite:"):
		return openSQLite(ctx, strings.TrimPrefix(db, "sqlite:"), outbox, logger)
	case strings.HasSuffix(db, ".db"), strings.HasSuffix(db, ".sqlite"), strings.HasSuffix(db, ".sqlite3"):
		return openSQLite(ctx, db, outbox, logger)
	}
	return nil, nil, fmt.Errorf("-db %q: %s", db, dbForms)
}
