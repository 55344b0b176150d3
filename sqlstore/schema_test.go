package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
)

func version(t *testing.T, db *sql.DB) int {
	t.Helper()
	v, err := schemaVersion(context.Background(), db)
	if err != nil {
		t.Fatalf("read schema version: %v", err)
	}
	return v
}

func TestReopenKeepsSchemaAndPlants(t *testing.T) {
	t.Parallel()
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			ctx := context.Background()
			db, dsn := be.newDB(t)
			s := openStore(t, db, be.dialect)
			want := plantstore.Plant{ID: 1, Name: "kept", HasTag: true}
			if err := s.Create(ctx, want); err != nil {
				t.Fatal(err)
			}
			s.Close()
			db.Close()

			db = openDB(t, be.driver, dsn)
			s = openStore(t, db, be.dialect)
			if got := version(t, db); got != len(migrations) {
				t.Errorf("schema version after reopen = %d, want %d", got, len(migrations))
			}
			var rows int
			if err := db.QueryRow(`SELECT count(*) FROM schema_version`).Scan(&rows); err != nil || rows != 1 {
				t.Errorf("schema_version has %d rows (%v), want 1", rows, err)
			}
			got, err := s.Plant(ctx, 1)
			if err != nil {
				t.Fatalf("Plant(1) after reopen = %v", err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("plant after reopen mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMigrateFromOlderVersion(t *testing.T) {
	t.Parallel()
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			ctx := context.Background()
			db, _ := be.newDB(t)
			if err := migrate(ctx, db, be.dialect, migrations[:1]); err != nil {
				t.Fatalf("migrate to version 1: %v", err)
			}
			if got := version(t, db); got != 1 {
				t.Fatalf("schema version = %d, want 1", got)
			}
			if _, err := db.Exec(`INSERT INTO plants (id, name, tag) VALUES (7, 'old', NULL)`); err != nil {
				t.Fatal(err)
			}
			s := openStore(t, db, be.dialect, WithOutbox())
			if got := version(t, db); got != len(migrations) {
				t.Errorf("schema version after Open = %d, want %d", got, len(migrations))
			}
			got, err := s.Plant(ctx, 7)
			if err != nil {
				t.Fatalf("Plant(7) after migration = %v", err)
			}
			if diff := cmp.Diff(plantstore.Plant{ID: 7, Name: "old"}, got); diff != "" {
				t.Errorf("plant after migration mismatch (-want +got):\n%s", diff)
			}
			if err := s.Create(ctx, plantstore.Plant{ID: 8, Name: "new"}); err != nil {
				t.Fatalf("Create after migration = %v", err)
			}
			if events := allEvents(t, s); len(events) != 1 {
				t.Errorf("events after migration = %v, want one", events)
			}
		})
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	t.Parallel()
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			db, _ := be.newDB(t)
			openStore(t, db, be.dialect).Close()
			if _, err := db.Exec(`UPDATE schema_version SET version = version + 1`); err != nil {
				t.Fatal(err)
			}
			s, err := Open(context.Background(), db, be.dialect)
			if !errors.Is(err, ErrSchemaTooNew) {
				t.Errorf("Open of a newer schema = %v, %v, want ErrSchemaTooNew", s, err)
			}
			if err := migrate(context.Background(), db, be.dialect, migrations); !errors.Is(err, ErrSchemaTooNew) {
				t.Errorf("migrate of a newer schema = %v, want ErrSchemaTooNew", err)
			}
		})
	}
}

func TestConcurrentOpensMigrateOnce(t *testing.T) {
	t.Parallel()
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			// Openers of a new SQLite file race to switch it to WAL, and
			// SQLite answers the losers SQLITE_BUSY without waiting; before
			// Open retried that, about one round in seventy failed. Many
			// new files make such a failure likely to show; -short makes
			// fewer.
			rounds := 1
			if be.dialect == SQLite {
				rounds = 50
				if testing.Short() {
					rounds = 10
				}
			}
			for range rounds {
				concurrentOpens(t, be)
			}
		})
	}
}

func concurrentOpens(t *testing.T, be backend) {
	t.Helper()
	_, dsn := be.newDB(t)
	const n = 4
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		// Separate *sql.DBs, as separate processes would have.
		db := openDB(t, be.driver, dsn)
		wg.Go(func() {
			var s *Store
			s, errs[i] = Open(context.Background(), db, be.dialect)
			if s != nil {
				s.Close()
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Open %d = %v", i, err)
		}
	}
	db := openDB(t, be.driver, dsn)
	if got := version(t, db); got != len(migrations) {
		t.Errorf("schema version = %d, want %d", got, len(migrations))
	}
}

func TestOpenRefusesWeakSQLiteSettings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		params string
	}{
		{"rollback journal", "_pragma=busy_timeout(10000)&_pragma=synchronous(FULL)"},
		{"synchronous normal", "_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"},
		{"synchronous off", "_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(OFF)"},
		{"no busy timeout", "_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "plants.db")
			db := openDB(t, "sqlite", "file:"+path+"?"+tt.params)
			s, err := Open(context.Background(), db, SQLite)
			if !errors.Is(err, ErrNotDurable) {
				t.Errorf("Open with %s = %v, %v, want ErrNotDurable", tt.params, s, err)
			}
		})
	}
}

func TestSQLiteDSNEscapesPath(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "a dir?#%", "plants.db")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	db := openDB(t, "sqlite", SQLiteDSN(path))
	s := openStore(t, db, SQLite)
	if err := s.Create(context.Background(), plantstore.Plant{ID: 1}); err != nil {
		t.Fatalf("Create = %v", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("database not at %q: %v", path, err)
	}
}

// TestMigrateOutboxInFlight migrates a PostgreSQL outbox of version 5,
// holding events fanned out and events not yet, and checks that the
// fan-out goes on where it was: the events not fanned out are fanned out
// once, and the others not again.
func TestMigrateOutboxInFlight(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := postgresBackend.newDB(t)
	if err := migrate(ctx, db, Postgres, migrations[:5]); err != nil {
		t.Fatalf("migrate to version 5: %v", err)
	}
	for _, stmt := range []string{
		`INSERT INTO events (plant_id, name, created_us) VALUES (1, 'a', 0), (2, 'b', 0), (3, 'c', 0), (4, 'd', 0)`,
		// Events 1 and 2 were fanned out; 1 has been delivered to b.
		`INSERT INTO webhook_deliveries (subscriber, seq) VALUES ('a', 1), ('a', 2), ('b', 2)`,
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	s := openStore(t, db, Postgres, WithOutbox())
	if n, err := s.FanOut(ctx, []string{"a", "b"}, 10); err != nil || n != 2 {
		t.Fatalf("FanOut() after the migration = %d, %v; want 2: events 3 and 4", n, err)
	}
	var rows []string
	r, err := db.Query(`SELECT subscriber || '/' || seq FROM webhook_deliveries ORDER BY seq, subscriber`)
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
		var v string
		if err := r.Scan(&v); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, v)
	}
	r.Close()
	want := []string{"a/1", "a/2", "b/2", "a/3", "b/3", "a/4", "b/4"}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("deliveries after the migration mismatch (-want +got):\n%s", diff)
	}
}
