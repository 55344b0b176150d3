package sqlstore

import (
	"context"
	"database/sql"
	"errors"
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
	eachBackend(t, func(t *testing.T, be backend) {
		db, dsn := be.newDB(t)
		s := openStore(t, db, be.dialect)
		want := plantstore.Plant{ID: 1, Name: "kept", HasTag: true}
		if err := s.Create(context.Background(), want); err != nil {
			t.Fatal(err)
		}
		s.Close()
		db.Close()

		db = openDB(t, be.driver, dsn)
		s = openStore(t, db, be.dialect)
		if got := version(t, db); got != len(migrations) {
			t.Errorf("schema version after reopen = %d, want %d", got, len(migrations))
		}
		if rows := queryInt(t, db, `SELECT count(*) FROM schema_version`); rows != 1 {
			t.Errorf("schema_version has %d rows, want 1", rows)
		}
		wantPlant(t, s, want)
	})
}

func TestMigrateFromOlderVersion(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, be backend) {
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
		wantPlant(t, s, plantstore.Plant{ID: 7, Name: "old"})
		mustCreate(t, s, "new", 8)
		if events := allEvents(t, s); len(events) != 1 {
			t.Errorf("events after migration = %v, want one", events)
		}
	})
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, be backend) {
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

func TestConcurrentOpensMigrateOnce(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, be backend) {
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
	for name, params := range map[string]string{
		"rollback journal":   "_pragma=busy_timeout(10000)&_pragma=synchronous(FULL)",
		"synchronous normal": "_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)",
		"synchronous off":    "_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(OFF)",
		"no busy timeout":    "_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)",
	} {
		db := openDB(t, "sqlite", "file:"+filepath.Join(t.TempDir(), "plants.db")+"?"+params)
		if s, err := Open(context.Background(), db, SQLite); !errors.Is(err, ErrNotDurable) {
			t.Errorf("Open with %s (%s) = %v, %v, want ErrNotDurable", name, params, s, err)
		}
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
	rows, err := column(ctx, db, `SELECT subscriber || '/' || seq FROM webhook_deliveries ORDER BY seq, subscriber`)
	want := []string{"a/1", "a/2", "b/2", "a/3", "b/3", "a/4", "b/4"}
	if diff := cmp.Diff(want, rows); err != nil || diff != "" {
		t.Errorf("deliveries after the migration (%v) mismatch (-want +got):\n%s", err, diff)
	}
}
